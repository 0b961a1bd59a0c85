#!/usr/bin/env python3
"""hpclz-job-storage prolog|epilog|renew CONFIG: a Slurm job's SAS per blob container and its Key Vault secrets.

Run by slurmd as root from the Prolog and Epilog (prolog.d/epilog.d, hpclz.render.job_storage). The prolog asks the
node's instance metadata service, as root (the only user CycleCloud's rule lets reach it), for the compute identity's
token for Azure Storage (resource https://storage.azure.com/; learn.microsoft.com/entra/identity/
managed-identities-azure-resources/how-to-use-vm-token), gets a user delegation key with it
(learn.microsoft.com/rest/api/storageservices/get-user-delegation-key) and signs with that key one SAS per container
(learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas): the job's user may then do in that container
what the SAS's permissions allow, and what the compute identity's role allows, no more, until the SAS expires. The files
go to <jobs>/<SLURM_JOB_ID>/, the job user's own (0700, files 0600): <container>.url and <container>.sas. The prolog
also records, root's alone beside the key (<key folder>/jobs/<job>.json), what renew needs: the job's user and group,
its end and the SAS's expiry. Where the config names secrets, the prolog also reads each from Key Vault with the
compute identity's token for Key Vault (resource https://vault.azure.net) and writes its value, exactly, to
<jobs>/<SLURM_JOB_ID>/secrets/<name> (the job user's, folder 0700, files 0600, each written beside and renamed into
place): a secret it cannot read is logged by name and left out, and the job runs. The epilog removes both. Run as
root by hpclz-job-storage-renew.timer on each execute node, renew signs a fresh SAS for each job still on the node
whose SAS expires soon. Nothing here ever fails a job: a failure is logged (syslog, and slurmd's log through stderr)
and leaves no token. CONFIG (JSON): identity (a resource ID relative to the subscription), containers
([{name, permissions}]) and account where there are any, jobs (the folder), key_cache (the user delegation key, root's
only), vault_url and secrets ([name]) where jobs get secrets. No secret's value is ever logged or printed: a failure
names the secret and the error's type and HTTP status, never its text.
"""

import base64
import datetime
import hashlib
import hmac
import json
import os
import shutil
import sys
import syslog
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

