"""A loopback stand-in for what hpclz-job-storage asks of Azure: the node's instance metadata service (subscription,
the compute identity's storage token) and the account's Get User Delegation Key (learn.microsoft.com/rest/api/
storageservices/get-user-delegation-key: POST /<account>/?restype=service&comp=userdelegationkey, path-style as
Azurite's URLs are, KeyInfo Start/Expiry in, UserDelegationKey out). The program reaches it through HPCLZ_IMDS_URL
and HPCLZ_BLOB_URL. It signs nothing: a test compares the program's tokens with azure-storage-blob's."""

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

    def do_GET(self) -> None:
        if self.refuse or self.headers.get("Metadata") != "true":
            self.answer(None)
        elif self.path.startswith("/metadata/instance/compute/subscriptionId"):
            self.answer("00000000-0000-0000-0000-000000000001")
        elif self.path.startswith("/metadata/identity/oauth2/token"):
            assert "resource=https%3A%2F%2Fstorage.azure.com%2F" in self.path
            assert "mi_res_id=%2Fsubscriptions%2F00000000-0000-0000-0000-000000000001%2FresourceGroups" in self.path
            self.answer(json.dumps({"access_token": "compute-token"}))
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
