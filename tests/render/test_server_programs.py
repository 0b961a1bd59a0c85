"""hpclz-server-programs, run for real: the CycleCloud server's programs from the hpclz wheel in the locker (Azurite),
the VM's hpclz-wheel tag and userData from a loopback instance-metadata stand-in; then hpclz-cluster-sync.service's
own command lines, as rendered, run the version it installed."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient

from hpclz.render.cloudinit import user_data
from hpclz.render.writer import dumps
from tests.render.test_cloudinit import TEMPLATES, _cloud_config
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)
from tests.support.local_http import FakeService, serve

LOADER = TEMPLATES / "server_programs.py"
WHEEL = "hpclz-9.9.9-py3-none-any.whl"
IDENTITY = "resourceGroups/rg-mgmt/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-cc"
CONTAINER = "hpclz"
# Where the real wheel keeps them (tests/test_wheel.py checks these members are in it).
MEMBER = "hpclz/_data/templates/cloud-init/"


class Imds(FakeService):
    tags: ClassVar[list[dict[str, str]]] = []
    user_data: ClassVar[str] = ""
    tokens: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        if self.path.startswith("/metadata/instance/compute/tagsList?api-version=2021-02-01"):
            body = json.dumps(self.tags)
        elif self.path.startswith("/metadata/instance/compute/userData?api-version=2021-01-01&format=text"):
            body = self.user_data
        elif "/compute/subscriptionId" in self.path:
            body = "00000000-0000-0000-0000-0000000000aa"
        elif self.path.startswith("/metadata/identity/oauth2/token?"):
            Imds.tokens.append(self.path)
            body = json.dumps({"access_token": "locker-token", "token_type": "Bearer"})
        else:
            body = None
        self.answer(body)


@pytest.fixture
def imds() -> Iterator[str]:
    Imds.tags, Imds.tokens = [], []
    Imds.user_data = user_data(
        dumps({"wheel_locker": dumps({"account": "devstoreaccount1", "container": CONTAINER, "identity": IDENTITY})})
    )
    with serve(Imds) as url:
        yield url


def _wheel(path: Path, sync: str, users: str) -> str:
    """A wheel holding the two programs where hpclz's wheel keeps them; its SHA-256."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(MEMBER + "cluster_sync.py", sync)
        archive.writestr(MEMBER + "cc_users.py", users)
        archive.writestr("hpclz-9.9.9.dist-info/METADATA", "Metadata-Version: 2.1\nName: hpclz\nVersion: 9.9.9\n")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _put(store: Azurite, name: str, data: bytes) -> None:
    """The locker's wheel container; public read here only because Azurite checks no bearer token."""
    service = BlobServiceClient.from_connection_string(store.connection_string)
    with contextlib.suppress(ResourceExistsError):
        service.create_container(CONTAINER, public_access="blob")
    service.get_blob_client(CONTAINER, name).upload_blob(data, overwrite=True)


@pytest.fixture
def store(azurite: Azurite) -> Azurite:  # noqa: F811
    return azurite


