"""The scheduler's hpclz-install-wheel, as rendered, against Azurite and a local instance-metadata stand-in: it
fetches the wheel from the locker with the locker identity, refuses a file whose SHA-256 is not the one it was
given, and installs a matching one from the local file."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient

from tests.conftest import REPO, require
from tests.render.test_cloudinit import _artifacts, _scripts, node_tools
from tests.support.azurite import Azurite, azurite  # noqa: F401  (a fixture, used by name)
from tests.support.hpclz_wheel import build_wheel
from tests.support.local_http import FakeService, serve

WHEEL = "hpclz-0.0.1-py3-none-any.whl"


class Imds(FakeService):
    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        if "/compute/subscriptionId" in self.path:
            body = "00000000-0000-0000-0000-0000000000aa"
        elif self.path.startswith("/metadata/identity/oauth2/token?"):
            assert "resource=https%3A%2F%2Fstorage.azure.com%2F" in self.path
            assert "userAssignedIdentities%2Fid-riskgrid-locker-prod-weu" in self.path
            body = json.dumps({"access_token": "locker-token", "token_type": "Bearer"})
        else:
            body = None
        self.answer(body)


def _helpers() -> dict[str, str]:
    """The scheduler script's helpers, by the path its here-documents write them to."""
    (scheduler,) = [
        s for s in _scripts(_artifacts("finance")["cyclecloud/slurm-cluster.txt"]) if "hpclz-install-wheel" in s
    ]
    return dict(re.findall(r"cat > (\S+) <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", scheduler, flags=re.S | re.M))


def _archive(name: str, version: str, files: dict[str, str], extra: str = "") -> bytes:
    """A real, minimal wheel (PEP 427) of distribution `name`: `files`, its metadata and RECORD, the same bytes on
    every call (fixed timestamps), so that its SHA-256 can stand in a lock."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{member},,\n" for member in files) + f"{info}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0)), text)
    return buffer.getvalue()


# The stand-in hpclz's one dependency, served from a local folder (PIP_FIND_LINKS, the `wheelhouse` fixture) in place
# of PyPI: the scheduler installs what the wheel's lock names with pip's --require-hashes, as a node does from PyPI.
DEP = "hpclz_dep_probe-1.0-py3-none-any.whl"
DEP_WHEEL = _archive("hpclz-dep-probe", "1.0", {"hpclz_dep_probe.py": "DEP = 1\n"})
DEP_LOCK = f"hpclz-dep-probe==1.0 \\\n    --hash=sha256:{hashlib.sha256(DEP_WHEEL).hexdigest()}\n"


def _wheel(
    path: Path,
    probe: int = 1,
    requires_python: str = "",
    lock: str | None = DEP_LOCK,
    requires: str = "hpclz-dep-probe",
) -> bytes:
    """The stand-in hpclz wheel: one module, the lock it carries as hpclz's does (hpclz/requirements-lock.txt; None:
    none), and its Requires-Dist."""
    needs = f"Requires-Python: {requires_python}\n" if requires_python else ""
    needs += f"Requires-Dist: {requires}\n" if requires else ""
    files = {"hpclz_probe.py": f"PROBE = {probe}\n"}
    if lock is not None:
        files["hpclz/requirements-lock.txt"] = lock
    path.write_bytes(_archive("hpclz", "0.0.1", files, needs))
    return path.read_bytes()


@pytest.fixture(autouse=True)
def wheelhouse(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder pip takes the locked dependencies from (PIP_NO_INDEX is set too: nothing from an index)."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    (folder / DEP).write_bytes(DEP_WHEEL)
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


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


def _install(
    home: Path, imds: str, store: Azurite, digest: str, *args: str, node: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The rendered script as the scheduler runs it; `node`: the environment of a stand-in node (`_node`)."""
    # What hpclz-cluster-sync does with the CycleCloud VM's hpclz-wheel tag before the scheduler runs the script.
    text = _helpers()["/opt/hpclz/bin/hpclz-install-wheel"]
    text = text.replace("@HPCLZ_WHEEL_SHA256@", digest).replace("@HPCLZ_WHEEL_FILE@", WHEEL)
    script = home / "install-wheel"
    script.write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        **(node or {}),
        "HPCLZ_HOME": str(home),
        "HPCLZ_IMDS_URL": imds,
        "HPCLZ_BLOB_URL": store.account_url,
        "HPCLZ_LOCKER_ATTEMPTS": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INDEX": "1",  # nothing may come from a package index
    }
    return subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, timeout=300)


