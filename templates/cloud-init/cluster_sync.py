#!/usr/bin/env python3
"""hpclz cluster sync: keep the CycleCloud Slurm cluster equal to the definition in this VM's userData.

hpclz renders the cluster (one nodearray per partition), its parameters and the CycleCloud Azure account into
the VM's userData, which ARM updates in place, unlike customData. A systemd timer runs this script at boot and
every few minutes: it reads userData from the instance metadata service and, only when its SHA-256 differs from
the last one applied, upgrades CycleCloud in place when userData names a newer release, re-imports the cluster
(import_cluster --force) and starts it. The hash covers the version of each secret parameter too: userData names the
secret, not its value, so a rotated secret (a new version in Key Vault) re-imports the cluster with the new value. The
hash is recorded after
success only, so a failed import is retried on the next run. The account is re-applied, and the pinned
cyclecloud-slurm release fetched, checked (against pinned digests and those recorded at its first fetch) and uploaded
to its locker (the one the nodes run;
healthagent and monitoring come from GitHub, unpinned: docs/locker.md), only when the account or the release changed.
On a first start CycleCloud may not be ready for either yet: as CCWS does, the upload waits for the locker's record to
be "Created" and the start for the region's machine types; each wait is bounded, and a run that gives up fails with one
line and is retried by the timer.
"""

import argparse
import base64
import configparser
import fcntl
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