@pytest.fixture
def server(tmp_path: Path, imds: str, azurite: Azurite) -> dict[str, str]:  # noqa: F811
    """/opt/hpclz/bin as customData leaves it: the loader, and the environment that points it at the stand-ins."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hpclz-server-programs").write_text(LOADER.read_text(encoding="utf-8"), encoding="utf-8")
    return {
        **os.environ,
        "HPCLZ_IMDS_URL": imds,
        "HPCLZ_BLOB_URL": azurite.account_url,
        "HPCLZ_SERVER_PROGRAMS_LOG": str(tmp_path / "loader.log"),
        "HPCLZ_POLL_SECONDS": "0.2",
        "BIN": str(bin_dir),
    }


def _load(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    loader = Path(env["BIN"]) / "hpclz-server-programs"
    return subprocess.run([sys.executable, str(loader), *args], env=env, capture_output=True, text=True, timeout=60)


def _tag(digest: str) -> None:
    Imds.tags = [{"name": "environment", "value": "prod"}, {"name": "hpclz-wheel", "value": f"{digest}/{WHEEL}"}]


def _installed(env: dict[str, str]) -> dict[str, str]:
    bin_dir = Path(env["BIN"])
    return {
        name: (bin_dir / name).read_text(encoding="utf-8")
        for name in ("hpclz-cluster-sync", "hpclz-cc-users")
        if (bin_dir / name).exists()
    }


def _published(store: Azurite, tmp_path: Path, version: str) -> str:
    path = tmp_path / f"{version}.whl"
    digest = _wheel(path, f'print("hpclz-cluster-sync {version}")\n', f'print("hpclz-cc-users {version}")\n')
    _put(store, f"{digest}/{WHEEL}", path.read_bytes())
    return digest


def test_a_new_wheel_replaces_the_programs_and_the_same_one_is_not_fetched_again(
    server: dict[str, str],
    store: Azurite,
    tmp_path: Path,
) -> None:
    _tag(_published(store, tmp_path, "v1"))
    assert _load(server).returncode == 0
    assert _installed(server) == {
        "hpclz-cluster-sync": 'print("hpclz-cluster-sync v1")\n',
        "hpclz-cc-users": 'print("hpclz-cc-users v1")\n',
    }
    # CycleCloud's identity, which userData's wheel_locker names, for Azure Storage.
    (token,) = Imds.tokens
    assert "resource=https%3A%2F%2Fstorage.azure.com%2F" in token and "id-cc" in token
    assert _load(server).returncode == 0 and len(Imds.tokens) == 1, "an installed wheel is not fetched again"

    _tag(_published(store, tmp_path, "v2"))
    assert _load(server).returncode == 0
    assert _installed(server)["hpclz-cluster-sync"] == 'print("hpclz-cluster-sync v2")\n'
    assert not list(Path(server["BIN"]).glob("*.new"))


def test_a_wheel_that_is_not_the_tags_keeps_the_installed_programs(
    server: dict[str, str],
    store: Azurite,
    tmp_path: Path,
) -> None:
    _tag(_published(store, tmp_path, "v1"))
    assert _load(server).returncode == 0
    # The tag names v2's digest, but the blob under that name holds other bytes.
    path = tmp_path / "v2.whl"
    digest = _wheel(path, 'print("v2")\n', 'print("v2")\n')
    _put(store, f"{digest}/{WHEEL}", path.read_bytes() + b"tampered")
    _tag(digest)
    done = _load(server)
    assert done.returncode == 0
    assert f"kept the installed programs: refused {WHEEL}: its SHA-256 is" in done.stdout
    assert _installed(server)["hpclz-cluster-sync"] == 'print("hpclz-cluster-sync v1")\n'


def test_a_failed_fetch_or_a_broken_program_keeps_the_installed_programs(
    server: dict[str, str],
    store: Azurite,
    tmp_path: Path,
) -> None:
    _tag(_published(store, tmp_path, "v1"))
    assert _load(server).returncode == 0
    _tag("a" * 64)  # nothing in the locker under this name: 404
    done = _load(server)
    assert done.returncode == 0 and "kept the installed programs: HTTP Error 404" in done.stdout
    path = tmp_path / "broken.whl"
    digest = _wheel(path, "def broken(:\n", 'print("v3")\n')
    _put(store, f"{digest}/{WHEEL}", path.read_bytes())
    _tag(digest)
    done = _load(server)
    assert done.returncode == 0 and "kept the installed programs" in done.stdout
    assert _installed(server) == {
        "hpclz-cluster-sync": 'print("hpclz-cluster-sync v1")\n',
        "hpclz-cc-users": 'print("hpclz-cc-users v1")\n',
    }, "neither program changes when one of them is broken"
    assert not list(Path(server["BIN"]).glob("*.new")), "nothing is left beside them"


def test_the_first_boot_waits_for_the_wheel_to_reach_the_locker(
    server: dict[str, str],
    store: Azurite,
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.whl"
    digest = _wheel(path, 'print("v1")\n', 'print("v1")\n')
    _tag(digest)
    done = _load(server)
    assert done.returncode == 1 and "no programs installed yet" in done.stdout and _installed(server) == {}
    loader = Path(server["BIN"]) / "hpclz-server-programs"
    log = Path(server["HPCLZ_SERVER_PROGRAMS_LOG"])
    log.unlink()
    waiting = subprocess.Popen(
        [sys.executable, str(loader), "--first-boot"], env=server, stdout=subprocess.PIPE, text=True
    )
    try:
        while "no programs installed yet" not in (log.read_text() if log.exists() else ""):
            assert waiting.poll() is None, "the first boot does not give up"
            time.sleep(0.1)
        _put(store, f"{digest}/{WHEEL}", path.read_bytes())  # what `hpclz deploy` stages through the VM
        assert waiting.wait(timeout=60) == 0
    finally:
        waiting.kill()
    assert _installed(server)["hpclz-cluster-sync"] == 'print("v1")\n'


def test_the_sync_service_runs_the_version_the_loader_installed(
    server: dict[str, str],
    store: Azurite,
    tmp_path: Path,
) -> None:
    """hpclz-cluster-sync.service's own command lines, as customData writes them, in systemd's order (ExecStartPre
    lines, then ExecStart; a "-" prefix lets a failure pass: systemd.service(5))."""
    files = {f["path"]: f["content"] for f in _cloud_config("finance")["write_files"]}
    unit = files["/etc/systemd/system/hpclz-cluster-sync.service"]
    lines = re.findall(r"^(ExecStartPre|ExecStart)=(-?)(.*)$", unit, flags=re.M)
    assert [key for key, _, _ in lines] == ["ExecStartPre", "ExecStartPre", "ExecStart"]
    assert "hpclz-server-programs" in lines[0][2], "the loader runs before the programs"

    def run_unit() -> list[str]:
        said = []
        for _key, dash, command in lines:
            argv = [a.replace("/opt/hpclz/bin", server["BIN"]) for a in shlex.split(command)]
            done = subprocess.run(argv, env=server, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0 or dash, done.stderr
            said.append((done.stdout.strip().splitlines() or [""])[-1])
        return said

    _tag(_published(store, tmp_path, "v1"))
    assert run_unit()[1:] == ["hpclz-cc-users v1", "hpclz-cluster-sync v1"]
    _tag(_published(store, tmp_path, "v2"))  # `hpclz deploy` of a newer hpclz: a new wheel, the tag changed in place
    assert run_unit()[1:] == ["hpclz-cc-users v2", "hpclz-cluster-sync v2"]