def _published(store: Azurite, tmp_path: Path) -> str:
    """The stand-in wheel written and uploaded as the deploy publishes it (under its SHA-256); its digest."""
    good = _wheel(tmp_path / WHEEL)
    digest = hashlib.sha256(good).hexdigest()
    _put(store, f"{digest}/{WHEEL}", good)
    return digest


def _put(store: Azurite, name: str, data: bytes) -> None:
    """The locker's wheel container; public read here only because Azurite checks no bearer token."""
    service = BlobServiceClient.from_connection_string(store.connection_string)
    with contextlib.suppress(ResourceExistsError):
        service.create_container("hpclz", public_access="blob")
    service.get_blob_client("hpclz", name).upload_blob(data, overwrite=True)


def test_every_pip_install_takes_nothing_the_lock_does_not_pin() -> None:
    """As rendered: the dependencies only from the wheel's lock, by their hashes and as wheels; the wheel with no
    dependency resolution of its own; then pip check."""
    script = _helpers()["/opt/hpclz/bin/hpclz-install-wheel"]
    installs = re.findall(r'^\s*"\$new/bin/pip" install .*$', script, flags=re.M)
    assert [line.strip() for line in installs] == [
        '"$new/bin/pip" install --no-cache-dir --no-deps "$wheel" || return 1',
        '"$new/bin/pip" install --no-cache-dir --require-hashes --no-deps --only-binary :all: -r "$lock" || return 1',
    ]
    assert script.count('pip" install') == 2 and '"$new/bin/pip" check || return 1' in script


def test_a_tampered_wheel_is_refused_and_removed(home: Path, imds: str, store: Azurite, tmp_path: Path) -> None:
    good = _wheel(tmp_path / WHEEL)
    digest = hashlib.sha256(good).hexdigest()
    _put(store, f"{digest}/{WHEEL}", good + b"tampered")
    done = _install(home, imds, store, digest)
    assert done.returncode == 1
    assert f"refused {WHEEL}: its SHA-256 is {hashlib.sha256(good + b'tampered').hexdigest()}" in done.stderr
    assert not (home / "wheel" / WHEEL).exists() and not (home / "venv").exists()
    assert list((home / "venvs").iterdir()) == []


def test_no_digest_given_installs_nothing(home: Path, imds: str, store: Azurite) -> None:
    done = _install(home, imds, store, "@HPCLZ_WHEEL_SHA256@")
    assert done.returncode == 1 and "no hpclz wheel was given" in done.stderr
    assert list((home / "wheel").iterdir()) == [] and not (home / "venv").exists()


