"""Local backend specifics: file modes, a lock held by another process, crash-safe writes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from hpclz.azure.backends import open_backend
from hpclz.config.root import LandingZoneConfig
from hpclz.errors import ExitCode
from hpclz.state.errors import StateLockedError, StateStorageError
from hpclz.state.factory import new_state
from hpclz.state.local import LocalBackend
from tests.conftest import REPO, CliResult
from tests.state.conftest import sample_state

# A second process that takes the lock, says so, and holds it until told to stop (or killed).
HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from hpclz.config.loader import load_config
    from hpclz.azure.backends import open_backend
    config_file = Path(sys.argv[1])
    backend = open_backend(load_config(config_file).config, base_dir=config_file.parent)
    with backend.lock(sys.argv[2]):
        print("locked", flush=True)
        sys.stdin.readline()
    """
)

# A process that dies (no cleanup, no exception handlers) at the moment the new state would be renamed in.
DIES_MID_WRITE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from hpclz.config.loader import load_config
    from hpclz.azure.backends import open_backend
    config_file = Path(sys.argv[1])
    backend = open_backend(load_config(config_file).config, base_dir=config_file.parent)
    doc = backend.read()
    doc.outputs["half"] = "written"
    os.replace = lambda *args: os._exit(9)
    backend.write(doc)
    """
)


def _local(config: LandingZoneConfig, config_file: Path) -> LocalBackend:
    backend = open_backend(config, base_dir=config_file.parent, config_file=str(config_file))
    assert isinstance(backend, LocalBackend)
    return backend


def _python(script: str, *args: str, **popen: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen([sys.executable, "-c", script, *args], env=env, text=True, **popen)


def test_files_are_private(config: LandingZoneConfig, config_file: Path) -> None:
    backend = _local(config, config_file)
    with backend.lock("deploy"):
        doc = backend.write(sample_state(config))
        backend.write(doc)
        written = list((config_file.parent / ".hpclz").rglob("*"))
    assert {p.name for p in written} >= {"energy-prod", "state.json", "lock.json", "state.lock", "history", "1.json"}
    folders = [config_file.parent / ".hpclz", *(p for p in written if p.is_dir())]
    files = [p for p in written if p.is_file()]
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in folders} == {"0o700"}
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {"0o600"}


def test_reading_creates_nothing(config: LandingZoneConfig, config_file: Path) -> None:
    backend = _local(config, config_file)
    assert (backend.read(), backend.lock_info(), backend.history()) == (None, None, [])
    assert not (config_file.parent / ".hpclz").exists()


def test_a_lock_held_by_another_process_is_refused_until_it_dies(config: LandingZoneConfig, config_file: Path) -> None:
    holder = _python(HOLDER, str(config_file), "deploy", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        backend = _local(config, config_file)
        with pytest.raises(StateLockedError) as refused, backend.lock("destroy"):
            pass
        assert refused.value.exit_code is ExitCode.STATE_LOCKED
        message = str(refused.value)
        assert f"pid {holder.pid}" in message and "'deploy'" in message
        assert f"hpclz state unlock {config_file} --force" in message
        # A killed holder never cleans up, but the kernel drops its flock: the lock is free again.
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        assert backend.lock_info() is None
        with backend.lock("destroy") as info:
            assert info.pid == os.getpid()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_failed_rename_leaves_the_old_state_and_no_temp_file(
    config: LandingZoneConfig, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _local(config, config_file)
    backend.write(new_state(config))
    before = backend.state_file.read_bytes()
    doc = backend.read()
    assert doc is not None

    real_replace = os.replace

    def refuse_state_rename(source: str, target: Path) -> None:
        if Path(target).name == "state.json":
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", refuse_state_rename)
    with pytest.raises(StateStorageError, match="No space left on device"):
        backend.write(doc)
    monkeypatch.undo()
    assert backend.state_file.read_bytes() == before
    assert [p.name for p in backend.root.iterdir() if p.name.startswith(".tmp-")] == []


def test_a_process_dying_mid_write_leaves_the_old_state_readable(config: LandingZoneConfig, config_file: Path) -> None:
    backend = _local(config, config_file)
    first = backend.write(sample_state(config))
    dying = _python(DIES_MID_WRITE, str(config_file))
    assert dying.wait(timeout=60) == 9
    survivor = _local(config, config_file).read()
    assert survivor == first
    # The next write succeeds from there; the dead process's temp file is ignored.
    assert backend.write(first).serial == first.serial + 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "is not valid JSON"),
        ('{"schema_version": 99, "landing_zone": "energy"}', "schema version 99, newer than this hpclz"),
        ('{"schema_version": 1, "serial": "many"}', "not a valid hpclz state document: serial:"),
    ],
)
def test_a_damaged_or_newer_state_is_one_clear_line(
    config: LandingZoneConfig, config_file: Path, content: str, expected: str
) -> None:
    backend = _local(config, config_file)
    backend.write(new_state(config))
    backend.state_file.write_text(content)
    with pytest.raises(StateStorageError, match=expected) as refused:
        _local(config, config_file).read()
    assert "\n" not in str(refused.value)
    with pytest.raises(StateStorageError):  # and nothing is written over it
        _local(config, config_file).write(new_state(config))
    assert backend.state_file.read_text() == content


def test_a_write_waits_briefly_for_another_write_then_fails_in_one_line(
    config: LandingZoneConfig, config_file: Path
) -> None:
    from filelock import FileLock

    backend = _local(config, config_file)
    doc = backend.write(new_state(config))
    backend.write_timeout_s = 0.2
    other_writer = FileLock(str(backend.root / "write.lock"), thread_local=False)
    with other_writer, pytest.raises(StateStorageError, match=r"another write has held it for 0\.2 s"):
        backend.write(doc)
    assert backend.write(doc).serial == 2
    assert backend.write(backend.read() or doc).serial == 3


def test_unlock_force_breaks_a_lock_held_by_a_live_hung_process(
    config: LandingZoneConfig, config_file: Path, run_cli: Callable[..., CliResult]
) -> None:
    holder = _python(HOLDER, str(config_file), "deploy", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        refused = run_cli("state", "unlock", str(config_file))
        assert refused.exit_code == ExitCode.USAGE and f"pid {holder.pid}" in refused.stderr
        forced = run_cli("state", "unlock", str(config_file), "--force")
        assert forced.exit_code == ExitCode.OK and f"pid {holder.pid}" in forced.stdout
        with _local(config, config_file).lock("repair") as info:  # the hung process still runs
            assert holder.poll() is None and info.pid == os.getpid()
    finally:
        holder.kill()
        holder.wait()


def _with_state(config_file: Path, state: dict[str, object]) -> None:
    data = YAML(typ="safe").load((REPO / "configs" / "energy.yaml").read_text())
    data["state"] = state
    config_file.write_text(json.dumps(data))


def test_a_folder_hpclz_did_not_create_keeps_its_mode(config: LandingZoneConfig, config_file: Path) -> None:
    team_folder = config_file.parent / "team-state"
    team_folder.mkdir(mode=0o755)
    team_folder.chmod(0o755)
    backend = LocalBackend(team_folder, "energy-prod", guard=_local(config, config_file).guard)
    with backend.lock("deploy"):
        backend.write(sample_state(config))
    assert stat.S_IMODE(team_folder.stat().st_mode) == 0o755  # the user's folder: never chmodded
    assert stat.S_IMODE((team_folder / "energy-prod").stat().st_mode) == 0o700  # made by hpclz: private


def test_state_outside_the_config_folder_only_when_asked(run_cli: Callable[..., CliResult], config_file: Path) -> None:
    elsewhere = config_file.parent.parent / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o755)
    for path in (str(elsewhere), "../elsewhere"):
        _with_state(config_file, {"backend": "local", "path": path})
        refused = run_cli("plan", str(config_file), "--refresh=false")
        assert refused.exit_code == ExitCode.CONFIG_INVALID
        assert "state.path" in refused.stderr and "leads outside the config's folder" in refused.stderr
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755 and not list(elsewhere.iterdir())
    _with_state(config_file, {"backend": "local", "path": str(elsewhere), "outside_config_folder": True})
    assert run_cli("plan", str(config_file), "--refresh=false").exit_code in (0, 2)


def test_a_linked_state_folder_is_refused(config: LandingZoneConfig, config_file: Path) -> None:
    target = config_file.parent / "real"
    target.mkdir(mode=0o755)
    (config_file.parent / ".hpclz").symlink_to(target)
    backend = _local(config, config_file)
    with pytest.raises(StateStorageError, match="symbolic link"), backend.lock("deploy"):
        pass
    assert stat.S_IMODE(target.stat().st_mode) == 0o755 and not list(target.iterdir())
