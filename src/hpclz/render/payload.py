"""A VM's boot payloads (customData, userData): the one way hpclz packs them and the one way back.

Both are compressed, then base64-encoded, so the same text packs to the same bytes on every run. The VM reads them
unchanged:
- customData is handed to cloud-init: "cloud-init. By default, this agent will process custom data. It accepts
  multiple formats of custom data, such as cloud-init configuration and scripts." (learn.microsoft.com/azure/
  virtual-machines/custom-data, "Process custom data", Linux; MicrosoftDocs/azure-docs@07fecae
  articles/virtual-machines/custom-data.md); and cloud-init's "User data formats", "Gzip compressed content":
  "Content found to be gzip compressed will be uncompressed. The uncompressed data will then be used as if it were
  not compressed." (cloudinit.readthedocs.io/en/stable/explanation/format.html);
- the CycleCloud server's userData is read from the instance metadata service by hpclz-cluster-sync
  (templates/cloud-init/cluster_sync.py, `decode`) and hpclz-cc-users, never by cloud-init, so it may use a better
  compressor: xz. gzip's DEFLATE refers back at most 32 KB ("distances ... limited to 32K bytes", RFC 1951 section
  2), and each partition's nodearray in the cluster definition is itself over 32 KB of mostly the same node scripts:
  gzip could no longer find one partition's copy from the next (ai-training: 168 KB packed to 58,288 of the 65,536
  characters), while xz's dictionary spans the whole document (27,000). Python reads xz with its standard `lzma`
  module ("New in version 3.3", docs.python.org/3/library/lzma.html), which the server's Python 3.6 has.
Everything that reads a payload back (the plan's diff, the template rules, the limits) goes through `unpack`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import lzma
import zlib
from dataclasses import dataclass

# The gzip member header's ID1 ID2 bytes (RFC 1952, 2.3.1), what cloud-init and Python's gzip recognise.
GZIP_MAGIC = b"\x1f\x8b"
# The .xz stream header's magic bytes (The .xz File Format 1.0.4, 2.1.1.1: 0xFD '7' 'z' 'X' 'Z' 0x00).
XZ_MAGIC = b"\xfd7zXZ\x00"


# Byte-identical output for the same text, and xz preset 9 is a render's dearest step after the templates: a text
# packed again (the same payload in another render of the same config in one process) is not compressed twice.
@functools.lru_cache(maxsize=64)
def pack(text: str, *, xz: bool = False) -> str:
    """gzip (level 9, mtime 0: byte-identical across runs) or, for a payload only hpclz's own scripts read, xz (preset
    9, which has no timestamp), then base64."""
    data = text.encode()
    packed = (
        lzma.compress(data, format=lzma.FORMAT_XZ, preset=9) if xz else gzip.compress(data, compresslevel=9, mtime=0)
    )
    return base64.b64encode(packed).decode()


@dataclass(frozen=True)
class Unpacked:
    """What a base64 payload carries, and what it costs Azure."""

    data: bytes  # after base64 and, when compressed, gzip or xz
    sent: int  # bytes after base64 decoding: what customData's 65,535-byte limit counts
    codec: str | None  # "gzip", "xz", or None when the payload is not compressed

    @property
    def compressed(self) -> bool:
        return self.codec is not None

    def text(self) -> str | None:
        """The payload as UTF-8 text; None when it is binary."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


def unpack(value: object) -> Unpacked | None:
    """A base64 payload, decompressed when it is gzip or xz; None for an ARM expression (`[...]`, resolved at deploy
    time), a value that is not base64, or a damaged stream."""
    if not isinstance(value, str) or value.startswith("["):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
        if raw[:2] == GZIP_MAGIC:
            return Unpacked(data=gzip.decompress(raw), sent=len(raw), codec="gzip")
        if raw[:6] == XZ_MAGIC:
            return Unpacked(data=lzma.decompress(raw, format=lzma.FORMAT_XZ), sent=len(raw), codec="xz")
    except (binascii.Error, ValueError, OSError, EOFError, zlib.error, lzma.LZMAError):
        return None
    return Unpacked(data=raw, sent=len(raw), codec=None)
