"""GPU clocks locked at every boot: persistence mode and application clocks are lost at a reboot (NVML,
nvmlDeviceSetPersistenceMode, nvmlDeviceResetApplicationsClocks), and CycleCloud runs a node's CloudInit script once
per VM, so the node script installs a oneshot service that sets them before slurmd starts."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require
from tests.render.test_cloudinit import _artifacts, _nodearrays, _scripts

UNIT = "hpclz-gpu-clocks.service"
PROGRAM = "/opt/hpclz/bin/hpclz-gpu-clocks"


def _script(stem: str, array: str) -> str:
    return _scripts(_nodearrays(_artifacts(stem)["cyclecloud/slurm-cluster.txt"])[array])[0]


def _heredoc(script: str, path: str) -> str:
    [text] = re.findall(rf"cat > {re.escape(path)} <<'HPCLZ_EOF'\n(.*?)^HPCLZ_EOF$", script, re.S | re.M)
    return str(text)


@pytest.mark.parametrize("array", ["h100", "h200"])
def test_gpu_clocks_are_a_oneshot_service_before_slurmd(array: str, tmp_path: Path) -> None:
    script = _script("ai-training", array)
    unit = _heredoc(script, f"/etc/systemd/system/{UNIT}")
    program = _heredoc(script, PROGRAM)
    assert f"Type=oneshot\nRemainAfterExit=yes\nExecStart={PROGRAM}\n" in unit
    assert "Before=slurmd.service" in unit and "WantedBy=multi-user.target" in unit
    assert f"systemctl enable {UNIT}\nsystemctl start {UNIT}\n" in script
    # Only the service sets the clocks: nothing in the first-boot script itself does.
    outside = script.replace(program, "")
    assert "nvidia-smi -pm 1" not in outside and "--applications-clocks" not in outside
    assert "nvidia-smi -pm 1" in program and '--applications-clocks="$mem,$sm"' in program
    path = tmp_path / "hpclz-gpu-clocks"
    path.write_text(program)
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=60)
    _verify(tmp_path, unit, program)


def _verify(tmp_path: Path, unit: str, program: str) -> None:
    """systemd's own check of the unit, in a root holding the unit and its program (systemd-analyze(1), verify:
    "Load unit files and print warnings if any errors are detected"; --root: operate on the files below it)."""
    analyze = shutil.which("systemd-analyze")
    require(analyze is not None, "systemd-analyze (Debian's systemd package)")
    assert analyze is not None
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "opt/hpclz/bin").mkdir(parents=True)
    # The targets and slices a service's default dependencies name (systemd.service(5), "Default Dependencies").
    (root / "usr/lib/systemd/system").mkdir(parents=True)
    for stock in Path("/usr/lib/systemd/system").iterdir():
        if stock.suffix in (".target", ".slice") and stock.is_file() and not stock.is_symlink():
            shutil.copy(stock, root / "usr/lib/systemd/system" / stock.name)
    (root / "etc/systemd/system" / UNIT).write_text(unit)
    executable = root / PROGRAM.lstrip("/")
    executable.write_text(program)
    executable.chmod(0o755)
    done = subprocess.run(
        [analyze, "verify", f"--root={root}", str(root / "etc/systemd/system" / UNIT)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert UNIT not in done.stderr, done.stderr  # no warning about the unit itself


@pytest.mark.parametrize(("stem", "array"), [("ai-training", "gb300"), ("finance", "montecarlo")])
def test_a_partition_without_gpu_clocks_gets_no_clock_service(stem: str, array: str) -> None:
    script = _script(stem, array)
    assert UNIT not in script and PROGRAM not in script and "nvidia-smi -pm" not in script
