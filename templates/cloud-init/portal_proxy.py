#!/usr/bin/env python3
"""hpclz-portal-proxy CONFIG: keep Open OnDemand's interactive-app proxy settings (host_regex, node_uri, rnode_uri in
ood_portal.yml) equal to the ones this VM's userData carries.

Which hosts the proxy may reach follows the cluster's partitions (hpclz.render.portal.host_regex), and partitions
change after the portal exists. The boot script (customData) cannot change after the VM is created; userData can, in
place, and the instance metadata service serves it, base64-encoded
(learn.microsoft.com/azure/virtual-machines/user-data, "Retrieving user data"), as it does for the CycleCloud
server's cluster sync. A systemd timer runs this at boot and every few minutes.

The three keys are rewritten in place; every other line (the OIDC settings, the crypto passphrase) is kept as is.
Exit status: 0 unchanged, 2 changed (the caller regenerates Apache's config), 1 error (nothing written).
Python 3.6 and the standard library only, like every node helper.
"""

import base64
import json
import os
import re
import sys
import urllib.request

IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
USER_DATA_URL = IMDS + "/metadata/instance/compute/userData?api-version=2021-01-01&format=text"
KEYS = ("host_regex", "node_uri", "rnode_uri")
CHANGED = 2


def settings(user_data):
    """The three settings from userData's JSON document; ValueError when it is not hpclz's portal document."""
    document = json.loads(base64.b64decode(user_data.strip()).decode())
    if document.get("kind") != "hpclz-portal-proxy":
        raise ValueError("userData is not an hpclz portal proxy document")
    out = {}
    for key in KEYS:
        value = document.get(key)
        if not isinstance(value, str) or not value or "\n" in value:
            raise ValueError("userData has no usable " + key)
        out[key] = value
    try:
        re.compile(out["host_regex"])
    except re.error as error:
        raise ValueError("userData's host_regex is no regular expression: " + str(error))
    return out


def rewritten(text, wanted):
    """ood_portal.yml with the three keys set to `wanted` (JSON strings are YAML strings), every other line kept."""
    pattern = re.compile(r"^(" + "|".join(KEYS) + r"):")
    kept = [line for line in text.splitlines() if not pattern.match(line)]
    return "\n".join(kept + [key + ": " + json.dumps(wanted[key]) for key in KEYS]) + "\n"


def main(argv):
    if len(argv) != 1:
        print("usage: hpclz-portal-proxy /etc/ood/config/ood_portal.yml", file=sys.stderr)
        return 1
    path = argv[0]
    request = urllib.request.Request(USER_DATA_URL, headers={"Metadata": "true"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            wanted = settings(response.read().decode())
        with open(path) as handle:
            current = handle.read()
    except (OSError, ValueError) as error:
        print("hpclz-portal-proxy: " + str(error), file=sys.stderr)
        return 1
    text = rewritten(current, wanted)
    if text == current:
        return 0
    # Written aside with the file's own mode (it holds the OIDC secrets, root-only), then moved over it whole.
    temporary = path + ".hpclz-new"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, os.stat(path).st_mode & 0o777)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.replace(temporary, path)
    print("hpclz-portal-proxy: host_regex " + wanted["host_regex"])
    return CHANGED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
