"""User delegation keys and user delegation SAS on a storage account's Blob front (data_planes.BlobFront).

Get User Delegation Key (learn.microsoft.com/rest/api/storageservices/get-user-delegation-key): `POST
/<account>/?restype=service&comp=userdelegationkey` with a KeyInfo body (Start, Expiry), "Only authorization with
Microsoft Entra ID is supported". The caller needs `Microsoft.Storage/storageAccounts/blobServices/
generateUserDelegationKey/action`, and "because the Get User Delegation Key operation acts at the level of the storage
account, the ... action must be scoped at the level of the storage account, the resource group, or the subscription"
(learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas, "Assign permissions with RBAC"; the same
page's copy stored as MicrosoftDocs at ms.date 03/16/2022): a role scoped to a container gives no key. The key is
valid "for a period of up to seven days" (same page, "Request the user delegation key").

A request that carries a user delegation SAS (skoid, sktid, skt, ske, sks, skv ... in its query) is judged as the same
page describes: its signature is an HMAC-SHA256, with the key, of the string-to-sign of its `sv`; the SAS is valid from
st to se; "if a client attempts to use an SAS after the user delegation key has expired, the SAS will fail with an
authorization error" ("Specify the duration of signature validity"); and "the permissions granted to a client who
possesses the SAS are the intersection of the permissions that were granted to the security principal that requested
the user delegation key and the permissions that were granted to the resource on the SAS token" ("Authorize a user
delegation SAS"), the principal's role assignments being read at use time: "when a client uses the SAS to access a
resource, Azure Storage verifies that the security principal whose credentials were used to secure the SAS has the
required permissions to the resource" ("Change or remove role assignments").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit

GENERATE_KEY = "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action"
# Blob data actions (learn.microsoft.com/azure/role-based-access-control/permissions/storage, Microsoft.Storage
# DataActions): List Blobs is authorized by blobs/read.
BLOB_READ = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"
BLOB_WRITE = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"
BLOB_DELETE = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete"
MAX_KEY_LIFETIME = timedelta(days=7)
# What makes a query a user delegation SAS: the key fields the create-user-delegation-sas page marks required.
MARKERS = ("skoid", "sktid", "ske", "sks", "skv", "sig")
# Every SAS field (the page's field table, and the newer ones azure-storage-blob 12.31.1 writes: skdutid, sduoid, srh,
# srq), taken off before the call goes on to Azurite with the front's own account-key SAS.
SAS_FIELDS = frozenset(
    [
        "sv",
        "sr",
        "sp",
        "st",
        "se",
        "sip",
        "spr",
        "sig",
        "si",
        "ses",
        "sdd",
        "skoid",
        "sktid",
        "skt",
        "ske",
        "sks",
        "skv",
        "saoid",
        "suoid",
        "scid",
        "skdutid",
        "sduoid",
        "srh",
        "srq",
        "rscc",
        "rscd",
        "rsce",
        "rscl",
        "rsct",
    ]
)
# The refusals, as Blob storage answers them. A bad signature, a SAS outside its times, an expired or unknown key: 403
# AuthenticationFailed, "Server failed to authenticate the request. Make sure the value of Authorization header is
# formed correctly including the signature.", with an AuthenticationErrorDetail: "Signature did not match. String to
# sign used was ..." for a user delegation SAS (github.com/Azure/azure-sdk-for-go/issues/22846,
# github.com/microsoft/AzureTRE-Deployment/issues/35), "Signature not valid in the specified time frame: Start [...] -
# Expiry [...] - Current [...]" (github.com/microsoft/AzureStorageExplorer/issues/3219), "Signature validation failed.
# Signature key not found." (github.com/Azure/azure-sdk-for-js/pull/7600). A key that expired under a still valid SAS:
# "an authorization error" (create-user-delegation-sas) whose detail no stored capture quotes; the detail below is the
# stand-in's own words.
AUTHENTICATION_FAILED = (
    "AuthenticationFailed",
    "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly "
    "including the signature.",
)
# An operation the SAS's sp does not grant, or the key's principal's roles do not: 403 AuthorizationPermissionMismatch,
# "This request is not authorized to perform this operation using this permission." (blob-service-error-codes; a SAS
# lacking the permission: github.com/Azure/azure-storage-node/issues/485; a user delegation SAS with sp=rcwl whose
# principal may not write: github.com/Azure/azure-sdk-for-net/issues/12986).
PERMISSION_MISMATCH = (
    "AuthorizationPermissionMismatch",
    "This request is not authorized to perform this operation using this permission.",
)
# A KeyInfo Expiry more than seven days ahead: 400 InvalidXmlNodeValue, "The value for one of the XML nodes is not in
# the correct format.", XmlNodeName and XmlNodeValue both the expiry as sent (github.com/Azure/azure-sdk-for-net/
# issues/17690 and 45789). A Start after the Expiry (no stored capture) is answered the same way, as a value out of
# range; so is a time that does not parse.
INVALID_XML_NODE = ("InvalidXmlNodeValue", "The value for one of the XML nodes is not in the correct format.")


@dataclass(frozen=True)
class IssuedKey:
    """A user delegation key as Get User Delegation Key answered it (the strings exactly as sent back)."""

    oid: str
    tid: str
    start: str
    expiry: str
    version: str
    value: str

    def expires(self) -> datetime:
        return parse_time(self.expiry)


@dataclass
class DelegationKeys:
    """The keys the stand-in's Blob service issued, per storage account (every front of an account shares them)."""

    issued: dict[str, list[IssuedKey]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self, account_id: str, oid: str, tid: str, start: str, expiry: str, version: str) -> IssuedKey:
        key = IssuedKey(oid, tid, start, expiry, version, base64.b64encode(secrets.token_bytes(32)).decode())
        with self.lock:
            self.issued.setdefault(account_id.lower(), []).append(key)
        return key

    def find(self, account_id: str, query: dict[str, str]) -> list[IssuedKey]:
        with self.lock:
            keys = list(self.issued.get(account_id.lower(), []))
        return [
            k
            for k in keys
            if (k.oid, k.tid, k.expiry, k.version) == (query["skoid"], query["sktid"], query["ske"], query["skv"])
            and k.start == query.get("skt", k.start)
        ]


