"""The agent as the Slurm side runs it: a subprocess, stdlib only, JSON out, NHC exit codes, fixture trees."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hpclz.errors import ExitCode
from hpclz.verify.bundle import build
from hpclz.verify.model import NodeReport, Status
from tests.conftest import require
from tests.verify.helpers import FAULTS, FIXTURES, GOOD

CLUSTER = FIXTURES / "cluster-example"


def run(
    *args: str, python: str = sys.executable, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("SLURMD_NODENAME", "HPCLZ_VERIFY_FIXTURES")}
    full.update(env or {})
    return subprocess.run(
        [python, *args], capture_output=True, text=True, env=full, timeout=120, check=False, cwd=FIXTURES
    )


def test_agent_json_validates_as_a_node_report(tmp_path: Path) -> None:
    out = tmp_path / "node.json"
    done = run("-m", "hpclz.verify.agent", "--fixtures", str(GOOD), "--json", str(out), "--node", "n7")
    assert done.returncode == 0, done.stderr
    report = NodeReport.model_validate_json(out.read_text())
    assert report.node == "n7" and report.sku == "Standard_ND96isr_H200_v5" and report.tier == "health"
    assert report.status is Status.PASS and len(report.checks) == 19  # the health tier only


def test_a_failing_node_exits_verify_failed_with_json_on_stdout() -> None:
    done = run("-m", "hpclz.verify.agent", "--fixtures", str(FAULTS / "ib-port-down"))
    assert done.returncode == ExitCode.VERIFY_FAILED
    report = NodeReport.model_validate(json.loads(done.stdout))
    assert [c.check_id for c in report.failures()] == ["HPCLZ-VFY-011"]


def test_nhc_mode_is_silent_when_healthy_and_one_line_when_not() -> None:
    healthy = run("-m", "hpclz.verify.agent", "--nhc", env={"HPCLZ_VERIFY_FIXTURES": str(GOOD)})
    assert (healthy.returncode, healthy.stdout) == (0, "")
    sick = run("-m", "hpclz.verify.agent", "--nhc", env={"HPCLZ_VERIFY_FIXTURES": str(FAULTS / "pcie-gen4-x8")})
    assert sick.returncode == 1
    assert sick.stdout.splitlines() == [
        "NHC: hpclz HPCLZ-VFY-008 GPU 1 (00000002:00:00.0): PCIe Gen4 x8, expected Gen5 x16"
    ]


def test_one_shared_tree_gives_the_slurm_node_named_bad1_its_own_readings() -> None:
    bad = run("-m", "hpclz.verify.agent", "--nhc", "--fixtures", str(CLUSTER), env={"SLURMD_NODENAME": "bad1"})
    good = run("-m", "hpclz.verify.agent", "--nhc", "--fixtures", str(CLUSTER), env={"SLURMD_NODENAME": "node2"})
    assert bad.returncode == 1 and "Xid 79" in bad.stdout
    assert (good.returncode, good.stdout) == (0, "")


def test_overrides_and_bad_usage() -> None:
    relaxed = run("-m", "hpclz.verify.agent", "--nccl", "--fixtures", str(FAULTS / "nccl-slow"), "--nhc")
    assert relaxed.returncode == 1 and "HPCLZ-VFY-030" in relaxed.stdout
    passed = run(
        "-m", "hpclz.verify.agent", "--nccl", "--fixtures", str(FAULTS / "nccl-slow"), "--nhc",
        "--set", "nccl_allreduce_busbw_gbps=150",
    )  # fmt: skip
    assert passed.returncode == 0, passed.stdout
    typo = run("-m", "hpclz.verify.agent", "--fixtures", str(GOOD), "--set", "nccl_busbw=1")
    assert typo.returncode == ExitCode.USAGE and "unknown threshold metric" in typo.stderr
    missing = run("-m", "hpclz.verify.agent", "--fixtures", "/nonexistent/dir")
    assert missing.returncode == ExitCode.USAGE and "does not exist" in missing.stderr
    assert "Traceback" not in typo.stderr + missing.stderr


def test_the_agent_imports_no_pydantic_typer_or_rich() -> None:
    probe = (
        "import sys, hpclz.verify.agent, hpclz.verify.nccl, hpclz.verify.perf;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'typer', 'rich', 'torch'));"
        "print(bad)"
    )
    done = run("-c", probe)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_single_file_bundle_runs_on_a_bare_python(tmp_path: Path) -> None:
    bare = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else shutil.which("python3")
    require(bare is not None and "venv" not in str(bare), "a system python3 outside the venv")
    assert bare is not None
    target = build(tmp_path / "agent.pyz")
    done = run(str(target), "--fixtures", str(CLUSTER), "--nhc", python=bare, env={"SLURMD_NODENAME": "bad1"})
    assert done.returncode == 1 and "Xid 79" in done.stdout, done.stderr
    clean = run(str(target), "--fixtures", str(GOOD), "--tier", "perf", "--nccl", python=bare)
    assert clean.returncode == 0 and NodeReport.model_validate_json(clean.stdout).status is Status.NOT_MEASURED
