#!/usr/bin/env python3
"""hpclz-locker-get IDENTITY ACCOUNT CONTAINER BLOB OUT: download one blob of the CycleCloud locker account with a
managed identity, to OUT.

IDENTITY is a resource ID relative to the subscription ("resourceGroups/..."); the node's own subscription comes
from the instance metadata service. The token is for Azure Storage (resource https://storage.azure.com/), and a
request with a bearer token needs x-ms-version 2017-11-09 or later
(learn.microsoft.com/rest/api/storageservices/authorize-with-azure-active-directory). Retries while the role
assignment propagates. What arrives is not trusted: the caller checks its SHA-256.
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

# HPCLZ_IMDS_URL and HPCLZ_BLOB_URL point the script at local stand-ins (Azurite) in tests.
IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
BLOB_URL = os.environ.get("HPCLZ_BLOB_URL", "https://{account}.blob.core.windows.net")
STORAGE_API = "2021-08-06"
ATTEMPTS = int(os.environ.get("HPCLZ_LOCKER_ATTEMPTS", "30"))


def get(url, headers):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


def main(identity, account, container, blob, out):
    metadata = {"Metadata": "true"}
    query = "api-version=2021-02-01&format=text"
    subscription = get(IMDS + "/metadata/instance/compute/subscriptionId?" + query, metadata).decode().strip()
    token_query = urllib.parse.urlencode(
        {
            "api-version": "2018-02-01",
            "resource": "https://storage.azure.com/",
            "mi_res_id": "/subscriptions/" + subscription + "/" + identity,
        }
    )
    url = BLOB_URL.format(account=account) + "/" + container + "/" + urllib.parse.quote(blob)
    for attempt in range(ATTEMPTS):
        try:
            token = json.loads(get(IMDS + "/metadata/identity/oauth2/token?" + token_query, metadata).decode())
            headers = {"Authorization": "Bearer " + token["access_token"], "x-ms-version": STORAGE_API}
            body = get(url, headers)
            with open(out + ".part", "wb") as handle:
                handle.write(body)
            os.replace(out + ".part", out)
            return 0
        except (OSError, KeyError, ValueError) as exc:
            print("hpclz-locker-get: " + container + "/" + blob + ": " + str(exc), file=sys.stderr)
            if attempt + 1 < ATTEMPTS:
                time.sleep(min(10 * (attempt + 1), 60))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
