#!/usr/bin/env python3
"""hpclz-server-programs: install this CycleCloud server's own hpclz programs from the hpclz wheel in the locker.

The server's customData cannot change once the VM exists (Microsoft.Compute OSProfile.customData: "This property
cannot be updated after the VM is created"), so it carries only the one-time bootstrap and this loader, whose text
does not follow hpclz's programs. hpclz-cluster-sync and hpclz-cc-users come from the wheel `hpclz deploy` puts in the
locker for the scheduler (package data under hpclz/_data/templates/cloud-init/), the one this VM's hpclz-wheel tag
names as "<sha256>/<file name>" (read from the instance metadata service's tagsList, which follows a tag changed in
place: learn.microsoft.com/azure/virtual-machines/instance-metadata-service). The wheel is read with the identity
userData's `wheel_locker` names (CycleCloud's, which holds a data role on the locker), token audience
https://storage.azure.com/, and a request with a bearer token needs x-ms-version 2017-11-09 or later
(learn.microsoft.com/rest/api/storageservices/authorize-with-azure-active-directory).

Run by hpclz-cluster-sync.service before the programs (ExecStartPre), so a newer hpclz's programs run from the next
timer tick on. Atomic: every program is written beside its installed copy, compiled, and only when all are good are
they renamed over the installed ones, then the wheel's digest is recorded. A failed fetch, a wheel whose SHA-256 is not
the tag's, or a program that does not compile keeps the installed version and logs one line; exit 0 while every
program is installed, so the sync runs the version it has.

--first-boot (the bootstrap, before anything needs a program): waits until the programs are installed. The wheel may
reach the locker only after this VM exists: `hpclz deploy` stages it through this VM with managed Run Commands when the
locker's network refuses the deploying machine (hpclz.deploy.wheel_staging), and the VM reports itself provisioned
before the stage that runs the bootstrap ("After this stage [init], cloud-init sends a signal to the Azure platform
that the VM has been provisioned successfully", then the config and final stages: MicrosoftDocs/azure-compute-docs
@883ff7b articles/virtual-machines/linux/cloud-init-deep-dive.md). A deploy interrupted before the wheel reached the
locker stages it on its next run, so the wait has no end of its own; each try is logged.
"""

import argparse
import base64
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import sys
import time
import urllib.parse
import urllib.request
import zipfile

# HPCLZ_IMDS_URL and HPCLZ_BLOB_URL point the loader at local stand-ins in tests.
IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
USER_DATA_URL = IMDS + "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
SUBSCRIPTION_URL = IMDS + "/metadata/instance/compute/subscriptionId?api-version=2021-02-01&format=text"
TAGS_URL = IMDS + "/metadata/instance/compute/tagsList?api-version=2021-02-01"
BLOB_URL = os.environ.get("HPCLZ_BLOB_URL", "https://{account}.blob.core.windows.net")
STORAGE_API = "2021-08-06"
WHEEL_TAG = "hpclz-wheel"
WHEEL = re.compile(r"^([0-9a-f]{64})/(hpclz-[A-Za-z0-9_.]+-py3-none-any\.whl)$")
# Where the wheel keeps hpclz's templates (hpclz.package_data: hpclz/_data/templates; tests/test_wheel.py).
MEMBER = "hpclz/_data/templates/cloud-init/"
# Each program: its file in the wheel, and the name it is installed under in --bin.
PROGRAMS = (("cluster_sync.py", "hpclz-cluster-sync"), ("cc_users.py", "hpclz-cc-users"))
INSTALLED = ".programs.sha256"  # in --bin: the digest of the wheel the installed programs came from
POLL = float(os.environ.get("HPCLZ_POLL_SECONDS", "30"))
# The programs go beside this loader (/opt/hpclz/bin); HPCLZ_SERVER_PROGRAMS_LOG points the log elsewhere in tests.
HERE = os.path.dirname(os.path.abspath(__file__))
LOG = os.environ.get("HPCLZ_SERVER_PROGRAMS_LOG", "/var/log/hpclz-server-programs.log")


