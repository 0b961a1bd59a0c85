"""Fault classes: aznhc's fault code -> Guest Health Report category and the actions before the report."""

from __future__ import annotations

import pytest

from hpclz.remediate.classify import CATEGORY, REBOOT, REIMAGE, REPORT, classify, worst
from tests.support.arm_standin.repair import HPC_CATEGORIES


def test_every_category_is_one_azure_accepts() -> None:
    assert set(CATEGORY.values()) <= HPC_CATEGORIES


@pytest.mark.parametrize(
    ("code", "category", "ladder"),
    [
        ("NHC2013", "Resource.Hpc.Unhealthy.XID79FallenOffBus", (REPORT,)),
        ("NHC2011", "Resource.Hpc.Unhealthy.XID95UncontainedECCError", (REPORT,)),
        ("NHC2007", "Resource.Hpc.Unhealthy.HpcRowRemapFailure", (REPORT,)),
        ("NHC2004", "Resource.Hpc.Unhealthy.IBPortDown", (REBOOT, REPORT)),
        ("NHC2015", "Resource.Hpc.Unhealthy.UnhealthyGPUNvidiasmi", (REBOOT, REPORT)),
        ("NHC2010", "Resource.Hpc.Unhealthy.ManualInvestigation", (REBOOT, REIMAGE, REPORT)),
        ("NHC2023", "Resource.Hpc.Unhealthy.HpcGenericFailure", (REBOOT, REPORT)),
        (None, "Resource.Hpc.Unhealthy.HpcGenericFailure", (REBOOT, REIMAGE, REPORT)),
        ("NHCNA", "Resource.Hpc.Unhealthy.HpcGenericFailure", (REBOOT, REIMAGE, REPORT)),
    ],
)
def test_classes(code: str | None, category: str, ladder: tuple[str, ...]) -> None:
    fault = classify(code)
    assert (fault.category, fault.ladder) == (category, ladder)


def test_the_surest_hardware_fault_wins_on_a_node_with_several() -> None:
    assert worst(["NHC2010", "NHC2013", "NHC2004"]).code == "NHC2013"
    assert worst([]).code == "NHC2001"


def test_verify_never_resumes_a_node_remediation_holds_but_may_a_gate_drain() -> None:
    from hpclz.slurm.client import NodeInfo

    held = NodeInfo("n", "drained", reason="hpclz: repair 0003 HPCLZ-VFY-011 mlx5_ib3 port 1: DOWN")
    retired = NodeInfo("n", "drained", reason="hpclz: repair 0003 retired: Resource.Hpc.Unhealthy.IBPortDown reported")
    gated = NodeInfo("n", "drained", reason="hpclz: gate prolog failed: HPCLZ-VFY-006 Xid 79")
    assert not held.drained_by_hpclz and not retired.drained_by_hpclz
    assert gated.drained_by_hpclz  # verify's re-test may return a node the gate drained
