"""wheel_repack checks each installed file against its RECORD hash before a wheel is rebuilt from it."""

from __future__ import annotations

import zipfile
from importlib import metadata
from io import BytesIO
from pathlib import Path

import pytest

from hpclz.deploy.wheel_repack import record_digest, verified_files, wheel_bytes
from hpclz.errors import HpclzError

WHEEL = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _fake_dist(site: Path) -> metadata.Distribution:
    """A fake-1.0 install as pip leaves one: its package, .dist-info, a console script and a .pyc beside them."""
    shipped = {
        "fake/__init__.py": b"x = 1\n",
        "fake/data/a.txt": b"data\n",
        "fake-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: fake\nVersion: 1.0\n",
        "fake-1.0.dist-info/WHEEL": WHEEL,
    }
    added = {
        "fake/__pycache__/__init__.cpython-312.pyc": b"\0compiled",
        "fake-1.0.dist-info/INSTALLER": b"pip\n",
        "../../bin/fake": b"#!/bin/python\n",
    }
    lines = []
    for name, data in {**shipped, **added}.items():
        where = site / name
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(data)
        lines.append(f"{name},{'' if name.endswith('.pyc') else record_digest(data)},{len(data)}")
    (site / "fake-1.0.dist-info" / "RECORD").write_text("\n".join([*lines, "fake-1.0.dist-info/RECORD,,", ""]))
    return metadata.PathDistribution(site / "fake-1.0.dist-info")


def test_record_digest_is_urlsafe_base64_without_padding() -> None:
    # The empty file's SHA-256 (e3b0c442...b855) in urlsafe base64 with its "=" padding dropped.
    assert record_digest(b"") == "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"


def test_the_wheel_files_are_those_from_the_wheel_and_a_fresh_record_lists_them(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"
    dist_info, files = verified_files(_fake_dist(site))
    assert dist_info == "fake-1.0.dist-info"
    assert sorted(files) == [
        "fake-1.0.dist-info/METADATA",
        "fake-1.0.dist-info/WHEEL",
        "fake/__init__.py",
        "fake/data/a.txt",
    ]
    built = wheel_bytes(dist_info, files)
    assert built == wheel_bytes(dist_info, dict(reversed(files.items())))  # order-independent, no timestamps
    with zipfile.ZipFile(BytesIO(built)) as archive:
        names = archive.namelist()
        assert names[-1] == "fake-1.0.dist-info/RECORD" and names[-3:-1] == sorted(names[-3:-1])
        assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in archive.infolist())
        record = archive.read("fake-1.0.dist-info/RECORD").decode().splitlines()
    init = b"x = 1\n"
    assert f"fake/__init__.py,{record_digest(init)},{len(init)}" in record


def test_an_installed_file_that_differs_from_its_record_hash_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages"
    dist = _fake_dist(site)
    (site / "fake" / "data" / "a.txt").write_bytes(b"DATA\n")  # same size, other bytes
    with pytest.raises(HpclzError) as raised:
        verified_files(dist)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{site / 'fake' / 'data' / 'a.txt'} differs from the installed hpclz's RECORD")
