"""The scheduler's hpclz-install-wheel, as rendered, against Azurite and a local instance-metadata stand-in: it
fetches the wheel from the locker with the locker identity, refuses a file whose SHA-256 is not the one it was
given, and installs a matching one from the local file."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient

from tests.render.test_cloudinit import _artifacts, _scripts
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)
from tests.support.local_http import serve

WHEEL = "hpclz-0.0.1-py3-none-any.whl"


class Imds(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        if "/compute/subscriptionId" in self.path:
            body = "00000000-0000-0000-0000-0000000000aa"
        elif self.path.startswith("/metadata/identity/oauth2/token?"):
            assert "resource=https%3A%2F%2Fstorage.azure.com%2F" in self.path
            assert "userAssignedIdentities%2Fid-riskgrid-locker-prod-weu" in self.path
            body = json.dumps({"access_token": "locker-token", "token_type": "Bearer"})
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


def _helpers() -> dict[str, str]:
    """The scheduler script's helpers, by the path its here-documents write them to."""
    (scheduler,) = [
        s for s in _scripts(_artifacts("finance")["cyclecloud/slurm-cluster.txt"]) if "hpclz-install-wheel" in s
    ]
    return dict(re.findall(r"cat > (\S+) <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", scheduler, flags=re.S | re.M))


def _wheel(path: Path) -> bytes:
    """A real, minimal wheel (PEP 427): one module, its metadata and RECORD."""
    files = {
        "hpclz_probe.py": "PROBE = 1\n",
        "hpclz-0.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: hpclz\nVersion: 0.0.1\n",
        "hpclz-0.0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "hpclz-0.0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, "hpclz-0.0.1.dist-info/RECORD": record}.items():
            archive.writestr(name, text)
    return path.read_bytes()


@pytest.fixture
def imds() -> Iterator[str]:
    with serve(Imds) as url:
        yield url


@pytest.fixture
def store(azurite: Azurite) -> Azurite:  # noqa: F811
    return azurite


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """HPCLZ_HOME with the two helpers as the scheduler writes them, the digest filled in by the test."""
    (tmp_path / "bin").mkdir()
    helpers = _helpers()
    getter = tmp_path / "bin" / "hpclz-locker-get"
    getter.write_text(helpers["/opt/hpclz/bin/hpclz-locker-get"], encoding="utf-8")
    getter.chmod(0o755)
    return tmp_path


def _install(home: Path, imds: str, store: Azurite, digest: str) -> subprocess.CompletedProcess[str]:
    # What hpclz-cluster-sync does with the CycleCloud VM's hpclz-wheel tag before the scheduler runs the script.
    text = _helpers()["/opt/hpclz/bin/hpclz-install-wheel"]
    text = text.replace("@HPCLZ_WHEEL_SHA256@", digest).replace("@HPCLZ_WHEEL_FILE@", WHEEL)
    script = home / "install-wheel"
    script.write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        "HPCLZ_HOME": str(home),
        "HPCLZ_IMDS_URL": imds,
        "HPCLZ_BLOB_URL": store.account_url,
        "HPCLZ_LOCKER_ATTEMPTS": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INDEX": "1",  # nothing may come from a package index
    }
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300)


def _put(store: Azurite, name: str, data: bytes) -> None:
    """The locker's wheel container; public read here only because Azurite checks no bearer token."""
    service = BlobServiceClient.from_connection_string(store.connection_string)
    with contextlib.suppress(ResourceExistsError):
        service.create_container("hpclz", public_access="blob")
    service.get_blob_client("hpclz", name).upload_blob(data, overwrite=True)


def test_a_tampered_wheel_is_refused_and_removed(home: Path, imds: str, store: Azurite, tmp_path: Path) -> None:
    good = _wheel(tmp_path / WHEEL)
    digest = hashlib.sha256(good).hexdigest()
    _put(store, f"{digest}/{WHEEL}", good + b"tampered")
    done = _install(home, imds, store, digest)
    assert done.returncode == 1
    assert f"refused {WHEEL}: its SHA-256 is {hashlib.sha256(good + b'tampered').hexdigest()}" in done.stderr
    assert not (home / "wheel" / WHEEL).exists() and not (home / "venv").exists()


def test_no_digest_given_installs_nothing(home: Path, imds: str, store: Azurite) -> None:
    done = _install(home, imds, store, "@HPCLZ_WHEEL_SHA256@")
    assert done.returncode == 1 and "no hpclz wheel was given" in done.stderr
    assert not (home / "wheel").exists()


@pytest.mark.slow
def test_a_matching_wheel_is_installed_from_the_local_file(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    good = _wheel(tmp_path / WHEEL)
    digest = hashlib.sha256(good).hexdigest()
    _put(store, f"{digest}/{WHEEL}", good)
    done = _install(home, imds, store, digest)
    assert done.returncode == 0, done.stderr
    assert f"installed {WHEEL} (sha256 {digest})" in done.stdout
    assert list((home / "venv" / "lib").glob("python3*/site-packages/hpclz_probe.py"))
