"""A VM's boot payloads (customData, userData): the one way hpclz packs them and the one way back.

Both are gzip-compressed, then base64-encoded, with a fixed mtime so the same text packs to the same bytes on every
run. The VM reads them unchanged:
- customData is handed to cloud-init: "cloud-init. By default, this agent will process custom data. It accepts
  multiple formats of custom data, such as cloud-init configuration and scripts." (learn.microsoft.com/azure/
  virtual-machines/custom-data, "Process custom data", Linux; MicrosoftDocs/azure-docs@07fecae
  articles/virtual-machines/custom-data.md); and cloud-init's "User data formats", "Gzip compressed content":
  "Content found to be gzip compressed will be uncompressed. The uncompressed data will then be used as if it were
  not compressed." (cloudinit.readthedocs.io/en/stable/explanation/format.html);
- the CycleCloud server's userData is read from the instance metadata service by hpclz-cluster-sync
  (templates/cloud-init/cluster_sync.py, `decode`), which unpacks it the same way.
Everything that reads a payload back (the plan's diff, the template rules, the limits) goes through `unpack`.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from dataclasses import dataclass

# The gzip member header's ID1 ID2 bytes (RFC 1952, 2.3.1), what cloud-init and Python's gzip recognise.
GZIP_MAGIC = b"\x1f\x8b"


def pack(text: str) -> str:
    """gzip (level 9, mtime 0: byte-identical across runs), then base64."""
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode()


@dataclass(frozen=True)
class Unpacked:
    """What a base64 payload carries, and what it costs Azure."""

    data: bytes  # after base64 and, when compressed, gzip
    sent: int  # bytes after base64 decoding: what customData's 65,535-byte limit counts
    compressed: bool

    def text(self) -> str | None:
        """The payload as UTF-8 text; None when it is binary."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def unpack(value: object) -> Unpacked | None:
    """A base64 payload, gunzipped when it is gzip; None for an ARM expression (`[...]`, resolved at deploy time), a
    value that is not base64, or a damaged gzip stream."""
    if not isinstance(value, str) or value.startswith("["):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
        compressed = raw[:2] == GZIP_MAGIC
        data = gzip.decompress(raw) if compressed else raw
    except (binascii.Error, ValueError, OSError, EOFError, zlib.error):
        return None
    return Unpacked(data=data, sent=len(raw), compressed=compressed)