@pytest.mark.slow
def test_a_matching_wheel_is_installed_from_the_local_file(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    digest = _published(store, tmp_path)
    done = _install(home, imds, store, digest)
    assert done.returncode == 0, done.stderr
    assert f"installed {WHEEL} (sha256 {digest})" in done.stdout
    site = home / "venv" / "lib"
    assert list(site.glob("python3*/site-packages/hpclz_probe.py"))
    assert list(site.glob("python3*/site-packages/hpclz_dep_probe.py"))  # the lock's dependency, by its hash


UNBAKED = "@HPCLZ_WHEEL_SHA256@"  # a scheduler that follows the locker needs no digest baked in


def _wheel_in(folder: Path, probe: int) -> bytes:
    folder.mkdir()
    return _wheel(folder / WHEEL, probe)


def _current(home: Path) -> str:
    """The venv the scheduler runs: $HPCLZ_HOME/venv is a link to venvs/<sha256>."""
    return (home / "venv").readlink().name


def _probe(home: Path) -> str:
    (module,) = (home / "venv" / "lib").glob("python3*/site-packages/hpclz_probe.py")
    return module.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_running_scheduler_follows_the_lockers_current_wheel(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    """The chain a second `hpclz deploy` sets off: the CycleCloud VM's hpclz-wheel tag changes, hpclz-cluster-sync
    publishes it as the locker's `current` blob (test_cluster_sync), and the scheduler's hpclz-wheel-update timer runs
    `hpclz-install-wheel --follow`, which installs the new wheel only once its SHA-256 matches."""
    first = _wheel_in(tmp_path / "one", 1)
    one = hashlib.sha256(first).hexdigest()
    _put(store, f"{one}/{WHEEL}", first)
    _put(store, "current", f"{one}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 0, done.stderr
    assert _current(home) == one and _probe(home) == "PROBE = 1\n"
    # Nothing new: nothing fetched or installed.
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert (done.returncode, done.stdout.strip()) == (
        0,
        f"hpclz-install-wheel: {WHEEL} (sha256 {one}) is already installed",
    )
    # The second deploy's wheel.
    second = _wheel_in(tmp_path / "two", 2)
    two = hashlib.sha256(second).hexdigest()
    _put(store, f"{two}/{WHEEL}", second)
    _put(store, "current", f"{two}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 0, done.stderr
    assert _current(home) == two and _probe(home) == "PROBE = 2\n"
    assert sorted(p.name for p in (home / "venvs").iterdir()) == sorted([one, two])  # the previous one is kept
    # A wheel whose bytes do not match the digest the locker names is refused; the running hpclz stays.
    bad = "f" * 64
    _put(store, f"{bad}/{WHEEL}", first)
    _put(store, "current", f"{bad}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 1
    assert f"refused {WHEEL}: its SHA-256 is {one}, expected {bad}" in done.stderr
    assert _current(home) == two and _probe(home) == "PROBE = 2\n"
    assert not (home / "venvs" / bad).exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_new_wheel_reaches_the_health_gate(home: Path, imds: str, store: Azurite, tmp_path: Path) -> None:
    """hpclz-gate-install, as rendered and run by its timer, after hpclz-install-wheel --follow: installed for the
    first wheel, it does nothing while that wheel runs, and installs the gate (bundle, passive tier, prolog, epilog)
    again once the venv runs the second wheel. The bundle is packed by this checkout's hpclz (HPCLZ_PYTHON), the test
    wheels carrying none; the wheel is read from the venv link the install switched."""
    sched = tmp_path / "sched"
    (sched / "prolog.d").mkdir(parents=True)
    stamp = tmp_path / "stamp" / "gate-installed"
    gate = home / "bin" / "hpclz-gate-install"
    gate.write_text(_helpers()["/opt/hpclz/bin/hpclz-gate-install"], encoding="utf-8")
    env = {
        **os.environ,
        "HPCLZ_SCHED": str(sched),
        "HPCLZ_VENV": str(home / "venv"),
        "HPCLZ_PYTHON": sys.executable,
        "HPCLZ_STAMP": str(stamp),
    }

    def timer_run() -> str:
        done = subprocess.run(["bash", str(gate)], env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    digests = []
    for probe in (1, 2):
        data = _wheel_in(tmp_path / f"w{probe}", probe)
        digests.append(hashlib.sha256(data).hexdigest())
        _put(store, f"{digests[-1]}/{WHEEL}", data)
        _put(store, "current", f"{digests[-1]}/{WHEEL}\n".encode())
        done = _install(home, imds, store, UNBAKED, "--follow")
        assert done.returncode == 0 and _current(home) == digests[-1], done.stderr
        said = timer_run().splitlines()
        assert said[-1] == f"hpclz-gate-install: health gate installed in {sched} from hpclz wheel {digests[-1]}"
        assert stamp.read_text(encoding="utf-8") == digests[-1] + "\n"
        assert (sched / "hpclz" / "passive.sh").is_file() and (sched / "hpclz" / "hpclz-node.pyz").is_file()
        # While this wheel runs, the timer's next runs leave the gate as it is (a removed file stays removed).
        (sched / "hpclz" / "passive.sh").unlink()
        assert timer_run() == ""
        assert not (sched / "hpclz" / "passive.sh").exists()


@pytest.mark.parametrize("pointer", ["", "not-a-digest/hpclz-0.0.1-py3-none-any.whl", f"{'a' * 64}/../../etc/passwd"])
def test_a_malformed_current_wheel_is_refused_before_any_download(
    home: Path, imds: str, store: Azurite, pointer: str
) -> None:
    _put(store, "current", pointer.encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 1
    assert "the locker's current wheel is not <sha256>/<hpclz wheel>" in done.stderr
    assert sorted(p.name for p in (home / "wheel").iterdir()) == ["current"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_wheel_pip_cannot_install_leaves_the_previous_venv(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    digest = _published(store, tmp_path)
    assert _install(home, imds, store, digest).returncode == 0
    broken = b"not a zip file"
    other = hashlib.sha256(broken).hexdigest()
    _put(store, f"{other}/{WHEEL}", broken)
    _put(store, "current", f"{other}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"hpclz-install-wheel: pip could not install {WHEEL} (sha256 {other}): installing the wheel (--no-deps) failed; "
        "the previous hpclz stays"
    )
    assert _current(home) == digest and not (home / "venvs" / other).exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_lock_whose_hash_pip_refuses_leaves_the_previous_venv(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    """The lock names a digest the dependency's file does not have (a tampered file, on PyPI or on the way): pip's
    hash-checking mode refuses it (pip.pypa.io/en/stable/topics/secure-installs/#hash-checking-mode), the half-made
    venv goes, and the running hpclz stays."""
    digest = _published(store, tmp_path)
    assert _install(home, imds, store, digest).returncode == 0
    tampered = DEP_LOCK.replace(hashlib.sha256(DEP_WHEEL).hexdigest(), "0" * 64)
    (tmp_path / "next").mkdir()
    data = _wheel(tmp_path / "next" / WHEEL, 2, lock=tampered)
    other = hashlib.sha256(data).hexdigest()
    _put(store, f"{other}/{WHEEL}", data)
    _put(store, "current", f"{other}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 1
    assert "THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"hpclz-install-wheel: pip could not install {WHEEL} (sha256 {other}): installing its locked dependencies "
        "(--require-hashes) failed; the previous hpclz stays"
    )
    assert _current(home) == digest and _probe(home) == "PROBE = 1\n"
    assert sorted(p.name for p in (home / "venvs").iterdir()) == [digest]


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("lock", "requires", "step", "said"),
    [
        # A dependency the wheel requires that its lock leaves out is never resolved from elsewhere (--no-deps).
        (DEP_LOCK, "hpclz-dep-probe\nRequires-Dist: hpclz-dep-absent", "pip check", "requires hpclz-dep-absent"),
        # A lock whose pin the wheel's bounds exclude.
        (DEP_LOCK, "hpclz-dep-probe>=2", "pip check", "has requirement hpclz-dep-probe>=2"),
        # A wheel that carries no lock.
        (None, "hpclz-dep-probe", "reading hpclz/requirements-lock.txt out of the wheel", "KeyError"),
    ],
)
def test_a_lock_that_does_not_satisfy_the_wheel_leaves_the_previous_venv(
    home: Path, imds: str, store: Azurite, tmp_path: Path, lock: str | None, requires: str, step: str, said: str
) -> None:
    digest = _published(store, tmp_path)
    assert _install(home, imds, store, digest).returncode == 0
    (tmp_path / "next").mkdir()
    data = _wheel(tmp_path / "next" / WHEEL, 2, lock=lock, requires=requires)
    other = hashlib.sha256(data).hexdigest()
    _put(store, f"{other}/{WHEEL}", data)
    _put(store, "current", f"{other}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow")
    assert done.returncode == 1 and said in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"hpclz-install-wheel: pip could not install {WHEEL} (sha256 {other}): {step}")
    assert last.endswith("failed; the previous hpclz stays")
    assert _current(home) == digest and _probe(home) == "PROBE = 1\n"
    assert sorted(p.name for p in (home / "venvs").iterdir()) == [digest]


def test_a_first_install_that_fails_does_not_end_the_schedulers_setup(tmp_path: Path) -> None:
    """The scheduler's setup runs once, under `set -euo pipefail`; the wheel can reach the locker after it (deploy
    from a workstation stages it last). Run as rendered, with no wheel given yet, the setup goes on past the failed
    install, links the hpclz command, and enables the timer that installs the wheel later."""
    (scheduler,) = [
        s for s in _scripts(_artifacts("finance")["cyclecloud/slurm-cluster.txt"]) if "hpclz-install-wheel" in s
    ]
    start = scheduler.index("cat > /opt/hpclz/bin/hpclz-install-wheel")
    end = scheduler.index("systemctl enable --now hpclz-wheel-update.timer\n") + len("systemctl enable --now ")
    end = scheduler.index("\n", end) + 1
    fragment = scheduler[start:end]
    for path in ("/opt/hpclz", "/etc/systemd/system", "/usr/local/bin"):
        (tmp_path / path.strip("/")).mkdir(parents=True, exist_ok=True)
        fragment = fragment.replace(path, str(tmp_path / path.strip("/")))
    (tmp_path / "opt/hpclz/bin").mkdir()  # the setup's first lines make it
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    calls = tmp_path / "systemctl.calls"
    (fakes / "systemctl").write_text(f'#!/bin/sh\necho "$*" >> {calls}\n', encoding="utf-8")
    (fakes / "systemctl").chmod(0o755)
    env = {"PATH": f"{fakes}:/usr/bin:/bin", "HPCLZ_HOME": str(tmp_path / "opt/hpclz")}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", fragment], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "no hpclz wheel was given to this cluster" in done.stderr
    assert "hpclz-wheel-update.timer installs it once the locker names it" in done.stderr
    assert (tmp_path / "usr/local/bin/hpclz").is_symlink()
    assert "enable --now hpclz-wheel-update.timer" in calls.read_text(encoding="utf-8")
    assert (tmp_path / "etc/systemd/system/hpclz-wheel-update.timer").exists()


def test_a_first_install_refused_for_good_says_so_and_the_setup_goes_on(tmp_path: Path) -> None:
    """The setup's first install on a node that can never run hpclz (exit status 3: here Ubuntu 20.04, which packages
    no Python >= 3.11): the setup says hpclz cannot be installed, not that a wheel is awaited, and carries on."""
    (scheduler,) = [
        s for s in _scripts(_artifacts("finance")["cyclecloud/slurm-cluster.txt"]) if "hpclz-install-wheel" in s
    ]
    start = scheduler.index("cat > /opt/hpclz/bin/hpclz-install-wheel")
    end = scheduler.index("ln -sf /opt/hpclz/venv/bin/hpclz /usr/local/bin/hpclz\n")
    fragment = scheduler[start:end].replace("/opt/hpclz", str(tmp_path / "opt/hpclz"))
    fragment = fragment.replace("WHEEL_SHA256=@HPCLZ_WHEEL_SHA256@", "WHEEL_SHA256=" + "a" * 64)
    (tmp_path / "opt/hpclz/bin").mkdir(parents=True)
    # The wheel is already there with its digest.
    wheel = tmp_path / "opt/hpclz/wheel" / WHEEL
    wheel.parent.mkdir()
    data = _wheel(wheel)
    fragment = fragment.replace("a" * 64, hashlib.sha256(data).hexdigest()).replace("@HPCLZ_WHEEL_FILE@", WHEEL)
    getter = tmp_path / "opt/hpclz/bin/hpclz-locker-get"  # the locker, already read: a stand-in that does nothing
    getter.write_text("#!/bin/sh\n", encoding="utf-8")
    getter.chmod(0o755)
    node = _node(tmp_path, 'ID=ubuntu\nVERSION_ID="20.04"\n', {"python3": _real_python("3.10")})
    env = {**node, "HPCLZ_HOME": str(tmp_path / "opt/hpclz")}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", fragment], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    said = done.stderr.strip().splitlines()
    assert "which ubuntu 20.04 does not package" in said[-2]
    assert said[-1].startswith("hpclz: hpclz cannot be installed on this node as it is")


# The scheduler's Python. A stand-in node: PATH holds the node's pythons by name, then this machine's tools without its
# Pythons, package managers and systemctl (node_tools); apt-get and systemctl are stand-ins that write down how they were
# called, and apt-get's install puts a real Python 3.11 on the node, as Ubuntu 22.04's python3.11 and python3.11-venv
# would (jammy-updates universe, 3.11.0~rc1-1~22.04: packages.ubuntu.com/jammy-updates/python3.11). The node's
# python3 is a real 3.10, as Ubuntu 22.04's (3.10.6-1~22.04, packages.ubuntu.com/jammy/python3).
def _interpreter(version: str) -> Path | None:
    """A real CPython of this minor version on this machine: the running one's base, or one pyenv installed (the
    python machine kind ships pyenv's 3.10 and 3.12 beside 3.11)."""
    if version == f"{sys.version_info[0]}.{sys.version_info[1]}":
        return Path(sys.base_prefix) / "bin" / f"python{version}"
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(root.glob(f"versions/{version}.*/bin/python{version}"))
    return found[-1] if found else None


def _real_python(version: str) -> Path:
    found = _interpreter(version)
    require(found is not None and found.is_file(), f"a real CPython {version} (pyenv's, on the python machine kind)")
    assert found is not None
    return found


def _node(tmp_path: Path, release: str, pythons: dict[str, Path], apt_gives: Path | None = None) -> dict[str, str]:
    """The environment of a stand-in scheduler: `release` is its /etc/os-release, `pythons` its python3.N commands."""
    node = tmp_path / "node"
    tools, bin_ = node_tools(node / "tools"), node / "bin"
    bin_.mkdir()
    for name, target in pythons.items():
        (bin_ / name).symlink_to(target)
    calls = node / "calls"
    gives = f'[ "$1" != install ] || ln -s {apt_gives} {bin_}/python3.11\n' if apt_gives else ""
    for fake, extra in (("apt-get", gives), ("systemctl", "")):
        (bin_ / fake).write_text(f'#!/bin/sh\necho "{fake} $*" >> {calls}\n{extra}', encoding="utf-8")
        (bin_ / fake).chmod(0o755)
    (node / "os-release").write_text(release, encoding="utf-8")
    return {"PATH": f"{bin_}:{tools}", "HPCLZ_OS_RELEASE": str(node / "os-release")}


def _calls(tmp_path: Path) -> list[str]:
    calls = tmp_path / "node" / "calls"
    return calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []


JAMMY = 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n'
LOCK = REPO / "src" / "hpclz" / "requirements-lock.txt"
WHEELHOUSE = REPO / ".tools" / "wheelhouse"


@pytest.fixture(scope="module")
def hpclz_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's own wheel, built as `hpclz deploy` builds it (hpclz.deploy.wheel: pip wheel, no isolation)."""
    return build_wheel(tmp_path_factory.mktemp("hpclz-wheel"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_ubuntu_2204_scheduler_runs_hpclz_on_python_311(
    home: Path, imds: str, store: Azurite, tmp_path: Path, hpclz_wheel: Path
) -> None:
    """The real hpclz wheel (Requires-Python >=3.11) on a node whose python3 is 3.10 and that has no python3.11 yet:
    the rendered install gets python3.11 and its venv from apt, and the venv it switches to runs hpclz on 3.11, the
    health gate's installer included. Its dependencies are those its lock pins, checked by their SHA-256 and served
    from scripts/install-test-deps' download of them (.tools/wheelhouse) where the node reaches PyPI; pip check
    passes on them."""
    require(
        (WHEELHOUSE / "requirements-lock.txt").is_file()
        and (WHEELHOUSE / "requirements-lock.txt").read_bytes() == LOCK.read_bytes(),
        "a download of src/hpclz/requirements-lock.txt in .tools/wheelhouse (scripts/install-test-deps)",
    )
    py310, py311 = _real_python("3.10"), _real_python("3.11")
    node = _node(tmp_path, JAMMY, {"python3": py310, "python3.10": py310}, apt_gives=py311)
    data = hpclz_wheel.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    _put(store, f"{digest}/{WHEEL}", data)  # the script's name for the file; the digest is what it checks
    done = _install(home, imds, store, digest, node={**node, "PIP_FIND_LINKS": str(WHEELHOUSE)})
    assert done.returncode == 0, done.stderr
    assert _calls(tmp_path) == ["apt-get update", "apt-get install -y python3.11 python3.11-venv"]
    assert f"installed {WHEEL} (sha256 {digest}) on Python 3.11." in done.stdout
    python = home / "venv" / "bin" / "python"
    said = subprocess.run(
        [str(python), "-c", "import sys, hpclz, hpclz.cli; print(sys.version_info >= (3, 11), hpclz.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert said[0] == "True" and Path(said[1]).resolve().is_relative_to(home / "venvs" / digest)
    # hpclz-gate-install, as rendered, runs `$PYTHON -m hpclz.verify.bundle` with this venv's python.
    sched = tmp_path / "sched"
    (sched / "prolog.d").mkdir(parents=True)
    gate = home / "bin" / "hpclz-gate-install"
    gate.write_text(_helpers()["/opt/hpclz/bin/hpclz-gate-install"], encoding="utf-8")
    env = {**node, "HPCLZ_SCHED": str(sched), "HPCLZ_VENV": str(home / "venv"), "HPCLZ_STAMP": str(tmp_path / "s")}
    ran = subprocess.run(["bash", str(gate)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
    assert (sched / "hpclz" / "hpclz-node.pyz").is_file()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_wheel_pip_refuses_for_its_python_stops_the_timer(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    """A wheel whose Requires-Python the node's newest Python misses is refused by pip on every try: one line names
    it, and hpclz-wheel-update.timer is stopped instead of retrying every 10 minutes."""
    py311 = _real_python("3.11")
    node = _node(tmp_path, JAMMY, {"python3": py311, "python3.11": py311})
    data = _wheel(tmp_path / WHEEL, requires_python=">=3.99")
    digest = hashlib.sha256(data).hexdigest()
    _put(store, f"{digest}/{WHEEL}", data)
    _put(store, "current", f"{digest}/{WHEEL}\n".encode())
    done = _install(home, imds, store, UNBAKED, "--follow", node=node)
    assert done.returncode == 3
    (line,) = [s for s in done.stderr.splitlines() if s.startswith("hpclz-install-wheel:")]
    assert line.startswith(f"hpclz-install-wheel: refused {WHEEL} (sha256 {digest}): it requires a different Python: ")
    assert "not in '>=3.99'" in line and "hpclz-wheel-update.timer stopped" in line
    assert _calls(tmp_path) == ["systemctl stop --no-block hpclz-wheel-update.timer"]
    assert not (home / "venv").exists() and list((home / "venvs").iterdir()) == []


def test_a_release_that_packages_no_python_311_stops_the_timer(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    """Ubuntu 20.04's python3 is 3.8 and cyclecloud-slurm 4.0.9 has no Python for it either
    (Azure/cyclecloud-slurm@50e6739 specs/scheduler/cluster-init/files/common.sh l.46-85): refused before apt."""
    py310 = _real_python("3.10")
    node = _node(tmp_path, 'ID=ubuntu\nVERSION_ID="20.04"\n', {"python3": py310})
    digest = _published(store, tmp_path)
    done = _install(home, imds, store, digest, node=node)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines()[-1] == (
        f"hpclz-install-wheel: refused {WHEEL}: hpclz needs Python 3.11 or newer, which ubuntu 20.04 does not "
        "package; hpclz-wheel-update.timer stopped until the next boot (systemctl start hpclz-wheel-update.timer "
        "after the fix)"
    )
    assert _calls(tmp_path) == ["systemctl stop --no-block hpclz-wheel-update.timer"]


def test_elsewhere_the_install_waits_for_cyclecloud_slurms_python(
    home: Path, imds: str, store: Azurite, tmp_path: Path
) -> None:
    """AlmaLinux without its HPC image's python3.12: cyclecloud-slurm's scheduler spec installs one later
    (common.sh l.46-49), so the timer keeps trying and nothing is installed from here."""
    py310 = _real_python("3.10")
    node = _node(tmp_path, 'ID="almalinux"\nVERSION_ID="8.10"\n', {"python3": py310})
    digest = _published(store, tmp_path)
    done = _install(home, imds, store, digest, node=node)
    assert done.returncode == 1
    assert "no python3.11 or newer with venv on this node (almalinux 8.10) yet" in done.stderr
    assert _calls(tmp_path) == []
