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


LENT_H200 = Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "h200-c"
# A stand-in nvidia-smi that answers the program's queries with what a real H200's driver printed (h200-c, captured
# by benchmarks/gpu/gate_on_gpu.sh) and records every other call; REFUSE_AC makes it refuse application clocks, as
# nvidia-smi does on a GPU or driver that does not support setting them.
STAND_IN = """#!/usr/bin/env python3
import os, sys
args = sys.argv[1:]
with open(os.environ["CALLS"], "a") as calls:
    calls.write(" ".join(args) + "\\n")
fixtures = os.environ["FIXTURES"]
if args == ["--query-gpu=index", "--format=csv,noheader"]:
    print("0")
elif args[2:] == ["--query-gpu=clocks.max.memory,clocks.max.sm", "--format=csv,noheader,nounits"]:
    sys.stdout.write(open(os.path.join(fixtures, "query-clocks-max.csv")).read())
elif any(a.startswith("--applications-clocks=") for a in args) and os.environ.get("REFUSE_AC"):
    print("Setting applications clocks is not supported for GPU 00000000:00:06.0.")
    sys.exit(3)
"""


def _supported_pairs() -> set[tuple[int, int]]:
    """(memory MHz, graphics MHz) pairs in the real `nvidia-smi -q -d SUPPORTED_CLOCKS` of a lent H200."""
    pairs, memory = set(), 0
    for line in (LENT_H200 / "nvidia-smi-q-supported-clocks.txt").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Memory":
            memory = int(value.split()[0])
        elif key.strip() == "Graphics":
            pairs.add((memory, int(value.split()[0])))
    return pairs


@pytest.mark.parametrize("refuse", [False, True], ids=["applications-clocks", "locked-clocks-fallback"])
def test_the_clock_program_sets_a_pair_the_real_driver_supports(tmp_path: Path, refuse: bool) -> None:
    """The rendered program, run against the real H200 driver's answers: it reads "3201, 1980" as memory 3201 MHz and
    graphics 1980 MHz, asks for that pair, which the driver lists as supported, and falls back to locking the graphics
    clock where application clocks are refused. (Not run on the lent GPU itself: its tool forbids changing the
    accelerator's settings; benchmarks/gpu/gate_on_gpu.sh ran only the queries there.)"""
    program = tmp_path / "hpclz-gpu-clocks"
    program.write_text(_heredoc(_script("ai-training", "h200"), PROGRAM))
    stand_in = tmp_path / "bin" / "nvidia-smi"
    stand_in.parent.mkdir()
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    calls = tmp_path / "calls.txt"
    env = {"PATH": f"{stand_in.parent}:/usr/bin:/bin", "CALLS": str(calls), "FIXTURES": str(LENT_H200)}
    done = subprocess.run(
        ["bash", str(program)], env={**env, "REFUSE_AC": "1" if refuse else ""}, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    sets = [c for c in calls.read_text().splitlines() if "--query-gpu" not in c]
    expected = ["-pm 1", "-i 0 --applications-clocks=3201,1980"] + (["-i 0 -lgc 1980,1980"] if refuse else [])
    assert sets == expected
    assert (3201, 1980) in _supported_pairs()
