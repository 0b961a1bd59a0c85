"""hpclz-cc-await, as rendered into the CycleCloud server's customData, run with test doubles for what CycleCloud does
at the boundary: `curl` stands for its web server, and `sleep` for the time in which CycleCloud imports a file from
its data directory (it takes each imported file out of config/data: Azure/cyclecloud-slurm-workspace@bc0fc1b:
bicep/install.sh l.256-257 waits "until (! ls /opt/cycle_server/config/data/*.txt)")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.render.test_cloudinit import _cloud_config

AWAIT = "/opt/hpclz/bin/hpclz-cc-await"


@pytest.fixture
def helper(tmp_path: Path) -> Path:
    (text,) = [f["content"] for f in _cloud_config("finance")["write_files"] if f["path"] == AWAIT]
    script = tmp_path / "hpclz-cc-await"
    script.write_text(text, encoding="utf-8")
    script.chmod(0o755)
    (tmp_path / "bin").mkdir()
    return script


def _double(folder: Path, name: str, body: str) -> None:
    path = folder / "bin" / name
    path.write_text(f"#!/bin/bash\necho {name} >> {folder}/calls\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _run(helper: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{helper.parent}/bin:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(helper), *args], env=env, capture_output=True, text=True, timeout=60)


def _calls(folder: Path, name: str) -> int:
    calls = folder / "calls"
    return calls.read_text(encoding="utf-8").split().count(name) if calls.exists() else 0


def test_a_slow_import_is_waited_for(helper: Path) -> None:
    record = helper.parent / "hpclz-admin.json"
    record.write_text("[]", encoding="utf-8")
    # CycleCloud imports the file during the third wait.
    _double(helper.parent, "sleep", f'[ "$(grep -c sleep {helper.parent}/calls)" -lt 3 ] || rm -f {record}')
    done = _run(helper, "imported", str(record))
    assert (done.returncode, done.stderr) == (0, "")
    assert _calls(helper.parent, "sleep") == 3


def test_an_import_that_never_happens_fails_after_360_s_with_one_line(helper: Path) -> None:
    record = helper.parent / "hpclz-admin.json"
    record.write_text("[]", encoding="utf-8")
    _double(helper.parent, "sleep", "")
    done = _run(helper, "imported", str(record))
    assert done.returncode == 1
    assert done.stderr == (
        f"hpclz-cc-await: CycleCloud did not import {record} within 360 s; it is still in its data directory "
        "(see /opt/cycle_server/logs/cycle_server.log)\n"
    )
    assert _calls(helper.parent, "sleep") == 36  # bounded: 36 checks 10 s apart, CCWS's 360 s


def test_an_already_imported_file_does_not_wait(helper: Path) -> None:
    _double(helper.parent, "sleep", "")
    done = _run(helper, "imported", str(helper.parent / "gone.json"))
    assert done.returncode == 0 and _calls(helper.parent, "sleep") == 0


def test_https_that_comes_up_late_is_waited_for(helper: Path) -> None:
    # The web server refuses twice (curl -f exits 7 on a refused connection), then answers.
    _double(helper.parent, "curl", f'[ "$(grep -c curl {helper.parent}/calls)" -ge 3 ] || exit 7')
    _double(helper.parent, "sleep", "")
    done = _run(helper, "https")
    assert (done.returncode, _calls(helper.parent, "curl"), _calls(helper.parent, "sleep")) == (0, 3, 2)


def test_https_that_never_comes_up_fails_with_one_line(helper: Path) -> None:
    _double(helper.parent, "curl", "exit 7")
    _double(helper.parent, "sleep", "")
    done = _run(helper, "https")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "hpclz-cc-await: CycleCloud did not answer on https://localhost within 360 s "
        "(see /opt/cycle_server/logs/cycle_server.log)"
    ]


def test_an_unknown_step_is_refused(helper: Path) -> None:
    done = _run(helper, "lockers")
    assert done.returncode == 1 and "unknown step 'lockers'" in done.stderr