def log(line, log_file):
    stamped = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + " hpclz-server-programs: " + line
    print(stamped, flush=True)
    with open(log_file, "a") as handle:
        handle.write(stamped + "\n")


def get(url, headers):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


def imds(url):
    return get(url, {"Metadata": "true"}).decode()


def wheel_tag():
    """The VM's hpclz-wheel tag as (sha256, file name)."""
    tags = json.loads(imds(TAGS_URL))
    value = next((str(t.get("value", "")) for t in tags if t.get("name") == WHEEL_TAG), "")
    match = WHEEL.match(value)
    if not match:
        raise ValueError("tag " + WHEEL_TAG + " is " + (repr(value[:120]) if value else "not set") + ": no hpclz wheel")
    return match.group(1), match.group(2)


def locker():
    """userData's `wheel_locker` (account, container, identity); userData as hpclz.render.payload packs it."""
    raw = base64.b64decode(imds(USER_DATA_URL).strip())
    if raw[:6] == b"\xfd7zXZ\x00":
        raw = lzma.decompress(raw)
    elif raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    spec = json.loads(json.loads(raw.decode()).get("wheel_locker") or "{}")
    if not spec:
        raise ValueError("userData names no wheel_locker: nowhere to take the programs from")
    return spec


def fetch(spec, blob):
    subscription = imds(SUBSCRIPTION_URL).strip()
    query = urllib.parse.urlencode(
        {
            "api-version": "2018-02-01",
            "resource": "https://storage.azure.com/",
            "mi_res_id": "/subscriptions/" + subscription + "/" + spec["identity"],
        }
    )
    token = json.loads(imds(IMDS + "/metadata/identity/oauth2/token?" + query))["access_token"]
    url = BLOB_URL.format(account=spec["account"]) + "/" + spec["container"] + "/" + urllib.parse.quote(blob)
    return get(url, {"Authorization": "Bearer " + token, "x-ms-version": STORAGE_API})


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return ""


def installed(folder):
    return all(os.path.isfile(os.path.join(folder, name)) for _, name in PROGRAMS)


def install(folder, log_file):
    """The tag's wheel's programs into `folder`, unless they came from that wheel already."""
    digest, name = wheel_tag()
    if read(os.path.join(folder, INSTALLED)) == digest and installed(folder):
        return
    data = fetch(locker(), digest + "/" + name)
    actual = hashlib.sha256(data).hexdigest()
    if actual != digest:
        raise ValueError("refused " + name + ": its SHA-256 is " + actual + ", the tag says " + digest)
    written = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as wheel:
            for source, target in PROGRAMS:
                text = wheel.read(MEMBER + source)
                compile(text, target, "exec")  # a SyntaxError keeps the installed programs
                path = os.path.join(folder, target)
                written.append(path)
                fd = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(text)
    except BaseException:
        for path in written:
            if os.path.exists(path + ".new"):
                os.remove(path + ".new")
        raise
    for path in written:
        os.replace(path + ".new", path)
    with open(os.path.join(folder, INSTALLED + ".new"), "w") as handle:
        handle.write(digest + "\n")
    os.replace(os.path.join(folder, INSTALLED + ".new"), os.path.join(folder, INSTALLED))
    log("installed " + ", ".join(t for _, t in PROGRAMS) + " from " + name + " (sha256 " + digest[:12] + ")", log_file)


def main(argv):
    parser = argparse.ArgumentParser(prog="hpclz-server-programs")
    parser.add_argument("--bin", default=HERE)
    parser.add_argument("--log", default=LOG)
    parser.add_argument("--first-boot", action="store_true", help="wait until the programs are installed")
    options = parser.parse_args(argv)
    while True:
        try:
            install(options.bin, options.log)
            return 0
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, SyntaxError) as exc:
            have = installed(options.bin)
            kept = "kept the installed programs" if have else "no programs installed yet"
            log(kept + ": " + str(exc), options.log)
            if have or not options.first_boot:
                return 0 if have else 1
        time.sleep(POLL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
