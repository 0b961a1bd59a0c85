"""benchmarks/gpu/gate_on_gpu.sh, the health gate as a node runs it on a lent GPU machine, dry-run here on the real
lent H200's captured readings (tests/fixtures/gpu/h200-b): what the device call will run, end to end, so a run there
is never the script's first."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.render.test_cloudinit import _artifacts

SCRIPT = REPO / "benchmarks" / "gpu" / "gate_on_gpu.sh"
EXTRACT = REPO / "benchmarks" / "gpu" / "gate_files.py"
LENT_H200 = REPO / "tests" / "fixtures" / "gpu" / "h200-b"


def _gate_files(tmp_path: Path) -> Path:
    render = tmp_path / "render"
    template = render / "artifacts/cyclecloud/slurm-cluster.txt"
    template.parent.mkdir(parents=True)
    template.write_text(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"])
    files = tmp_path / "files"
    done = subprocess.run([sys.executable, str(EXTRACT), str(render), str(files)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return files


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_gate_script_passes_the_healthy_node_and_drains_the_planted_fault(tmp_path: Path) -> None:
    files, out = _gate_files(tmp_path), tmp_path / "out"
    env = {"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "HPCLZ_VERIFY_FIXTURES": str(LENT_H200)}
    done = subprocess.run(["bash", str(SCRIPT), str(files), str(out), "1"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "install.txt").read_text().endswith("exit 0\n")
    rows = list(csv.DictReader((out / "runs.tsv").open(), delimiter="\t"))
    outcome = [(r["case"], r["tier"], r["exit"], r["line"].split(": ", 1)[1].split(":")[0]) for r in rows]
    assert outcome == [
        ("healthy", "passive", "0", "lent-gpu healthy"),
        ("healthy", "prolog", "0", "lent-gpu healthy"),
        ("healthy", "epilog", "0", "lent-gpu healthy"),
        ("healthy", "boot", "0", "lent-gpu healthy"),
        ("fault", "passive", "0", "lent-gpu-fault failed once, not drained yet"),
        ("fault", "passive", "0", "lent-gpu-fault failed"),
        ("fault", "prolog", "1", "lent-gpu-fault failed"),
        ("fault", "epilog", "0", "lent-gpu-fault failed"),
        ("fault", "boot", "1", "lent-gpu-fault failed"),
    ]
    assert all("HPCLZ-VFY-002 1 of 2 GPUs listed by the driver" in r["line"] for r in rows if r["case"] == "fault")
    drains = [line for line in (out / "slurm-calls.txt").read_text().splitlines() if "State=DRAIN" in line]
    assert [d.split(" Reason=hpclz: gate ")[1].split(" ")[0] for d in drains] == ["passive", "prolog", "epilog", "boot"]
    assert all("NodeName=lent-gpu-fault " in d for d in drains)
