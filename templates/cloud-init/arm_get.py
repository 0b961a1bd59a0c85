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
    for attempt in range(60):
        try:
            node = json.loads(get(url, {"Authorization": "Bearer " + token}))
            for part in field.split("."):
                node = node[int(part)] if isinstance(node, list) else node[part]
            print(node)
            return 0
        except (OSError, KeyError, IndexError, ValueError) as exc:
            print("hpclz-arm-get: waiting for " + field + ": " + str(exc), file=sys.stderr)
            time.sleep(min(10 * (attempt + 1), 60))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