# HPCLZ_IMDS_URL points the script at a local stand-in in tests; on Azure it is always the link-local address.
IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
USER_DATA_URL = IMDS + "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
SUBSCRIPTION_URL = IMDS + "/metadata/instance/compute/subscriptionId?api-version=2021-02-01&format=text"
PLACEHOLDER = "@SUBSCRIPTION_ID@"
# The hpclz wheel the scheduler installs: `hpclz deploy` uploads it to the locker and sets this VM's hpclz-wheel tag to
# "<sha256>/<file name>", read here from the metadata service's tagsList
# (learn.microsoft.com/azure/virtual-machines/instance-metadata-service); the scheduler checks the file against it.
TAGS_URL = IMDS + "/metadata/instance/compute/tagsList?api-version=2021-02-01"
WHEEL_TAG = "hpclz-wheel"
WHEEL = re.compile(r"^([0-9a-f]{64})/(hpclz-[A-Za-z0-9_.]+-py3-none-any\.whl)$")
WHEEL_SHA256 = "@HPCLZ_WHEEL_SHA256@"
WHEEL_FILE = "@HPCLZ_WHEEL_FILE@"
# Key Vault's data plane; HPCLZ_VAULT_URL ("http://host:port/{vault}") points it at a local stand-in in tests.
VAULT_URL = os.environ.get("HPCLZ_VAULT_URL", "https://{vault}.vault.azure.net")
# Get Secret, latest version: https://learn.microsoft.com/en-us/rest/api/keyvault/secrets/get-secret/get-secret
VAULT_API = "7.4"
# Key Vault is asked for the secrets' versions whenever userData or the wheel changed, and otherwise at most once in
# this many seconds (HPCLZ_VAULT_SECONDS in tests), not on every timer run: a rotation (a new version) still re-imports
# the cluster, at most this much later. slurmdbd's own copy does not wait for it: deploy rewrites it by Run Command
# (docs/cluster-services.md, "Rotating the password").
VAULT_SECONDS = float(os.environ.get("HPCLZ_VAULT_SECONDS", "1800"))
# The locker's Blob endpoint; HPCLZ_BLOB_URL points it at a local stand-in in tests. A request with a bearer token needs
# x-ms-version 2017-11-09 or later (learn.microsoft.com/rest/api/storageservices/authorize-with-azure-active-directory).
BLOB_URL = os.environ.get("HPCLZ_BLOB_URL", "https://{account}.blob.core.windows.net")
STORAGE_API = "2021-08-06"
# The blob beside the wheels that names the wheel the scheduler should run, "<sha256>/<file name>"; the scheduler's
# hpclz-wheel-update timer reads it (hpclz-install-wheel --follow).
CURRENT_WHEEL = "current"
# Azure Resource Manager; HPCLZ_ARM_URL points it at a local stand-in in tests.
ARM_URL = os.environ.get("HPCLZ_ARM_URL", "https://management.azure.com")
# CycleCloud's own command, where CCWS calls it (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/install.sh l.273);
# HPCLZ_CYCLE_SERVER points at a test double, HPCLZ_POLL_SECONDS shortens the waits in tests.
CYCLE_SERVER = os.environ.get("HPCLZ_CYCLE_SERVER", "/opt/cycle_server/cycle_server")
POLL = float(os.environ.get("HPCLZ_POLL_SECONDS", "5"))
# The locker is usable once its Cloud.Locker record reaches State "Created". CCWS checks every 5 s and, after two
# minutes without it, runs the Retry:Cloud.Locker action ("We strictly need to retry creating the locker record after
# waiting for two minutes ... Resetting too frequently will cause the locker record to never be created",
# install.sh l.269-284). CCWS loops for ever; here five such rounds (10 minutes), then this run fails and the timer
# runs the whole sync again.
LOCKER_CHECKS = 24
LOCKER_ROUNDS = 5
# A cluster starts once CycleCloud knows every node's machine type in the region: CCWS runs the timer that loads them
# (plugin.azure.monitor_reference) and waits until no node of the cluster lacks its Azure.MachineType or
# Cloud.MachineType record (install.sh l.316-331). Bounded here: 60 checks 10 s apart.
MACHINE_TYPE_CHECKS = 60
# CycleCloud 8 upgrades in place, keeping its database: "You can upgrade the Azure CycleCloud application in place";
# "When you install cyclecloud8, the installation scripts find your existing data and configuration and automatically
# handle any upgrade migrations"; on Enterprise Linux "sudo yum -y upgrade cyclecloud8" (on Debian/Ubuntu apt, below),
# from Microsoft's repository configured as the manual installation does it; "CycleCloud is unavailable while the
# upgrade happens. The upgrade usually takes 2-3 minutes", and running clusters keep running (MicrosoftDocs/azure-docs
# @0206fe6 articles/cyclecloud/how-to/upgrade-and-migrate.md; @0aa710a articles/cyclecloud/how-to/install-manual.md,
# "Installing on Enterprise Linux (RHEL) clones"). The package is pinned to userData's release with a NAME-VERSION
# spec (dnf.readthedocs.io/en/latest/command_ref.html, "Specifying Packages"). HPCLZ_YUM_REPOS points at a test folder.
YUM_REPOS = os.environ.get("HPCLZ_YUM_REPOS", "/etc/yum.repos.d")
CYCLECLOUD_REPO = (
    "[cyclecloud]\nname=cyclecloud\nbaseurl=https://packages.microsoft.com/yumrepos/cyclecloud\ngpgcheck=1\n"
    "gpgkey=https://packages.microsoft.com/keys/microsoft.asc\n"
)


def log(line, log_file):
    stamped = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + " hpclz-cluster-sync: " + line
    print(stamped, flush=True)
    with open(log_file, "a") as handle:
        handle.write(stamped + "\n")


