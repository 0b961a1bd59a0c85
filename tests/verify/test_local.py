"""`hpclz verify --local` as a service call: SKU choice, config overrides, the report it returns."""

from __future__ import annotations

import shutil

import pytest

from hpclz.config import load_config
from hpclz.errors import ExitCode, HpclzError
from hpclz.verify.local import run_local
from hpclz.verify.model import Status
from tests.conftest import REPO
from tests.verify.helpers import FAULTS, GOOD


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