# HPCLZ_IMDS_URL and HPCLZ_BLOB_URL point the program at local stand-ins in tests, as hpclz-locker-get's do.
IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
BLOB_URL = os.environ.get("HPCLZ_BLOB_URL", "https://{account}.blob.core.windows.net")
# The service version of the key request and of the SAS (sv). The string to sign below is the one the Create User
# Delegation SAS page gives for version 2025-07-05 and later (learn.microsoft.com/rest/api/storageservices/
# create-user-delegation-sas, "Version 2025-07-05 and later"), the layout azure-storage-blob 12.31.1 signs with this
# same version (azure/storage/blob/_shared_access_signature.py, add_resource_signature); tests/render/
# test_job_storage.py proves the token byte-identical to that SDK's generate_container_sas for the same inputs.
VERSION = "2026-10-06"
# A SAS lasts until the job's end plus GRACE. slurmd hands the Prolog the job's end as a UNIX timestamp,
# SLURM_JOB_END_TIME, since Slurm 23.02 (SchedMD/slurm commit 23c4516b7e "Add SLURM_JOB_{START,END}_TIME to
# Prolog/Epilog[Slurmctld]", first in slurm-23-02-0-0rc1; at slurm-25-11-5-1 src/plugins/prep/script/
# prep_script_slurmd.c l.317-319 `setenvf(&env, "SLURM_JOB_END_TIME", "%lu", cred_arg->job_end_time)` when it is not
# 0, doc/html/prolog_epilog.shtml l.501-502 "The UNIX timestamp for a job's end time"). A job without a time limit
# ends, for slurmctld, a year after its start (src/slurmctld/job_mgr.c at that tag, job_end_time_reset, l.19160-19162):
# the key's expiry caps it then. Both seen under slurmd 24.11.5 (tests/slurm/test_job_storage_end_time.py).
# Slurm 22.05 gives no end (slurm.conf(5) 22.05, "Prolog and Epilog Scripts": SLURM_JOB_ID, SLURM_JOB_UID, ..., no
# time limit or end), and asking slurmctld from a prolog is discouraged (slurm.schedmd.com/prolog_epilog.html): there
# the job's nominal end is LIFETIME after its prolog, and renew carries it on past that in OVERTIME windows.
LIFETIME = datetime.timedelta(hours=24)
# Past the job's end: slurmd signals the job at its time limit and kills it KillWait later (30 s by default,
# slurm.conf(5), KillWait), then runs the Epilog, which removes the token. A quarter of an hour more lets a checkpoint
# upload that a job began just before its end finish, and a token copied out of the job dies soon after.
GRACE = datetime.timedelta(minutes=15)
# renew re-signs a SAS that expires within RENEW_MARGIN. Its timer starts it every 10 minutes (hpclz.render.
# job_storage.RENEW_EVERY), so a SAS is tried about six times before it expires, through a passing outage of the
# metadata service or of Storage.
RENEW_MARGIN = datetime.timedelta(hours=1)
# A job whose folder is still there after its recorded end: either its time limit was raised (scontrol update
# TimeLimit=...; slurmd learns nothing of it, so the recorded end is stale) or its epilog never ran. renew cannot tell
# which without asking slurmctld, so it keeps the job going in windows of OVERTIME each, while the folder exists (the
# epilog removes it at the job's real end), for STALE past the recorded end; then it removes the folder and the record
# and signs nothing more. The trade-off: a job whose limit was raised by more than STALE loses its token STALE after
# its first end (its next renewal finds it stale); a token left by a missed epilog lives STALE + OVERTIME at most,
# what a job of Slurm 22.05 had (LIFETIME) plus a little.
OVERTIME = datetime.timedelta(hours=2)
STALE = datetime.timedelta(hours=24)
# "The maximum validity period of a user delegation key is 7 days" (get-user-delegation-key, Request body): asked for
# just under, so that the node reuses one key for about six days of SAS.
KEY_LIFETIME = datetime.timedelta(days=7) - datetime.timedelta(minutes=5)
# Start a little in the past: a SAS or key that starts "now" by this node's clock may not have started yet by the
# service's ("clock skew", create-user-delegation-sas, signedStart).
SKEW = datetime.timedelta(minutes=5)
# Get Secret (latest version when none is named): GET {vaultBaseUrl}/secrets/{secret-name}?api-version=2025-07-01,
# answer {"value": ..., "id": ...} (learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret
# ?view=rest-keyvault-secrets-2025-07-01).
VAULT_API = "2025-07-01"


def log(message):
    syslog.openlog("hpclz-job-storage", 0, syslog.LOG_DAEMON)
    syslog.syslog(syslog.LOG_ERR, message)
    print("hpclz-job-storage: " + message, file=sys.stderr)


def stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text):
    return datetime.datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)


def http(url, headers, data=None):
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def token(identity, resource="https://storage.azure.com/"):
    metadata = {"Metadata": "true"}
    query = "api-version=2021-02-01&format=text"
    subscription = http(IMDS + "/metadata/instance/compute/subscriptionId?" + query, metadata).decode().strip()
    token_query = urllib.parse.urlencode(
        {
            "api-version": "2018-02-01",
            "resource": resource,
            "mi_res_id": "/subscriptions/" + subscription + "/" + identity,
        }
    )
    return json.loads(http(IMDS + "/metadata/identity/oauth2/token?" + token_query, metadata).decode())["access_token"]


def delegation_key(config, now):
    """The user delegation key: POST ?restype=service&comp=userdelegationkey with KeyInfo Start and Expiry
    (get-user-delegation-key, Request body); the answer's UserDelegationKey fields as the SAS names them."""
    body = (
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><KeyInfo><Start>"
        + stamp(now - SKEW)
        + "</Start><Expiry>"
        + stamp(now + KEY_LIFETIME)
        + "</Expiry></KeyInfo>"
    ).encode()
    headers = {
        "Authorization": "Bearer " + token(config["identity"]),
        "x-ms-version": VERSION,
        "Content-Type": "application/xml",
    }
    url = BLOB_URL.format(account=config["account"]) + "/?restype=service&comp=userdelegationkey"
    root = ElementTree.fromstring(http(url, headers, body))
    fields = ("SignedOid", "SignedTid", "SignedStart", "SignedExpiry", "SignedService", "SignedVersion", "Value")
    key = {name: (root.findtext(name) or "") for name in fields}
    if not key["Value"] or not key["SignedOid"]:
        raise ValueError("the user delegation key answer names no Value or SignedOid")
    return key


