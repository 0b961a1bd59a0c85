"""A loopback stand-in for what hpclz-job-storage asks of Azure: the node's instance metadata service (subscription,
the compute identity's storage token) and the account's Get User Delegation Key (learn.microsoft.com/rest/api/
storageservices/get-user-delegation-key: POST /<account>/?restype=service&comp=userdelegationkey, path-style as
Azurite's URLs are, KeyInfo Start/Expiry in, UserDelegationKey out), and a vault's Get Secret (GET
/vault/secrets/<name>?api-version=..., {"value": ...} out: learn.microsoft.com/rest/api/keyvault/secrets/get-secret/
get-secret) for the compute identity's Key Vault token alone, 403 for a secret in `forbidden`. The program reaches it
through HPCLZ_IMDS_URL, HPCLZ_BLOB_URL and its config's vault_url. It signs nothing: a test compares the program's
tokens with azure-storage-blob's."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ElementTree
from typing import ClassVar

from tests.support.local_http import FakeService

ACCOUNT = "staitrainprodeus2a1"
KEY = {
    "SignedOid": "6b3e5a40-0e0c-4c55-9b8f-6a1f0e2d3c4b",
    "SignedTid": "72f988bf-86f1-41af-91ab-2d7cd011db47",
    "SignedStart": "2026-11-27T19:55:00Z",
    "SignedExpiry": "2026-12-04T19:55:00Z",
    "SignedService": "b",
    "SignedVersion": "2026-10-06",
    "Value": base64.b64encode(bytes(range(32))).decode(),
}


class DelegationStandIn(FakeService):
    """The node's metadata service and the account's Get User Delegation Key, on one loopback port."""

    keys: ClassVar[list[dict[str, str]]] = []
    refuse = False
    secrets: ClassVar[dict[str, str]] = {}
    forbidden: ClassVar[set[str]] = set()
    vault_calls: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if self.path.startswith("/vault/secrets/"):
            self._secret()
        elif self.refuse or self.headers.get("Metadata") != "true":
            self.answer(None)
        elif self.path.startswith("/metadata/instance/compute/subscriptionId"):
            self.answer("00000000-0000-0000-0000-000000000001")
        elif self.path.startswith("/metadata/identity/oauth2/token"):
            assert "mi_res_id=%2Fsubscriptions%2F00000000-0000-0000-0000-000000000001%2FresourceGroups" in self.path
            if "resource=https%3A%2F%2Fvault.azure.net&" in self.path + "&":
                self.answer(json.dumps({"access_token": "compute-vault-token"}))
            else:
                assert "resource=https%3A%2F%2Fstorage.azure.com%2F" in self.path
                self.answer(json.dumps({"access_token": "compute-token"}))
        else:
            self.answer(None)

    def _secret(self) -> None:
        name, _, query = self.path[len("/vault/secrets/") :].partition("?")
        type(self).vault_calls.append(self.path)
        if self.headers.get("Authorization") != "Bearer compute-vault-token" or name in self.forbidden:
            self.send_response(403)
            self.end_headers()
            self.wfile.write(json.dumps({"error": {"code": "Forbidden", "message": f"denied {name}"}}).encode())
        elif name in self.secrets and query == "api-version=2025-07-01":
            self.answer(json.dumps({"value": self.secrets[name], "id": f"https://vault/secrets/{name}/1"}))
        else:
            self.answer(None)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        if self.path != f"/{ACCOUNT}/?restype=service&comp=userdelegationkey" or self.headers["Authorization"] != (
            "Bearer compute-token"
        ):
            self.answer(None)
            return
        info = ElementTree.fromstring(body)
        start, expiry = info.findtext("Start") or "", info.findtext("Expiry") or ""
        key = {**KEY, "SignedStart": start, "SignedExpiry": expiry}
        type(self).keys.append(key)
        fields = "".join(f"<{name}>{value}</{name}>" for name, value in key.items())
        self.answer(f'<?xml version="1.0" encoding="utf-8"?><UserDelegationKey>{fields}</UserDelegationKey>')
