#!/usr/bin/env python3
"""hpclz-prometheus-url IDENTITY RULE ENDPOINT API: print the remote-write URL and the identity's client ID.

Prometheus signs its remote writes in with a managed identity's client ID, and writes to the data collection
endpoint's metrics ingestion URL for the rule's immutable ID; Azure assigns both at deployment, so the node
asks for them at boot. IDENTITY, RULE and ENDPOINT are resource IDs relative to the subscription
("resourceGroups/..."); the subscription comes from the instance metadata service, the client ID from the
token it issues. Retries while the resources are still provisioning.
"""

import json
import sys
import time
import urllib.parse
import urllib.request

IMDS = "http://169.254.169.254/metadata"
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


def main(identity, rule, endpoint, api):
    metadata = {"Metadata": "true"}
    compute = get(IMDS + "/instance/compute?api-version=2021-02-01", metadata)
    prefix = "/subscriptions/" + compute["subscriptionId"] + "/"
    query = urllib.parse.urlencode(
        {"api-version": "2018-02-01", "resource": "https://management.azure.com/", "mi_res_id": prefix + identity}
    )
    for attempt in range(60):
        try:
            token = get(IMDS + "/identity/oauth2/token?" + query, metadata)
            auth = {"Authorization": "Bearer " + token["access_token"]}
            arm = "https://management.azure.com" + prefix
            immutable = field(get(arm + rule + "?api-version=" + api, auth), "properties.immutableId")
            ingest = field(get(arm + endpoint + "?api-version=" + api, auth), "properties.metricsIngestion.endpoint")
            print(ingest.rstrip("/") + WRITE_PATH.format(immutable) + " " + token["client_id"])
            return 0
        except (OSError, KeyError, ValueError) as exc:
            print("hpclz-prometheus-url: waiting: " + str(exc), file=sys.stderr)
            time.sleep(min(10 * (attempt + 1), 60))
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
