#!/usr/bin/env python3
"""hpclz-arm-get IDENTITY RESOURCE API FIELD: print one field of an ARM resource, read with a managed identity.

IDENTITY and RESOURCE are resource IDs relative to the subscription ("resourceGroups/..."); the node's
own subscription comes from the instance metadata service. Retries while the resource is still provisioning.
"""

import json
import sys
import time
import urllib.parse
import urllib.request

IMDS = "http://169.254.169.254/metadata"
# How long to keep asking. A node must register with slurmctld within ResumeTimeout=1800 s of its power-up, or Slurm
# marks it down and requeues its job (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/templates/
# slurm.conf.template l.45; slurm.conf(5) ResumeTimeout), and the mounts wait in its boot script before slurmd
# starts; the usual reason to wait is a role assignment not yet in effect, which "can take up to 10 minutes"
# (learn.microsoft.com/azure/role-based-access-control/troubleshooting, "Role assignment changes are not being
# detected"). So a little over that, and no more: the node then starts without the mount, which its health check
# reports by draining it.
DEADLINE_S = 900


def delays(deadline_s=DEADLINE_S):
    """The waits between tries: 10 s more each time up to 60 s, all of them within deadline_s."""
    waits, total = [], 0
    while True:
        wait = min(10 * (len(waits) + 1), 60)
        if total + wait > deadline_s:
            return waits
        waits.append(wait)
        total += wait


def get(url, headers):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def main(identity, resource, api, field):
    subscription = get(IMDS + "/instance/compute/subscriptionId?api-version=2021-02-01&format=text", {"Metadata": "true"})
    prefix = "/subscriptions/" + subscription + "/"
    query = urllib.parse.urlencode(
        {"api-version": "2018-02-01", "resource": "https://management.azure.com/", "mi_res_id": prefix + identity}
    )
    token = json.loads(get(IMDS + "/identity/oauth2/token?" + query, {"Metadata": "true"}))["access_token"]
    url = "https://management.azure.com" + prefix + resource + "?api-version=" + api
    started = time.monotonic()
    for wait in [*delays(), None]:
        try:
            node = json.loads(get(url, {"Authorization": "Bearer " + token}))
            for part in field.split("."):
                node = node[int(part)] if isinstance(node, list) else node[part]
            print(node)
            return 0
        except (OSError, KeyError, IndexError, ValueError) as exc:
            print("hpclz-arm-get: waiting for " + field + ": " + str(exc), file=sys.stderr)
        # Each try may itself take up to its 30 s timeout: the deadline counts from the first one.
        if wait is None or time.monotonic() - started + wait > DEADLINE_S:
            break
        time.sleep(wait)
    print("hpclz-arm-get: gave up on " + field + " after " + str(DEADLINE_S) + " s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