def imds(url):
    request = urllib.request.Request(url, headers={"Metadata": "true"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def decode(user_data):
    """base64 of an xz-compressed JSON document (hpclz.render.payload.pack); gzip and plain ones are read too."""
    raw = base64.b64decode(user_data.strip())
    if raw[:6] == b"\xfd7zXZ\x00":
        raw = lzma.decompress(raw)
    elif raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    document = json.loads(raw.decode())
    for key in ("cluster", "template", "parameters", "account", "project", "project_name"):
        if key not in document:
            raise ValueError("userData has no " + key + ": not an hpclz cluster definition")
    return document


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return ""


def write(path, text, mode=0o644):
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def cyclecloud(args, log_file, cwd=None):
    log("running: cyclecloud " + " ".join(args), log_file)
    # stdout/stderr pipes, not capture_output: /usr/bin/python3 on AlmaLinux 8 is 3.6 (vermin checks it in CI).
    done = subprocess.run(
        ["cyclecloud", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True
    )
    for line in (done.stdout + done.stderr).splitlines():
        log("  " + line, log_file)
    return done.returncode


def cycle_server(args, log_file):
    """One `cycle_server` call's output; a failed call is logged and answers nothing, so a wait goes on."""
    done = subprocess.run(
        [CYCLE_SERVER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True
    )
    if done.returncode != 0:
        log("cycle_server " + args[0] + " failed (" + str(done.returncode) + "): " + done.stderr.strip()[-300:], log_file)
        return ""
    return done.stdout


def command(args, log_file, cwd=None):
    log("running: " + " ".join(args), log_file)
    done = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    for line in (done.stdout + done.stderr).splitlines()[-20:]:
        log("  " + line, log_file)
    return done


def release(text):
    """8.9.1 of an RPM version such as 8.9.1 or 8.9.1-3570: what userData's release is compared with."""
    return tuple(int(part) for part in re.findall(r"[0-9]+", text)[:3])


def installed_cyclecloud(log_file):
    """The installed cyclecloud8 package's version and its packaging ("rpm" or "deb"), or (None, None): Microsoft ships
    CycleCloud 8 as an RPM and as a Debian package (upgrade-and-migrate.md), and the image's family is not assumed."""
    queries = (
        ("rpm", ["rpm", "-q", "--queryformat", "%{VERSION}", "cyclecloud8"]),
        ("deb", ["dpkg-query", "-W", "-f=${Version}", "cyclecloud8"]),
    )
    for family, query in queries:
        if shutil.which(query[0]) is None:
            continue
        done = command(query, log_file)
        if done.returncode == 0 and release(done.stdout):
            return done.stdout.strip(), family
    return None, None


def upgrade_cyclecloud(document, log_file):
    """CycleCloud to userData's release, in place, before anything else talks to it; never backwards."""
    wanted = document.get("cyclecloud_version", "")
    if not wanted:
        return
    installed, family = installed_cyclecloud(log_file)
    if installed is None:
        log("neither rpm nor dpkg knows a cyclecloud8 package here: CycleCloud " + wanted + " not checked", log_file)
        return
    if release(installed) == release(wanted):
        return
    if release(installed) > release(wanted):
        log("CycleCloud " + installed + " runs here, newer than userData's " + wanted + "; never downgraded", log_file)
        return
    if family == "deb":
        # "sudo apt update; sudo apt -y upgrade cyclecloud8" ("Upgrading on Debian or Ubuntu", upgrade-and-migrate.md)
        # takes the newest release, not the pinned one: left to the operator, and the import waits for it.
        raise RuntimeError(
            "CycleCloud " + installed + " runs from a Debian package and userData names " + wanted
            + ": run `sudo apt update && sudo apt -y upgrade cyclecloud8` on this server"
        )
    log("upgrading CycleCloud " + installed + " -> " + wanted + " in place (its data stays in /opt/cycle_server)", log_file)
    repos = [os.path.join(YUM_REPOS, n) for n in sorted(os.listdir(YUM_REPOS)) if n.endswith(".repo")]
    if not any("packages.microsoft.com/yumrepos/cyclecloud" in read(r) for r in repos):
        write(os.path.join(YUM_REPOS, "cyclecloud.repo"), CYCLECLOUD_REPO)
    if command(["yum", "-y", "upgrade", "cyclecloud8-" + wanted], log_file).returncode != 0:
        raise RuntimeError("yum could not upgrade cyclecloud8 to " + wanted)
    now = installed_cyclecloud(log_file)[0] or "unknown"
    if release(now) != release(wanted):
        raise RuntimeError("cyclecloud8 is " + now + " after the upgrade, not " + wanted)
    # The CLI from the upgraded server's own zip, as the bootstrap installs it (CCWS: cyclecloud_install.py:409-425).
    tools = os.path.join(os.path.dirname(CYCLE_SERVER), "tools", "cyclecloud-cli.zip")
    folder = os.environ.get("HPCLZ_CLI_DIR", "/opt/hpclz/cli-installer")
    shutil.rmtree(folder, ignore_errors=True)
    zipfile.ZipFile(tools).extractall(folder)
    (installer,) = [n for n in sorted(os.listdir(folder)) if n.startswith("cyclecloud-cli-installer")]
    # Through bash: zipfile, unlike unzip, does not keep install.sh's executable bit.
    if command(["bash", "install.sh", "--system"], log_file, os.path.join(folder, installer)).returncode != 0:
        raise RuntimeError("the CycleCloud " + wanted + " CLI did not install")
    cycle_server(["await_startup"], log_file)
    log("CycleCloud " + wanted + " runs", log_file)


def await_locker(name, log_file):
    query = 'select * from Cloud.Locker where State=="Created" && Name=="' + name + '"'
    for _ in range(LOCKER_ROUNDS):
        for _ in range(LOCKER_CHECKS):
            if cycle_server(["execute", query], log_file).strip():
                return
            time.sleep(POLL)
        log("locker " + name + " is not Created yet: asking CycleCloud to retry it (Retry:Cloud.Locker)", log_file)
        cycle_server(["run_action", "Retry:Cloud.Locker", "-f", 'Name=="' + name + '"'], log_file)
    raise RuntimeError(
        "locker " + name + " did not reach state Created in " + str(LOCKER_ROUNDS) + " retries; nothing uploaded"
    )


def await_machine_types(cluster, log_file):
    cycle_server(["run_action", "Run:Application.Timer", "-eq", "Name", "plugin.azure.monitor_reference"], log_file)
    query = (
        "SELECT Name, M.Name as MachineType, CM.Name as CMName FROM Cloud.Node"
        " OUTER JOIN Azure.MachineType M ON MachineType === M.Name && Region === M.Location"
        " OUTER JOIN Cloud.MachineType CM ON MachineType === CM.Name"
        ' WHERE ClusterName == "' + cluster + '"'
    )
    missing = ["(no answer)"]
    for attempt in range(MACHINE_TYPE_CHECKS):
        if attempt:
            time.sleep(2 * POLL)
        try:
            rows = json.loads(cycle_server(["execute", "--format", "json", query], log_file) or "null")
        except ValueError:
            rows = None
        if isinstance(rows, list):
            missing = sorted(str(r.get("Name")) for r in rows if r.get("MachineType") is None or r.get("CMName") is None)
            if not missing:
                return
    raise RuntimeError(
        "CycleCloud has no machine-type record for node(s) " + ", ".join(missing) + " of " + cluster
        + " after " + str(MACHINE_TYPE_CHECKS) + " checks; not started"
    )


def managed_token(identity, subscription, audience):
    """A token for the managed identity the spec names
    (https://learn.microsoft.com/en-us/entra/identity/managed-identities-azure-resources/how-to-use-vm-token)."""
    mi_res_id = "/subscriptions/" + subscription + "/" + identity
    query = urllib.parse.urlencode({"api-version": "2018-02-01", "resource": audience, "mi_res_id": mi_res_id})
    return json.loads(imds(IMDS + "/metadata/identity/oauth2/token?" + query))["access_token"]


def get_json(url, token):
    request = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read().decode())


def vault_secret(spec, subscription):
    """One secret's value and its identifier, https://{vault}.vault.azure.net/secrets/{name}/{version}: Set Secret
    "creates a new version of that secret" (https://learn.microsoft.com/en-us/rest/api/keyvault/secrets/set-secret/
    set-secret), so a rotation changes the identifier (token audience https://vault.azure.net)."""
    token = managed_token(spec["identity"], subscription, "https://vault.azure.net")
    url = VAULT_URL.format(vault=spec["vault"]) + "/secrets/" + spec["name"] + "?api-version=" + VAULT_API
    answer = get_json(url, token)
    return answer["value"], answer["id"]


def vault_secrets(document, subscription):
    """Each secret parameter as (value, identifier), read once a run."""
    secrets = json.loads(document.get("secret_parameters") or "{}")
    return {name: vault_secret(spec, subscription) for name, spec in sorted(secrets.items())}


def arm_field(spec, subscription):
    """One field of an ARM resource, such as a NetApp volume's mount address (properties.mountTargets.0.ipAddress).
    A resource still being created has no such field yet: the KeyError fails this run, and the timer retries."""
    token = managed_token(spec["identity"], subscription, "https://management.azure.com/")
    url = ARM_URL + "/subscriptions/" + subscription + "/" + spec["resource"] + "?api-version=" + spec["api"]
    node = get_json(url, token)
    for part in spec["field"].split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return str(node)


def wheel_tag(log_file):
    """The VM's hpclz-wheel tag as (sha256, file name); None, and the scheduler refuses to install, when it is
    missing or malformed."""
    try:
        tags = json.loads(imds(TAGS_URL))
    except (OSError, ValueError) as exc:
        log("no tags from the metadata service: " + str(exc), log_file)
        return None
    value = next((str(t.get("value", "")) for t in tags if t.get("name") == WHEEL_TAG), "")
    match = WHEEL.match(value)
    if not match:
        log("tag " + WHEEL_TAG + " is " + (repr(value) if value else "not set") + ": no hpclz wheel to install", log_file)
        return None
    return match.group(1), match.group(2)


def publish_wheel(document, subscription, wheel, log_file):
    """The tag's wheel as the locker's `current` blob, where a running scheduler looks for it. Put Blob, a BlockBlob
    replaced whole (learn.microsoft.com/rest/api/storageservices/put-blob), with CycleCloud's identity (token audience
    https://storage.azure.com/). Anyone who may write the locker may already run code on every node: "When a node
    starts, it processes and runs a sequence of specs", and the projects holding them "are assumed to be stored in the
    locker" (learn.microsoft.com/azure/cyclecloud/how-to/projects, .../cluster-references/cluster-init-reference).
    The pointer gives no one more than that."""
    spec = json.loads(document.get("wheel_locker") or "{}")
    if wheel is None or not spec:
        return
    token = managed_token(spec["identity"], subscription, "https://storage.azure.com/")
    url = BLOB_URL.format(account=spec["account"]) + "/" + spec["container"] + "/" + CURRENT_WHEEL
    headers = {
        "Authorization": "Bearer " + token,
        "x-ms-version": STORAGE_API,
        "x-ms-blob-type": "BlockBlob",
        "Content-Type": "text/plain",
    }
    body = (wheel[0] + "/" + wheel[1] + "\n").encode()
    request = urllib.request.Request(url, data=body, headers=headers, method="PUT")
    with urllib.request.urlopen(request, timeout=30):
        pass
    log("published wheel " + wheel[1] + " (sha256 " + wheel[0][:12] + ") as " + spec["container"] + "/current", log_file)


def with_wheel(template, wheel):
    if wheel is None:
        return template
    return template.replace(WHEEL_SHA256, wheel[0]).replace(WHEEL_FILE, wheel[1])


def cluster_parameters(document, subscription, secrets):
    """The cluster parameters, with each secret parameter's value read from Key Vault (never logged) and each ARM
    parameter read from the resource it names."""
    parameters = json.loads(document["parameters"].replace(PLACEHOLDER, subscription))
    for name, (value, _version) in sorted(secrets.items()):
        parameters[name] = value
    lookups = json.loads(document.get("arm_parameters") or "{}")
    for name, spec in sorted(lookups.items()):
        parameters[name] = arm_field(spec, subscription)
    return json.dumps(parameters, indent=2, sort_keys=True) + "\n"


def fetched_project(source, name, base, log_file):
    """The release `source` names, fetched once under `base`, if its project.ini names `name` at that release."""
    release = source.rstrip("/").rsplit("/", 1)[-1]
    if not re.match(r"^[0-9]+\.[0-9]+\.[0-9]+$", release):
        raise ValueError("userData names no cyclecloud-slurm release: " + repr(source))
    folder = os.path.join(base, "slurm-" + release)
    if not os.path.isfile(os.path.join(folder, "project.ini")):
        if cyclecloud(["project", "fetch", source, folder + ".tmp"], log_file) != 0:
            raise RuntimeError("cyclecloud project fetch " + source + " failed")
        os.replace(folder + ".tmp", folder)
    ini = configparser.ConfigParser()
    try:
        ini.read(os.path.join(folder, "project.ini"))
    except configparser.Error:
        pass
    found = tuple(ini.get("project", k, fallback="") for k in ("name", "version"))
    if found != (name, release):
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError("fetched %r %r, not %s %s; not uploaded" % (found + (name, release)))
    return folder


def blob_digests(folder):
    """SHA-256 of each file in the fetch's blobs/ folder: the release's assets, what `cyclecloud project upload` sends
    (Azure/cyclecloud-slurm@50e6739:docker-package.sh l.22-46)."""
    blobs = os.path.join(folder, "blobs")
    found = {}
    for name in sorted(os.listdir(blobs)) if os.path.isdir(blobs) else []:
        digest = hashlib.sha256()
        with open(os.path.join(blobs, name), "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        found[name] = digest.hexdigest()
    return found


def differences(found, expected, against):
    """The files whose digests differ, one phrase each, or "" when none does."""
    wrong = sorted(n for n in set(found) | set(expected) if found.get(n) != expected.get(n))
    phrases = []
    for n in wrong:
        phrases.append(n + " (" + found.get(n, "missing")[:12] + ", " + against + " " + expected.get(n, "none")[:12] + ")")
    return ", ".join(phrases)


def verified(folder, document):
    """The fetched release, when userData pins its files by SHA-256 (compute.cyclecloud.slurm_project_sha256): every
    file in its blobs/ folder must be pinned, with that digest, and every pinned file present. On any difference the
    fetch is thrown away (the next run fetches again) and nothing is uploaded. Not specs/ (the scripts)."""
    pinned = json.loads(document.get("project_sha256") or "{}")
    if not pinned:
        return folder
    detail = differences(blob_digests(folder), pinned, "pinned")
    if detail:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError("cyclecloud-slurm release does not match its pinned SHA-256, not uploaded: " + detail)
    return folder


def locker_blob(spec, subscription, method, body=None):
    """Get Blob, or Put Blob only where none exists yet (If-None-Match: *, answered 409 BlobAlreadyExists otherwise:
    learn.microsoft.com/rest/api/storageservices/specifying-conditional-headers-for-blob-service-operations), with
    CycleCloud's identity, the one that writes the locker (publish_wheel)."""
    token = managed_token(spec["identity"], subscription, "https://storage.azure.com/")
    url = BLOB_URL.format(account=spec["account"]) + "/" + spec["container"] + "/" + spec["blob"]
    headers = {"Authorization": "Bearer " + token, "x-ms-version": STORAGE_API}
    if body is not None:
        headers.update({"x-ms-blob-type": "BlockBlob", "Content-Type": "application/json", "If-None-Match": "*"})
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def recorded(folder, document, subscription, log_file):
    """Trust on first use, recorded: the first server to fetch a release writes its files' SHA-256 to the locker
    (userData's `project_record`) and its log; every later fetch (a rebuilt server, a re-upload) must match that
    record, or it is thrown away and nothing is uploaded. Pinned digests (checked by `verified` first) must match the
    record too. Without a record location (no CycleCloud identity) nothing is recorded, and the log says so."""
    spec = json.loads(document.get("project_record") or "{}")
    release = document["project"].rstrip("/").rsplit("/", 1)[-1]
    found = blob_digests(folder)
    if not spec:
        log("cyclecloud-slurm " + release + ": no record location in userData, its SHA-256 not recorded", log_file)
        return folder
    where = spec["container"] + "/" + spec["blob"] + " in storage account " + spec["account"]
    try:
        record = json.loads(locker_blob(spec, subscription, "GET").decode())
    except urllib.error.HTTPError as exc:
        if exc.code != 404:  # BlobNotFound: no server fetched this release yet
            raise
        record = None
    pinned = json.loads(document.get("project_sha256") or "{}")
    if record is None:
        if not found:  # every release lists its files in project.ini [blobs] Files: an empty fetch is a broken one
            shutil.rmtree(folder, ignore_errors=True)
            raise RuntimeError(
                "cyclecloud-slurm " + release + ": the fetch holds no blobs/ files; nothing recorded or uploaded"
            )
        body = json.dumps({"source": document["project"], "sha256": found}, indent=1, sort_keys=True) + "\n"
        locker_blob(spec, subscription, "PUT", body.encode())
        for name, digest in sorted(found.items()):
            log("cyclecloud-slurm " + release + ": recorded " + name + " sha256 " + digest + " in " + where, log_file)
        return folder
    digests = record.get("sha256") if isinstance(record, dict) else None
    if not isinstance(digests, dict):
        raise RuntimeError("the record " + where + " holds no sha256 map; nothing uploaded")
    if pinned and differences(pinned, digests, "recorded"):
        raise RuntimeError(
            "compute.cyclecloud.slurm_project_sha256 disagrees with the digests recorded at the first fetch in "
            + where + ", not uploaded: " + differences(pinned, digests, "recorded")
        )
    detail = differences(found, digests, "recorded")
    if detail:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(
            "cyclecloud-slurm " + release + " differs from its first fetch recorded in " + where
            + ", not uploaded: " + detail
        )
    return folder


def account_document(document, subscription):
    """The account with each looked-up field (the orchestrating identity's client ID) read from ARM."""
    account = json.loads(document["account"].replace(PLACEHOLDER, subscription))
    lookups = json.loads(document.get("account_lookups") or "{}")
    for name, spec in sorted(lookups.items()):
        account[name] = arm_field(spec, subscription)
    return json.dumps(account, indent=2, sort_keys=True) + "\n"


def apply_account(document, subscription, state, project, log_file):
    source = document.get("project", "")
    key = "\n".join(
        (document["account"], document.get("account_lookups", ""), source, document["project_name"],
         document.get("project_sha256", ""), document.get("project_record", ""), subscription)
    )
    digest = hashlib.sha256(key.encode()).hexdigest()
    if digest == read(os.path.join(state, "account.sha256")):
        return
    account = account_document(document, subscription)
    path = os.path.join(state, "azure-account.json")
    write(path, account, 0o600)
    name = json.loads(account)["Name"]
    edited = cyclecloud(["account", "edit", name, "-f", path], log_file) == 0
    if not edited and cyclecloud(["account", "create", "-f", path], log_file) != 0:
        raise RuntimeError("the CycleCloud account " + name + " could not be created")
    await_locker(name + "-storage", log_file)
    folder = verified(fetched_project(source, document["project_name"], project, log_file), document)
    recorded(folder, document, subscription, log_file)
    if cyclecloud(["project", "upload", name + "-storage"], log_file, cwd=folder) != 0:
        raise RuntimeError("the Slurm project could not be uploaded to locker " + name + "-storage")
    write(os.path.join(state, "account.sha256"), digest + "\n")


def recent_versions(state, seen):
    """The secrets' versions the last Key Vault read recorded, if it saw the same userData and wheel less than
    VAULT_SECONDS ago; None: ask Key Vault."""
    try:
        with open(os.path.join(state, "vault-versions.json")) as handle:
            recorded = json.load(handle)
    except (OSError, ValueError):
        return None
    fresh = 0 <= time.time() - float(recorded.get("at", 0)) < VAULT_SECONDS
    return recorded.get("versions") if fresh and recorded.get("seen") == seen else None


def sync(state, project, log_file):
    user_data = imds(USER_DATA_URL)
    wheel = wheel_tag(log_file)
    document = decode(user_data)
    subscription = imds(SUBSCRIPTION_URL).strip()
    # A new wheel with the same userData is a change too: the scheduler must get its digest. So is a new version of a
    # secret parameter: the hash takes its identifier, never its value.
    seen = user_data + "\n" + "/".join(wheel or ()) + "\n"
    applied = read(os.path.join(state, "userdata.sha256"))
    versions = recent_versions(state, hashlib.sha256(seen.encode()).hexdigest())
    if versions is not None and hashlib.sha256((seen + versions).encode()).hexdigest() == applied:
        log("userData unchanged, secrets read less than " + str(int(VAULT_SECONDS)) + " s ago: nothing to do", log_file)
        return
    secrets = vault_secrets(document, subscription)
    versions = "/".join(secrets[name][1] for name in sorted(secrets))
    recorded = {"seen": hashlib.sha256(seen.encode()).hexdigest(), "at": time.time(), "versions": versions}
    write(os.path.join(state, "vault-versions.json"), json.dumps(recorded) + "\n", 0o600)
    digest = hashlib.sha256((seen + versions).encode()).hexdigest()
    if digest == applied:
        log("userData and secrets unchanged (sha256 " + digest[:12] + "): nothing to do", log_file)
        return
    log(
        "userData or a secret's version changed (sha256 " + (applied[:12] or "none") + " -> " + digest[:12]
        + "): re-importing", log_file
    )
    upgrade_cyclecloud(document, log_file)
    apply_account(document, subscription, state, project, log_file)
    template = os.path.join(state, "slurm-cluster.txt")
    parameters = os.path.join(state, "slurm-params.json")
    write(template, with_wheel(document["template"], wheel))
    # Owner-only: the parameters may hold a secret read from Key Vault.
    write(parameters, cluster_parameters(document, subscription, secrets), 0o600)
    cluster = document["cluster"]
    if cyclecloud(["import_cluster", cluster, "-f", template, "-p", parameters, "--force"], log_file) != 0:
        raise RuntimeError("import_cluster " + cluster + " failed")
    await_machine_types(cluster, log_file)
    if cyclecloud(["start_cluster", cluster], log_file) != 0:
        raise RuntimeError("start_cluster " + cluster + " failed")
    publish_wheel(document, subscription, wheel, log_file)
    write(os.path.join(state, "userdata.sha256"), digest + "\n")
    log("cluster " + cluster + " imported and started from userData sha256 " + digest[:12], log_file)


def main(argv):
    parser = argparse.ArgumentParser(prog="hpclz-cluster-sync")
    parser.add_argument("--state", default="/var/lib/hpclz/cluster-sync")
    parser.add_argument("--project", default="/opt/hpclz/projects")
    parser.add_argument("--log", default="/var/log/hpclz-cluster-sync.log")
    options = parser.parse_args(argv)
    os.makedirs(options.state, mode=0o700, exist_ok=True)
    with open(os.path.join(options.state, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the timer and the bootstrap's first run never overlap
        try:
            sync(options.state, options.project, options.log)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            log("failed, will retry on the next run: " + str(exc), options.log)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