def cached_key(config, now, wanted):
    """The key on this node's own disk while it outlives the SAS about to be signed with it (expiring at `wanted`), or
    at least the next LIFETIME where the SAS would last longer (renew signs later SAS with a later key), else a new
    one."""
    path = config["key_cache"]
    needed = min(wanted, now + LIFETIME)
    try:
        with open(path, encoding="utf-8") as handle:
            key = json.load(handle)
        if parse_time(key["SignedExpiry"]) >= needed and parse_time(key["SignedStart"]) <= now - SKEW:
            return key
    except (OSError, KeyError, ValueError):
        pass
    key = delegation_key(config, now)
    write_root(path, key)
    return key


def write_root(path, value):
    """`value` as JSON at `path`, root's alone (0600 in a 0700 folder), written beside and renamed over; the part's
    name is this process's own, as prologs of jobs starting together and renew may write the key at once."""
    folder_(os.path.dirname(path), 0o700)
    part = path + "." + str(os.getpid()) + ".part"
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(part, path)


def container_sas(account, container, permissions, start, expiry, key, protocol):
    """A user delegation SAS for one container (sr=c), the query string without its leading "?"."""
    query = [
        ("st", start),
        ("se", expiry),
        ("sp", permissions),
        ("spr", protocol),
        ("sv", VERSION),
        ("sr", "c"),
        ("skoid", key["SignedOid"]),
        ("sktid", key["SignedTid"]),
        ("skt", key["SignedStart"]),
        ("ske", key["SignedExpiry"]),
        ("sks", key["SignedService"]),
        ("skv", key["SignedVersion"]),
    ]
    values = dict(query)
    # create-user-delegation-sas, "Version 2025-07-05 and later": empty lines for the fields this SAS leaves out
    # (signedAuthorizedUserObjectId, signedUnauthorizedUserObjectId, signedCorrelationId,
    # signedKeyDelegatedUserTenantId, signedDelegatedUserObjectId, signedIP, signedSnapshotTime,
    # signedEncryptionScope, signedRequestHeaders, signedRequestQueryParameters and the five response headers).
    lines = [
        permissions,
        start,
        expiry,
        "/blob/" + account + "/" + container,
        values["skoid"],
        values["sktid"],
        values["skt"],
        values["ske"],
        values["sks"],
        values["skv"],
        "",
        "",
        "",
        "",
        "",
        "",
        protocol,
        VERSION,
        "c",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
    ]
    digest = hmac.new(base64.b64decode(key["Value"]), "\n".join(lines).encode(), hashlib.sha256).digest()
    query.append(("sig", base64.b64encode(digest).decode()))
    return "&".join(name + "=" + urllib.parse.quote(value) for name, value in query if value)


def folder_(path, mode):
    """`path` made where missing, each folder above it traversable (0755) whatever the umask slurmd runs us under,
    and `path` itself set to `mode`: the jobs' folder 0755 beside the key's 0700, under the same /run/hpclz. Prologs of
    jobs starting together on a fresh node make the same folders at once: one made by another meanwhile is fine."""
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        folder_(parent, 0o755)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    os.chmod(path, mode)


def write_job(folder, uid, gid, files, secrets=None):
    """<jobs>/<job>/, the job user's alone; made afresh (a requeued job may run again on this node). `secrets` (name:
    value) go to its secrets/ folder, each value exactly, written while both folders are still root's."""
    folder_(os.path.dirname(folder), 0o755)
    if os.path.lexists(folder):
        shutil.rmtree(folder)
    os.mkdir(folder, 0o700)
    for name, text in files.items():
        fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.chown(os.path.join(folder, name), uid, gid)
    if secrets:
        inner = os.path.join(folder, "secrets")
        os.mkdir(inner, 0o700)
        for name, value in secrets.items():
            write_secret(inner, name, value, uid, gid)
        os.chown(inner, uid, gid)
        os.chmod(inner, 0o700)
    os.chown(folder, uid, gid)
    os.chmod(folder, 0o700)


