#!/usr/bin/env python3
"""hpclz-prometheus-url IDENTITY RULE ENDPOINT: print the remote-write URL and the identity's client ID.

Prometheus signs its remote writes in with a managed identity's client ID and writes to the data collection
endpoint's metrics ingestion URL for the rule's immutable ID; Azure assigns all three at deployment, so the node
reads them from ARM at boot with that identity (Reader on itself, the rule and the endpoint). IDENTITY, RULE and
ENDPOINT are resource IDs relative to the subscription ("resourceGroups/..."); the subscription comes from the
instance metadata service. Retries while the resources are still provisioning. HPCLZ_IMDS and HPCLZ_ARM point
it at other endpoints (tests).
"""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

IMDS = os.environ.get("HPCLZ_IMDS", "http://169.254.169.254/metadata")
ARM = os.environ.get("HPCLZ_ARM", "https://management.azure.com")
# API versions of the reads: data collection rules and endpoints, user-assigned identities.
DATA_COLLECTION_API = "2024-03-11"
IDENTITY_API = "2023-01-31"
# The stream and API version of Azure Monitor's Prometheus remote-write path, as CCWS's monitoring builds it
# (Azure/cyclecloud-monitoring@3da922e:infra/ingestionEndpoint.bicep).
WRITE_PATH = "/dataCollectionRules/{}/streams/Microsoft-PrometheusMetrics/api/v1/write?api-version=2023-04-24"


def get(url, headers):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read().decode())


def field(node, path):
    for part in path.split("."):
        node = node[part]
    return node


def lookup(identity, rule, endpoint):
    metadata = {"Metadata": "true"}
    subscription = get(IMDS + "/instance/compute?api-version=2021-02-01", metadata)["subscriptionId"]
    prefix = "/subscriptions/" + subscription + "/"
    query = urllib.parse.urlencode(
        {"api-version": "2018-02-01", "resource": "https://management.azure.com/", "mi_res_id": prefix + identity}
    )
    token = get(IMDS + "/identity/oauth2/token?" + query, metadata)["access_token"]
    auth = {"Authorization": "Bearer " + token}

    def read(resource, api, path):
        return field(get(ARM + prefix + resource + "?api-version=" + api, auth), path)

    client_id = read(identity, IDENTITY_API, "properties.clientId")
    immutable = read(rule, DATA_COLLECTION_API, "properties.immutableId")
    ingest = read(endpoint, DATA_COLLECTION_API, "properties.metricsIngestion.endpoint")
    return ingest.rstrip("/") + WRITE_PATH.format(immutable), client_id


def main(identity, rule, endpoint, attempts="60"):
    for attempt in range(int(attempts)):
        try:
            url, client_id = lookup(identity, rule, endpoint)
            print(url + " " + client_id)
            return 0
        except (OSError, KeyError, ValueError) as exc:
            print("hpclz-prometheus-url: waiting: " + str(exc), file=sys.stderr)
            time.sleep(min(10 * (attempt + 1), 60))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
