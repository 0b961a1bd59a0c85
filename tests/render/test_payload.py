"""The one packing of a VM's boot payloads and the one way back (hpclz.render.payload)."""

from __future__ import annotations

import base64
import gzip
import lzma
import random

from hpclz.render.payload import pack, unpack

CLOUD_CONFIG = "#cloud-config\nruncmd:\n  - [systemctl, enable, --now, slurmd]\n"


def test_pack_is_gzip_then_base64_and_byte_identical_across_runs() -> None:
    packed = pack(CLOUD_CONFIG)
    raw = base64.b64decode(packed, validate=True)
    # RFC 1952: ID1 ID2 = 1f 8b, CM = 8 (deflate), then MTIME (bytes 4-7) = 0, so nothing of the clock gets in.
    assert raw[:3] == b"\x1f\x8b\x08" and raw[4:8] == b"\x00\x00\x00\x00"
    assert gzip.decompress(raw).decode() == CLOUD_CONFIG
    assert pack(CLOUD_CONFIG) == packed


def test_unpack_reads_a_packed_payload_and_counts_what_azure_receives() -> None:
    packed = pack(CLOUD_CONFIG)
    unpacked = unpack(packed)
    assert unpacked is not None and unpacked.compressed
    assert unpacked.text() == CLOUD_CONFIG and unpacked.sent == len(base64.b64decode(packed))


def test_unpack_reads_a_plain_base64_payload() -> None:
    # The portal's userData (hpclz.render.portal.proxy_user_data) is plain JSON in base64.
    unpacked = unpack(base64.b64encode(b'{"kind": "hpclz-portal-proxy"}').decode())
    assert unpacked is not None and not unpacked.compressed
    assert unpacked.text() == '{"kind": "hpclz-portal-proxy"}' and unpacked.sent == 30


def test_what_is_not_a_payload_is_none() -> None:
    assert unpack("[base64(parameters('cloudInit'))]") is None  # resolved by ARM at deploy time
    assert unpack("not base64!") is None
    assert unpack(None) is None and unpack(42) is None
    damaged = base64.b64encode(gzip.compress(CLOUD_CONFIG.encode(), mtime=0)[:-8]).decode()  # no gzip trailer
    assert unpack(damaged) is None
    assert unpack(base64.b64encode(b"\x1f\x8bnot deflate at all").decode()) is None
    assert unpack(base64.b64encode(b"\xfd7zXZ\x00not an xz stream").decode()) is None


def test_xz_is_byte_identical_across_runs_and_unpacked() -> None:
    packed = pack(CLOUD_CONFIG, xz=True)
    raw = base64.b64decode(packed, validate=True)
    assert raw[:6] == b"\xfd7zXZ\x00" and lzma.decompress(raw).decode() == CLOUD_CONFIG
    assert pack(CLOUD_CONFIG, xz=True) == packed
    unpacked = unpack(packed)
    assert unpacked is not None and unpacked.codec == "xz" and unpacked.text() == CLOUD_CONFIG


def test_xz_reaches_back_across_a_repeat_that_gzip_cannot() -> None:
    # Two copies of 40 KB of incompressible text: DEFLATE looks back at most 32 KB (RFC 1951, 2), xz's dictionary
    # spans both, so only xz packs the second copy into almost nothing. The cluster definition's nodearrays repeat so.
    block = base64.b64encode(random.Random(0).randbytes(30_000)).decode()
    text = block + "\n" + block
    assert len(pack(text, xz=True)) < 0.7 * len(pack(text))


def test_binary_content_has_no_text() -> None:
    unpacked = unpack(base64.b64encode(b"\xff\xfe\x00").decode())
    assert unpacked is not None and unpacked.text() is None
