#!/usr/bin/env python3
"""hpclz-cc-users: keep CycleCloud's user numbers across a rebuilt server.

CycleCloud numbers its users itself ("CycleCloud autogenerates a UID and GID for users",
learn.microsoft.com/azure/cyclecloud/how-to/user-authentication; from 20000 up, .../how-to/user-management) in the
order they first sign in, and keeps the number in the user's AuthenticatedUser record in its own database, on the
server's data disk. A server created again from the Marketplace image starts with an empty database and would number
the same people anew, while their files on the shares keep the old owners.

  export   (hpclz-cluster-sync.service, every run of its timer) reads every user's record through
           `cycle_server execute --format json` (as CCWS queries CycleCloud: Azure/cyclecloud-slurm-workspace@bc0fc1b
           bicep/install.sh l.316-331) and, when it changed, writes Name, UID and the node and Entra ID names, and
           nothing else (no password hash, no key, no role), to the blob userData's `user_records` names in the
           locker, with CycleCloud's identity.
  restore  (the first boot's bootstrap, before CycleCloud starts) reads that blob back and writes the records as an
           AuthenticatedUser data file for CycleCloud to import from config/data, the way CCWS imports its users
           (Azure/cyclecloud-slurm-workspace@bc0fc1b: bicep/files-to-load/cyclecloud_install.py l.189-224, and the
           `UID = 19000` record install.sh writes): a user signing in to the new server finds its old number. No
           blob: nothing to restore. Two users with one number, or a user holding the number of the server's own
           service account: refused, exit 1, nothing written. Prints the admin's old UID, if the blob has one, for
           the bootstrap's own admin record.
Roles and Superuser are never carried: Entra ID's app roles grant them again at sign-in
(learn.microsoft.com/azure/cyclecloud/how-to/user-authentication), and the bootstrap gives the admin its own.
"""

import argparse
import base64
import gzip
import hashlib
import json
import lzma
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
USER_DATA_URL = IMDS + "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
SUBSCRIPTION_URL = IMDS + "/metadata/instance/compute/subscriptionId?api-version=2021-02-01&format=text"
BLOB_URL = os.environ.get("HPCLZ_BLOB_URL", "https://{account}.blob.core.windows.net")
STORAGE_API = "2021-08-06"
CYCLE_SERVER = os.environ.get("HPCLZ_CYCLE_SERVER", "/opt/cycle_server/cycle_server")
# A first boot may come before the locker answers: a data role granted in the same deployment can take up to 10
# minutes to take effect (learn.microsoft.com/azure/role-based-access-control/troubleshooting, role assignment
# changes not detected). Restore asks again for 10 minutes, 60 times 10 s apart, then stops the bootstrap rather than
# let CycleCloud number users anew.
TRIES = 60
POLL = float(os.environ.get("HPCLZ_POLL_SECONDS", "10"))
# The fields carried: the AuthenticatedUser fields CCWS itself writes for a user (install.sh's cc-vm-mi record:
# Name, UID, NodeUserName, Authentication, EntraTID, EntraOID) that say who a user is and which number it has.
FIELDS = ("Name", "UID", "NodeUserName", "Authentication", "EntraTID", "EntraOID")
QUERY = "SELECT " + ", ".join(FIELDS) + ", ServiceAccount FROM AuthenticatedUser"
# The bootstrap's service account for the server's identity (cyclecloud-bootstrap.sh, as CCWS's install.sh): made
# again on every new server, so never carried, and no user may hold its number.
SERVICE_UID = 19000