def write_secret(folder, name, value, uid, gid):
    """One secret's value at <folder>/<name>, the job user's, 0600 from its creation: written whole to a name beside
    it (created, never opened: O_EXCL, O_NOFOLLOW), synced, then renamed into place, so the name holds the whole value
    or nothing."""
    part = os.path.join(folder, "." + name + ".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, 0o600)
        data = value.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(part, os.path.join(folder, name))


def failure(exc):
    """What a log says of a failed secret read: the error's type and HTTP status, never its text (a body or a message
    could quote what was read)."""
    if isinstance(exc, urllib.error.HTTPError):
        return type(exc).__name__ + " " + str(exc.code)
    return type(exc).__name__


def job_secrets(config, job):
    """Each secret the config names, read from Key Vault with the compute identity's token: name -> value. One that
    cannot be read is logged by name and left out; the others are still read."""
    names = config.get("secrets") or []
    if not names:
        return {}
    try:
        bearer = token(config["identity"], "https://vault.azure.net")
    except Exception as exc:
        log("job " + job + ": prolog: no Key Vault token, no secrets: " + failure(exc))
        return {}
    out = {}
    for name in names:
        url = config["vault_url"].rstrip("/") + "/secrets/" + urllib.parse.quote(name) + "?api-version=" + VAULT_API
        try:
            value = json.loads(http(url, {"Authorization": "Bearer " + bearer}).decode())["value"]
            if not isinstance(value, str):
                raise ValueError()
            out[name] = value
        except Exception as exc:
            log("job " + job + ": prolog: no secret " + name + ": " + failure(exc))
    return out


def records(config):
    """Root's own folder of job records, beside the key (0700): nothing in it is the job user's to write."""
    return os.path.join(os.path.dirname(config["key_cache"]), "jobs")


def signed(config, key, start, expiry):
    """Each container's SAS, by file name (<container>.sas), and its URL (<container>.url)."""
    base = BLOB_URL.format(account=config["account"])
    protocol = "https" if base.startswith("https:") else "https,http"
    files = {}
    for container in config["containers"]:
        name = container["name"]
        files[name + ".url"] = base + "/" + name
        files[name + ".sas"] = container_sas(
            config["account"], name, container["permissions"], stamp(start), stamp(expiry), key, protocol
        )
    return files


def prolog(config, job, uid, gid, end_time):
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    if end_time.isdigit() and int(end_time) > 0:
        end = datetime.datetime.fromtimestamp(int(end_time), datetime.timezone.utc)
        wanted = end + GRACE
    else:  # Slurm before 23.02: no end given
        end = now + LIFETIME
        wanted = end
    files, record = {}, None
    if config.get("containers"):
        try:
            key = cached_key(config, now, wanted)
            expiry = min(wanted, parse_time(key["SignedExpiry"]))
            files = signed(config, key, now - SKEW, expiry)
            record = {"uid": uid, "gid": gid, "end": stamp(end), "expiry": stamp(expiry)}
        except Exception as exc:  # no SAS: the job's secrets still come
            log("job " + job + ": prolog: no storage credential: " + type(exc).__name__ + ": " + str(exc))
    secrets = job_secrets(config, job)
    if not files and not secrets:
        remove(config, job)  # nothing for this job: no folder (a requeued job's old one included)
        return
    write_job(os.path.join(config["jobs"], job), uid, gid, files, secrets)
    if record is not None:
        # The record after the folder: a renew that ran between the two would take a record without its folder for
        # one whose epilog had run, and remove it.
        write_root(os.path.join(records(config), job + ".json"), record)


def remove(config, job):
    """The job's tokens and its record, whatever is left of them."""
    folder = os.path.join(config["jobs"], job)
    if os.path.islink(folder):
        os.unlink(folder)
    elif os.path.lexists(folder):
        shutil.rmtree(folder)
    try:
        os.unlink(os.path.join(records(config), job + ".json"))
    except FileNotFoundError:
        pass


def replace_sas(folder, uid, gid, files):
    """Each <container>.sas in the job's folder replaced whole: written beside under a name of root's choosing, owned by
    the job's user, 0600, then renamed over the old one, so a job reading it sees the old token or the new one, never
    part of either. The folder is its user's: every name is resolved under a descriptor of the folder opened without
    following a link and checked to be that user's directory, a file is only ever created (O_EXCL, O_NOFOLLOW), never
    opened, and rename(2) replaces a link or file the user put in its place without following it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if info.st_uid != uid:
            raise ValueError("the job's folder is not its user's")
        for name, text in files.items():
            if not name.endswith(".sas"):
                continue
            part = ".hpclz-renew-" + base64.b32encode(os.urandom(10)).decode().lower()
            file_fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd)
            try:
                os.fchown(file_fd, uid, gid)
                os.fchmod(file_fd, 0o600)
                os.write(file_fd, (text + "\n").encode())
                os.fsync(file_fd)
            finally:
                os.close(file_fd)
            try:
                os.rename(part, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError:
                os.unlink(part, dir_fd=fd)
                raise
    finally:
        os.close(fd)


def renew_job(config, job, now):
    """One job's SAS signed afresh when it expires within RENEW_MARGIN; its folder and record removed when stale."""
    path = os.path.join(records(config), job + ".json")
    with open(path, encoding="utf-8") as handle:
        record = json.load(handle)
    folder = os.path.join(config["jobs"], job)
    end = parse_time(record["end"])
    if not os.path.lexists(folder) or now > end + STALE:
        remove(config, job)  # the epilog took the folder, or the job ended long ago and its epilog never ran
        return
    expiry = parse_time(record["expiry"])
    if expiry > now + RENEW_MARGIN:
        return
    if now >= end:  # past its recorded end and still here: a raised time limit, or a missed epilog
        wanted = now + OVERTIME
    elif expiry < end + GRACE:  # cut short by the key's expiry: a later key carries it on
        wanted = end + GRACE
    else:  # it lasts until the job's end already
        return
    key = cached_key(config, now, wanted)
    expiry = min(wanted, parse_time(key["SignedExpiry"]))
    replace_sas(folder, int(record["uid"]), int(record["gid"]), signed(config, key, now - SKEW, expiry))
    write_root(path, {**record, "expiry": stamp(expiry)})


def renew(config):
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    try:
        names = sorted(os.listdir(records(config)))
    except FileNotFoundError:
        return
    for name in names:
        job = name[: -len(".json")]
        if not name.endswith(".json") or not job.isdigit():
            continue
        try:
            renew_job(config, job, now)
        except Exception as exc:  # one job's failure never stops the others'; its old SAS stays until it expires
            log("job " + job + ": renew: no new storage credential: " + type(exc).__name__ + ": " + str(exc))


def main(argv):
    if len(argv) != 3 or argv[1] not in ("prolog", "epilog", "renew"):
        print("usage: hpclz-job-storage prolog|epilog|renew CONFIG", file=sys.stderr)
        return 0
    job = os.environ.get("SLURM_JOB_ID", "")
    config = {}
    try:
        with open(argv[2], encoding="utf-8") as handle:
            config = json.load(handle)
        if argv[1] == "renew":
            renew(config)
            return 0
        if not job.isdigit():
            raise ValueError("no numeric SLURM_JOB_ID")
        if argv[1] == "epilog":
            remove(config, job)
            return 0
        prolog(
            config,
            job,
            int(os.environ["SLURM_JOB_UID"]),
            int(os.environ["SLURM_JOB_GID"]),
            os.environ.get("SLURM_JOB_END_TIME", ""),
        )
    except Exception as exc:  # a job never fails for its storage credential: logged, and no token left behind
        log("job " + job + ": " + argv[1] + ": no storage credential: " + type(exc).__name__ + ": " + str(exc))
        if argv[1] == "prolog" and job.isdigit() and isinstance(config, dict) and "jobs" in config:
            shutil.rmtree(os.path.join(str(config["jobs"]), job), ignore_errors=True)
            if "key_cache" in config:
                try:
                    os.unlink(os.path.join(records(config), job + ".json"))
                except OSError:
                    pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
