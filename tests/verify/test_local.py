"""`hpclz verify --local` as a service call: SKU choice, config overrides, the report it returns."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.config import load_config
from hpclz.errors import ExitCode, HpclzError
from hpclz.verify.local import run_local
from hpclz.verify.model import Status
from tests.conftest import REPO, CliResult, require
from tests.verify.helpers import FAULTS, GOOD

# The CPU build of torch warns when numpy is absent; hpclz never needs numpy.
pytestmark = pytest.mark.filterwarnings("ignore:Failed to initialize NumPy:UserWarning")


def test_health_tier_on_the_good_fixtures() -> None:
    report = run_local("Standard_ND96isr_H200_v5", nccl=False, fixtures=GOOD)
    (node,) = report.nodes
    assert node.tier == "health" and node.status is Status.PASS and report.collectives == []
    assert report.bad_nodes == {}


def test_with_nccl_it_runs_the_full_single_node_tier() -> None:
    report = run_local("Standard_ND96isr_H200_v5", nccl=True, fixtures=FAULTS / "nccl-slow")
    (node,) = report.nodes
    assert node.tier == "health+perf+nccl"
    (run,) = report.collectives
    assert run.status is Status.FAIL and run.threshold_busbw_gbps == 431
    assert list(report.bad_nodes.values()) == [
        [f"HPCLZ-VFY-030 {node.failures()[0].title}: {node.failures()[0].message}"]
    ]


def test_config_overrides_apply_to_the_detected_sku() -> None:
    config = load_config(REPO / "configs" / "ai-training.yaml").config
    config.verify.thresholds = {"standard_nd96isr_h200_v5": {"nccl_allreduce_busbw_gbps": 150.0}}
    report = run_local(config, nccl=True, fixtures=FAULTS / "nccl-slow")  # the fixture's vm-size.txt says H200
    assert report.landing_zone == config.metadata.name
    assert report.collectives[0].status is Status.PASS and report.collectives[0].threshold_busbw_gbps == 150


def test_a_misspelt_override_is_a_config_error_naming_the_key() -> None:
    config = load_config(REPO / "configs" / "ai-training.yaml").config
    config.verify.thresholds = {"Standard_ND96isr_H200_v5": {"nccl_busbw": 1.0}}
    with pytest.raises(HpclzError) as caught:
        run_local(config, fixtures=GOOD)
    assert caught.value.exit_code == ExitCode.CONFIG_INVALID
    assert "verify.thresholds.Standard_ND96isr_H200_v5.nccl_busbw: unknown threshold metric" in str(caught.value)


def test_missing_fixtures_folder_is_a_usage_error(tmp_path: object) -> None:
    with pytest.raises(HpclzError) as caught:
        run_local("Standard_ND96isr_H200_v5", fixtures=REPO / "no-such-fixtures")
    assert caught.value.exit_code == ExitCode.USAGE


def test_on_this_cpu_machine_perf_is_not_measured_for_lack_of_a_gpu() -> None:
    report = run_local("Standard_ND96isr_H200_v5", nccl=True)
    checks = {c.check_id: c for c in report.nodes[0].checks}
    assert checks["HPCLZ-VFY-030"].status is Status.NOT_MEASURED
    if shutil.which("nvidia-smi") is None:
        assert checks["HPCLZ-VFY-001"].status is Status.FAIL
        assert checks["HPCLZ-VFY-001"].message == "nvidia-smi failed: not installed: nvidia-smi not on PATH"


def test_the_cli_local_path_reaches_run_local(
    run_cli: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HPCLZ_VERIFY_FIXTURES", str(FAULTS / "xid79"))
    result = run_cli("verify", str(REPO / "configs" / "ai-training.yaml"), "--local", "-o", "json")
    envelope = json.loads(result.stdout)
    assert result.exit_code == ExitCode.VERIFY_FAILED, result.stderr
    (node,) = envelope["result"]["nodes"]
    assert node["sku"] == "Standard_ND96isr_H200_v5"  # from the fixtures' vm-size.txt
    assert [c["check_id"] for c in node["checks"] if c["status"] == "fail"] == ["HPCLZ-VFY-006"]


GPU_SCRIPT = REPO / "benchmarks" / "gpu" / "verify_on_gpu.sh"
CAPTURE_SCRIPT = REPO / "benchmarks" / "gpu" / "capture_on_gpu.sh"
GATE_SCRIPT = REPO / "benchmarks" / "gpu" / "gate_on_gpu.sh"


@pytest.mark.parametrize("script", [GPU_SCRIPT, CAPTURE_SCRIPT, GATE_SCRIPT], ids=lambda p: p.name)
def test_the_gpu_machine_scripts_are_valid_bash_and_pass_shellcheck(script: Path) -> None:
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    require(shutil.which("shellcheck") is not None, "shellcheck (Debian package)")
    checked = subprocess.run(
        ["shellcheck", "--shell=bash", "--severity=warning", str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_gpu_machine_script_runs_here_and_records_every_target_as_unmeasured(tmp_path: Path) -> None:
    """A dry run on this CPU machine: what a lent GPU machine will run, end to end. Without CUDA no perf figure
    exists, so no target may read as met; the health tier's time is recorded either way."""
    done = subprocess.run(["bash", str(GPU_SCRIPT), str(tmp_path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "compare.json").read_text())
    assert {m: rows[m]["target"] for m in ("gemm_bf16_tflops", "hbm_copy_tbps", "h2d_gbps")} == {
        "gemm_bf16_tflops": 0.97,
        "hbm_copy_tbps": 0.95,
        "h2d_gbps": 0.95,
    }
    assert all(rows[m]["meets"] is None for m in ("gemm_bf16_tflops", "hbm_copy_tbps", "h2d_gbps", "d2h_gbps"))
    assert rows["health_tier_s"]["target"] == 60 and rows["health_tier_s"]["measured"] is not None
    assert (tmp_path / "health.json").exists() and (tmp_path / "nhc.txt").exists()
