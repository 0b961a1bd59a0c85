"""The manifest's comparison, prefix and signature rules, without storage."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from hpclz.checkpoints.manifest import (
    Manifest,
    ManifestEntry,
    compare,
    is_manifest,
    manifest_blob,
    normalise_prefix,
    parse_manifest,
)
from hpclz.errors import HpclzError

# FIPS 180-2, appendix B.1: SHA-256("abc"), the standard's own example digest.
ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def entry(data: bytes) -> ManifestEntry:
    return ManifestEntry(sha256=hashlib.sha256(data).hexdigest(), size=len(data))


def test_entry_digest_matches_the_standards_example() -> None:
    assert entry(b"abc").sha256 == ABC_SHA256


def test_compare_sorts_every_difference_into_its_kind() -> None:
    expected = {"a": entry(b"1"), "b": entry(b"2"), "c": entry(b"3")}
    found = {"a": entry(b"1"), "b": entry(b"2-tampered"), "d": entry(b"4")}
    diff = compare(expected, found)
    assert (diff.matched, diff.modified, diff.missing, diff.unexpected) == (1, ["b"], ["c"], ["d"])
    assert not diff.clean
    assert compare(expected, dict(expected)).clean


def test_same_digest_but_other_size_is_modified() -> None:
    forged = ManifestEntry(sha256=ABC_SHA256, size=4)
    assert compare({"x": entry(b"abc")}, {"x": forged}).modified == ["x"]


@pytest.mark.parametrize(
    ("prefix", "folder"), [("", ""), ("/", ""), ("run1", "run1/"), ("/run1/", "run1/"), ("a/b", "a/b/")]
)
def test_a_prefix_is_a_folder(prefix: str, folder: str) -> None:
    assert normalise_prefix(prefix) == folder
    assert manifest_blob(prefix) == folder + "hpclz-manifest.json"


def test_nested_manifests_are_not_checkpoints() -> None:
    assert is_manifest("hpclz-manifest.json") and is_manifest("run1/hpclz-manifest.json")
    assert not is_manifest("run1/my-hpclz-manifest.json")


def _manifest() -> Manifest:
    files = {"step-100/model.pt": entry(b"abc")}
    return Manifest(container="ckpt", prefix="", created_at=datetime(2026, 1, 1, tzinfo=UTC), files=files)


def test_signature_holds_only_for_the_same_key_and_body() -> None:
    signed = _manifest().signed(b"key-one")
    assert signed.signature_valid(b"key-one")
    assert not signed.signature_valid(b"key-two")
    edited = signed.model_copy(update={"files": {"step-100/model.pt": entry(b"abd")}})
    assert not edited.signature_valid(b"key-one")
    assert not _manifest().signature_valid(b"key-one")  # unsigned


def test_manifest_round_trips_through_its_text() -> None:
    signed = _manifest().signed(b"k")
    again = parse_manifest(signed.to_text(), "ckpt/hpclz-manifest.json")
    assert again == signed and again.signature_valid(b"k")


def test_a_foreign_document_is_one_line_naming_the_blob() -> None:
    with pytest.raises(HpclzError, match=r"^ckpt/m.json: not an hpclz checkpoint manifest \(format: "):
        parse_manifest(
            '{"format": "other", "container": "c", "prefix": "", "created_at": "2026-01-01T00:00:00Z", "files": {}}',
            "ckpt/m.json",
        )
