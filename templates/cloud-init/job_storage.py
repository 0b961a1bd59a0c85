#!/usr/bin/env python3
"""hpclz-job-storage prolog|epilog CONFIG: one user delegation SAS per blob container for a Slurm job, on this node.

Run by slurmd as root from the Prolog and Epilog (prolog.d/epilog.d, hpclz.render.job_storage). The prolog asks the
node's instance metadata service, as root (the only user CycleCloud's rule lets reach it), for the compute identity's
token for Azure Storage (resource https://storage.azure.com/; learn.microsoft.com/entra/identity/
managed-identities-azure-resources/how-to-use-vm-token), gets a user delegation key with it
(learn.microsoft.com/rest/api/storageservices/get-user-delegation-key) and signs with that key one SAS per container
(learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas): the job's user may then do in that container
what the SAS's permissions allow, and what the compute identity's role allows, no more, until the SAS expires. The files
go to <jobs>/<SLURM_JOB_ID>/, the job user's own (0700, files 0600): <container>.url and <container>.sas. The epilog
removes the folder. Nothing here ever fails a job: a failure is logged (syslog, and slurmd's log through stderr) and
leaves no token. CONFIG (JSON): identity (a resource ID relative to the subscription), account, containers
([{name, permissions}]), jobs (the folder), key_cache (the user delegation key, root's only).
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
# Slurm gives the Prolog no end time of the job (slurm.conf(5) 22.05, "Prolog and Epilog Scripts": SLURM_JOB_ID,
# SLURM_JOB_UID, SLURM_JOB_GID, ..., no time limit or end), and asking slurmctld from a prolog is discouraged
# (slurm.schedmd.com/prolog_epilog.html). So each SAS lives a fixed day: long enough for a job that reads its data and
# writes checkpoints within a day, bounded so that a token copied out of a job is dead a day later at most.
LIFETIME = datetime.timedelta(hours=24)
# "The maximum validity period of a user delegation key is 7 days" (get-user-delegation-key, Request body): asked for
# just under, so that the node reuses one key for about six days of SAS.
KEY_LIFETIME = datetime.timedelta(days=7) - datetime.timedelta(minutes=5)
# Start a little in the past: a SAS or key that starts "now" by this node's clock may not have started yet by the
# service's ("clock skew", create-user-delegation-sas, signedStart).
SKEW = datetime.timedelta(minutes=5)


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


def token(identity):
    metadata = {"Metadata": "true"}
    query = "api-version=2021-02-01&format=text"
    subscription = http(IMDS + "/metadata/instance/compute/subscriptionId?" + query, metadata).decode().strip()
    token_query = urllib.parse.urlencode(
        {
            "api-version": "2018-02-01",
            "resource": "https://storage.azure.com/",
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


def cached_key(config, now):
    """The key on this node's own disk while it outlives the SAS about to be signed with it, else a new one."""
    path = config["key_cache"]
    try:
        with open(path, encoding="utf-8") as handle:
            key = json.load(handle)
        if parse_time(key["SignedExpiry"]) >= now + LIFETIME and parse_time(key["SignedStart"]) <= now - SKEW:
            return key
    except (OSError, KeyError, ValueError):
        pass
    key = delegation_key(config, now)
    folder_(os.path.dirname(path), 0o700)
    part = path + ".part"
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(key, handle)
    os.replace(part, path)
    return key


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
    and `path` itself set to `mode`: the jobs' folder 0755 beside the key's 0700, under the same /run/hpclz."""
    parent = os.path.dirname(path)
    if parent and parent != path and not os.path.isdir(parent):
        folder_(parent, 0o755)
    if not os.path.isdir(path):
        os.mkdir(path, mode)
    os.chmod(path, mode)


def write_job(folder, uid, gid, files):
    """<jobs>/<job>/, the job user's alone; made afresh (a requeued job may run again on this node)."""
    folder_(os.path.dirname(folder), 0o755)
    if os.path.lexists(folder):
        shutil.rmtree(folder)
    os.mkdir(folder, 0o700)
    for name, text in files.items():
        fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.chown(os.path.join(folder, name), uid, gid)
    os.chown(folder, uid, gid)
    os.chmod(folder, 0o700)


def prolog(config, job, uid, gid):
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    key = cached_key(config, now)
    expiry = min(now + LIFETIME, parse_time(key["SignedExpiry"]))
    base = BLOB_URL.format(account=config["account"])
    protocol = "https" if base.startswith("https:") else "https,http"
    files = {}
    for container in config["containers"]:
        name = container["name"]
        files[name + ".url"] = base + "/" + name
        files[name + ".sas"] = container_sas(
            config["account"], name, container["permissions"], stamp(now - SKEW), stamp(expiry), key, protocol
        )
    write_job(os.path.join(config["jobs"], job), uid, gid, files)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("prolog", "epilog"):
        print("usage: hpclz-job-storage prolog|epilog CONFIG", file=sys.stderr)
        return 0
    job = os.environ.get("SLURM_JOB_ID", "")
    config = {}
    try:
        with open(argv[2], encoding="utf-8") as handle:
            config = json.load(handle)
        if not job.isdigit():
            raise ValueError("no numeric SLURM_JOB_ID")
        folder = os.path.join(config["jobs"], job)
        if argv[1] == "epilog":
            if os.path.lexists(folder):
                shutil.rmtree(folder)
            return 0
        prolog(config, job, int(os.environ["SLURM_JOB_UID"]), int(os.environ["SLURM_JOB_GID"]))
    except Exception as exc:  # a job never fails for its storage credential: logged, and no token left behind
        log("job " + job + ": " + argv[1] + ": no storage credential: " + type(exc).__name__ + ": " + str(exc))
        if argv[1] == "prolog" and job.isdigit() and isinstance(config, dict) and "jobs" in config:
            shutil.rmtree(os.path.join(str(config["jobs"]), job), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