class Refused(Exception):
    """A refusal in Blob storage's words: status, code, message, and extra XML elements of the error body."""

    def __init__(self, status: int, code_message: tuple[str, str], extra: dict[str, str] | None = None):
        super().__init__(code_message[0])
        self.status = status
        self.code, self.message = code_message
        self.extra = extra or {}


def parse_time(text: str) -> datetime:
    """An ISO 8601 UTC time as the storage services accept it (learn.microsoft.com/rest/api/storageservices/
    formatting-datetime-values): YYYY-MM-DDThh:mm[:ss[.f]]Z or a date."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def http_date(value: datetime) -> str:
    return value.strftime("%a, %d %b %Y %H:%M:%S GMT")


def is_user_delegation_sas(query: dict[str, str]) -> bool:
    return all(k in query for k in MARKERS)


def is_key_request(method: str, query: dict[str, str]) -> bool:
    return method == "POST" and query.get("restype") == "service" and query.get("comp") == "userdelegationkey"


def key_info(body: bytes, now: datetime) -> tuple[str, str]:
    """(Start, Expiry) of a KeyInfo body, as sent; refused when a time does not parse, Expiry lies more than seven days
    ahead, or Start is after Expiry."""
    try:
        root = ET.fromstring(body or b"<KeyInfo/>")
    except ET.ParseError:
        # learn.microsoft.com/rest/api/storageservices/common-rest-api-error-codes: InvalidXmlDocument, 400.
        raise Refused(400, ("InvalidXmlDocument", "XML specified is not syntactically valid.")) from None
    start = (root.findtext("Start") or "").strip()
    expiry = (root.findtext("Expiry") or "").strip()
    for text in (start, expiry) if start else (expiry,):
        try:
            parse_time(text)
        except ValueError:
            raise Refused(400, INVALID_XML_NODE, {"XmlNodeName": text, "XmlNodeValue": text}) from None
    expires = parse_time(expiry)
    if expires > now + MAX_KEY_LIFETIME or (start and parse_time(start) >= expires):
        raise Refused(400, INVALID_XML_NODE, {"XmlNodeName": expiry, "XmlNodeValue": expiry})
    return start or now.strftime("%Y-%m-%dT%H:%M:%SZ"), expiry


def key_xml(key: IssuedKey) -> bytes:
    """The response body (get-user-delegation-key, "Response body")."""
    root = ET.Element("UserDelegationKey")
    for tag, text in (
        ("SignedOid", key.oid),
        ("SignedTid", key.tid),
        ("SignedStart", key.start),
        ("SignedExpiry", key.expiry),
        ("SignedService", "b"),
        ("SignedVersion", key.version),
        ("Value", key.value),
    ):
        ET.SubElement(root, tag).text = text
    return b'<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(root)


# ----- the string-to-sign, by sv -----
# sv 2020-12-06 up to 2025-07-05: create-user-delegation-sas, "Version 2020-12-06 and later".
FIELDS_2020_12_06 = [
    "sp",
    "st",
    "se",
    "{resource}",
    "skoid",
    "sktid",
    "skt",
    "ske",
    "sks",
    "skv",
    "saoid",
    "suoid",
    "scid",
    "sip",
    "spr",
    "sv",
    "sr",
    "{snapshot}",
    "ses",
    "rscc",
    "rscd",
    "rsce",
    "rscl",
    "rsct",
]
# sv 2026-10-06, the version azure-storage-blob 12.31.1 writes (its X_MS_VERSION): its
# BlobSharedAccessSignature.add_resource_signature (azure/storage/blob/_shared_access_signature.py, lines 341-423) adds
# skdutid and sduoid after scid (as Azurite 3.35 signs sv 2025-07-05: Azure/Azurite src/blob/authentication/
# IBlobSASSignatureValues.ts, generateBlobSASBlobSASSignatureWithUDK20250705) and the signed request headers and
# query parameters (srh, srq) after ses.
FIELDS_2026_10_06 = [
    "sp",
    "st",
    "se",
    "{resource}",
    "skoid",
    "sktid",
    "skt",
    "ske",
    "sks",
    "skv",
    "saoid",
    "suoid",
    "scid",
    "skdutid",
    "sduoid",
    "sip",
    "spr",
    "sv",
    "sr",
    "{snapshot}",
    "ses",
    "srh",
    "srq",
    "rscc",
    "rscd",
    "rsce",
    "rscl",
    "rsct",
]


def layout(version: str) -> list[str]:
    """The string-to-sign's fields for a SAS version the stand-in knows; another version is not judged (a LookupError
    the front reports as its own bug, never as Azure's answer)."""
    if version == "2026-10-06":
        return FIELDS_2026_10_06
    if "2020-12-06" <= version < "2025-07-05":
        return FIELDS_2020_12_06
    raise LookupError(f"user delegation SAS version {version!r}: its string-to-sign is not known to the stand-in")