def imds(url):
    request = urllib.request.Request(url, headers={"Metadata": "true"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def spec():
    """userData's `user_records` ({"account", "container", "blob", "identity"}), or None where it names none."""
    data = base64.b64decode(imds(USER_DATA_URL).strip())
    if data[:6] == b"\xfd7zXZ\x00":  # xz, as hpclz packs it (hpclz.render.payload)
        data = lzma.decompress(data)
    elif data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    text = json.loads(data.decode()).get("user_records")
    return json.loads(text) if text else None


def blob_request(where, method, body=None):
    """Get or Put Blob (learn.microsoft.com/rest/api/storageservices/get-blob, .../put-blob) with the identity the
    spec names (token audience https://storage.azure.com/, learn.microsoft.com/entra/identity/
    managed-identities-azure-resources/how-to-use-vm-token)."""
    subscription = imds(SUBSCRIPTION_URL).strip()
    query = urllib.parse.urlencode(
        {
            "api-version": "2018-02-01",
            "resource": "https://storage.azure.com/",
            "mi_res_id": "/subscriptions/" + subscription + "/" + where["identity"],
        }
    )
    token = json.loads(imds(IMDS + "/metadata/identity/oauth2/token?" + query))["access_token"]
    url = BLOB_URL.format(account=where["account"]) + "/" + where["container"] + "/" + where["blob"]
    headers = {"Authorization": "Bearer " + token, "x-ms-version": STORAGE_API}
    if body is not None:
        headers.update({"x-ms-blob-type": "BlockBlob", "Content-Type": "application/json"})
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def current_records():
    done = subprocess.run(
        [CYCLE_SERVER, "execute", "--format", "json", QUERY],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    if done.returncode != 0:
        raise RuntimeError("cycle_server execute failed (" + str(done.returncode) + "): " + done.stderr.strip()[-300:])
    users = []
    for row in json.loads(done.stdout or "[]"):
        uid = number(row.get("UID"))
        # A user who never reached a node may have no UID yet: nothing to keep.
        if row.get("ServiceAccount") or not row.get("Name") or uid is None:
            continue
        users.append(dict({k: row[k] for k in FIELDS if row.get(k) is not None}, UID=uid))
    return sorted(users, key=lambda u: u["Name"])


def number(value):
    """A UID as a number, whether the JSON answer carries 20001, 20001.0 or "20001"; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def export(state):
    where = spec()
    if where is None:
        print("hpclz-cc-users: userData names no user_records (no CycleCloud identity): nothing exported")
        return 0
    body = (json.dumps(current_records(), indent=1, sort_keys=True) + "\n").encode()
    digest = hashlib.sha256(body).hexdigest()
    last = os.path.join(state, "users.sha256")
    try:
        with open(last) as handle:
            if handle.read().strip() == digest:
                return 0
    except FileNotFoundError:
        pass
    blob_request(where, "PUT", body)
    os.makedirs(state, mode=0o700, exist_ok=True)
    with open(last, "w") as handle:
        handle.write(digest + "\n")
    print("hpclz-cc-users: exported " + str(len(json.loads(body.decode()))) + " user record(s)")
    return 0


def checked(users):
    """The records, or a one-line refusal when two names share a number or one takes the service account's."""
    owners = {}
    for user in users:
        if not isinstance(user, dict) or not isinstance(user.get("Name"), str) or not isinstance(user.get("UID"), int):
            raise ValueError("a record without a Name and a numeric UID: " + json.dumps(user)[:200])
        owners.setdefault(user["UID"], []).append(user["Name"])
    for uid, names in sorted(owners.items()):
        if len(names) > 1:
            raise ValueError("UID " + str(uid) + " belongs to " + " and ".join(sorted(names)))
        if uid == SERVICE_UID:
            raise ValueError("UID " + str(uid) + " of " + names[0] + " is the server's service account's (cc-vm-mi)")
    return users


def restore(admin, out):
    where = spec()
    if where is None:
        return 0
    users = None
    for attempt in range(1, TRIES + 1):
        try:
            users = json.loads(blob_request(where, "GET").decode())
            break
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # BlobNotFound: no server exported users yet, a first deployment
                return 0
            if attempt == TRIES:
                raise
        except OSError:
            if attempt == TRIES:
                raise
        time.sleep(POLL)
    users = checked(users if isinstance(users, list) else [users])
    records = []
    for user in users:
        if user["Name"] == admin:
            print(user["UID"])  # the bootstrap's admin record takes it
            continue
        records.append(dict({k: user[k] for k in FIELDS if k in user}, AdType="AuthenticatedUser"))
    if records:
        with open(out + ".tmp", "w") as handle:
            json.dump(records, handle, indent=1, sort_keys=True)
        os.replace(out + ".tmp", out)
    sys.stderr.write("hpclz-cc-users: " + str(len(records)) + " user record(s) to import with their UIDs\n")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="hpclz-cc-users")
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("export")
    run.add_argument("--state", default="/var/lib/hpclz/cc-users")
    back = commands.add_parser("restore")
    back.add_argument("--admin", required=True)
    back.add_argument("--out", required=True)
    options = parser.parse_args(argv)
    try:
        if options.command == "export":
            return export(options.state)
        if options.command == "restore":
            return restore(options.admin, options.out)
    except ValueError as exc:
        sys.stderr.write("hpclz-cc-users " + options.command + ": refused, nothing written: " + str(exc) + "\n")
        return 1
    except (OSError, KeyError, RuntimeError) as exc:
        sys.stderr.write("hpclz-cc-users " + options.command + ": failed: " + str(exc) + "\n")
        return 1
    parser.print_usage(sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
