#!/usr/bin/env python3
"""hpclz-portal-secret VAULT NAME: print one Key Vault secret, read with the VM's system-assigned identity.

The portal's Key Vault Secrets User role is granted after the VM exists (the portal deployment assigns it to the
VM's own identity), and Azure RBAC takes minutes to reach the data plane, so 401/403 are waited out, as is a
secret not written yet. The value goes to stdout only, never to a log.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# HPCLZ_IMDS_URL and HPCLZ_VAULT_URL ("http://host:port/{vault}") point the helper at local stand-ins in tests.
IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
VAULT_URL = os.environ.get("HPCLZ_VAULT_URL", "https://{vault}.vault.azure.net")
# Get Secret, latest version: https://learn.microsoft.com/en-us/rest/api/keyvault/secrets/get-secret/get-secret
VAULT_API = "7.4"
# Waited out: the role not yet effective (401/403: Forbidden, ForbiddenByRbac) and the secret not yet written
# (404: SecretNotFound), https://learn.microsoft.com/en-us/azure/key-vault/general/rest-error-codes
RETRY_STATUS = (401, 403, 404, 429, 500, 502, 503, 504)


def fetch(url, headers):
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read().decode())


def token():
    """Token for Key Vault from the instance metadata service, for the VM's only (system-assigned) identity:
    https://learn.microsoft.com/en-us/entra/identity/managed-identities-azure-resources/how-to-use-vm-token"""
    query = urllib.parse.urlencode({"api-version": "2018-02-01", "resource": "https://vault.azure.net"})
    return fetch(IMDS + "/metadata/identity/oauth2/token?" + query, {"Metadata": "true"})["access_token"]


def read_secret(vault, name, attempts, pause):
    url = VAULT_URL.format(vault=vault) + "/secrets/" + urllib.parse.quote(name) + "?api-version=" + VAULT_API
    for attempt in range(attempts):
        try:
            return fetch(url, {"Authorization": "Bearer " + token()})["value"]
        except urllib.error.HTTPError as exc:
            if exc.code not in RETRY_STATUS:
                raise
            print("hpclz-portal-secret: " + name + ": HTTP " + str(exc.code) + ", waiting", file=sys.stderr)
        except (OSError, KeyError, ValueError) as exc:
            print("hpclz-portal-secret: " + name + ": " + type(exc).__name__ + ", waiting", file=sys.stderr)
        time.sleep(min(pause * (attempt + 1), 60))
    return None


def main(argv):
    if len(argv) != 3:
        print("usage: hpclz-portal-secret VAULT NAME", file=sys.stderr)
        return 2
    attempts = int(os.environ.get("HPCLZ_SECRET_ATTEMPTS", "90"))
    pause = float(os.environ.get("HPCLZ_SECRET_PAUSE", "10"))
    value = read_secret(argv[1], argv[2], attempts, pause)
    if value is None:
        print("hpclz-portal-secret: " + argv[2] + ": gave up", file=sys.stderr)
        return 1
    sys.stdout.write(value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