def string_to_sign(query: dict[str, str], account: str, container: str, blob: str) -> str:
    """The canonicalized resource is "/blob/<account>/<container>" for sr=c and ".../<blob>" for a blob, URL-decoded
    (create-user-delegation-sas, "Canonicalized resource"); <account> is the account the request's URL names."""
    if query.get("srh") or query.get("srq"):
        # Signed request headers and query parameters enter the string-to-sign as "name:value" lines, not as sent.
        raise LookupError("a user delegation SAS with srh or srq is not judged by the stand-in")
    sr = query.get("sr", "")
    resource = f"/blob/{account}/{container}" + (f"/{blob}" if sr in ("b", "bs", "bv") else "")
    values = {"{resource}": resource, "{snapshot}": query.get("snapshot", "") if sr in ("bs", "bv") else ""}
    return "\n".join(values.get(f, query.get(f, "")) for f in layout(query.get("sv", "")))


def signature(key_value: str, text: str) -> str:
    return base64.b64encode(hmac.new(base64.b64decode(key_value), text.encode(), hashlib.sha256).digest()).decode()


def sas_query(path: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(path).query, keep_blank_values=True))


def without_sas(path: str) -> str:
    """The request path with the SAS's fields taken off (the rest of its query kept)."""
    parts = urlsplit(path)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in SAS_FIELDS]
    return parts.path + (f"?{urlencode(kept)}" if kept else "")


def permission_needed(method: str, query: dict[str, str]) -> tuple[tuple[str, ...], str]:
    """(sp letters any of which allows the operation, the RBAC data action it needs) for the Blob calls a job makes
    (create-user-delegation-sas, "Specify permissions": r read a blob, c "write a new blob", w "create or write
    content", d delete, l list blobs). Create (c) is not told from an overwrite: the stand-in lets c write."""
    if method in ("GET", "HEAD"):
        return (("l",), BLOB_READ) if query.get("comp") == "list" else (("r",), BLOB_READ)
    if method == "DELETE":
        return ("d",), BLOB_DELETE
    return ("c", "w"), BLOB_WRITE


def check_times(query: dict[str, str], key: IssuedKey, now: datetime) -> None:
    start = parse_time(query["st"]) if query.get("st") else None
    expiry = parse_time(query["se"]) if query.get("se") else None
    if expiry is None or now > expiry or (start is not None and now < start):
        detail = (
            f"Signature not valid in the specified time frame: Start [{http_date(start) if start else ''}] - "
            f"Expiry [{http_date(expiry) if expiry else ''}] - Current [{http_date(now)}]"
        )
        raise Refused(403, AUTHENTICATION_FAILED, {"AuthenticationErrorDetail": detail})
    if now > key.expires():
        detail = f"The user delegation key expired at [{http_date(key.expires())}] (the stand-in's words)."
        raise Refused(403, AUTHENTICATION_FAILED, {"AuthenticationErrorDetail": detail})
