"""A real 8-GPU V100 node: `nvidia-smi -q -x` of 8 x Tesla V100S-PCIE-32GB, driver 460.73.01, DTD v11
(GuanceCloud/datakit internal/plugins/inputs/nvidiasmi/common_test.go, `gtx8card`, at 0fe90a75; MIT; see
corpus/PROVENANCE.md). Pre-Ampere layout: `single_bit`/`double_bit` ECC counters, a `retired_pages` block with
`pending_blacklist` and `pending_retirement`, `remapped_rows` N/A, `clocks_throttle_reasons`. The ND40rs_v2
thresholds (8 x V100 32 GB, Gen3 x16; aznhc conf/nd40rs_v2.conf) are the nearest Azure size.
A fault case changes one element of GPU 0 to what the driver prints on a faulty GPU."""

from __future__ import annotations

import pytest

from hpclz.verify.checks import gpu as checks
from hpclz.verify.checks.core import FAIL, PASS, WARN
from hpclz.verify.probes.facts import NodeFacts, NvidiaSmi
from hpclz.verify.probes.nvsmi import parse_xml
from hpclz.verify.thresholds import load_thresholds
from tests.verify.helpers import FIXTURES

CAPTURE = FIXTURES / "corpus" / "nvsmi" / "v100s-pcie-8gpu-v11.xml"
ND40 = load_thresholds("Standard_ND40rs_v2")
BUSES = [f"00000000:00:{d:02X}.0" for d in range(0x0D, 0x15)]


def facts(*edits: tuple[str, str]) -> NodeFacts:
    text = CAPTURE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)  # the first occurrence: GPU 0's
    gpus, driver = parse_xml(text)
    return NodeFacts(node="n1", sku="Standard_ND40rs_v2", nvsmi=NvidiaSmi(True, gpus=gpus, driver_version=driver))


def test_the_capture_reads_as_eight_v100s_on_gen3_x16() -> None:
    gpus = facts().nvsmi.gpus
    assert [g.bus_id for g in gpus] == BUSES and {g.name for g in gpus} == {"Tesla V100S-PCIE-32GB"}
    assert {(g.memory_total_mib, g.pcie_gen, g.pcie_width, g.retired_pages) for g in gpus} == {(32510, 3, 16, 0)}
    assert facts().nvsmi.driver_version == "460.73.01"


@pytest.mark.parametrize("check", ["gpu_count", "gpu_memory", "gpu_ecc", "row_remap", "pcie_link", "clock_events"])
def test_the_healthy_node_passes(check: str) -> None:
    verdict = getattr(checks, check)(facts(), ND40)
    assert verdict.status == PASS, verdict


def test_persistence_off_on_every_gpu_warns() -> None:
    verdict = checks.persistence(facts(), ND40)
    assert verdict.status == WARN and "GPU 7 (00000000:00:14.0)" in verdict.message


VOLATILE_DBE = (
    "<cbu>0</cbu>\n                    <total>0</total>\n                </double_bit>\n            </volatile>",
    "<cbu>0</cbu>\n                    <total>1</total>\n                </double_bit>\n            </volatile>",
)


@pytest.mark.parametrize(
    ("edit", "check", "status", "words"),
    [
        (VOLATILE_DBE, "gpu_ecc", FAIL, "1 uncorrectable ECC errors since reset"),
        (
            ("<pending_retirement>No</pending_retirement>", "<pending_retirement>Yes</pending_retirement>"),
            "gpu_ecc",
            WARN,
            "page retirement pending (0 retired): reload the driver",
        ),
        (
            ("<current_link_width>16x</current_link_width>", "<current_link_width>8x</current_link_width>"),
            "pcie_link",
            FAIL,
            "x8",
        ),
    ],
    ids=["volatile double-bit", "page retirement pending", "PCIe x8 while 97 % busy"],
)
def test_a_fault_on_gpu_0_is_reported_naming_it(edit: tuple[str, str], check: str, status: str, words: str) -> None:
    # A retirement pending with no page retired yet is cleared by a driver reload: a warning, as hpclz judges it.
    verdict = getattr(checks, check)(facts(edit), ND40)
    assert verdict.status == status, verdict
    assert "GPU 0 (00000000:00:0D.0)" in verdict.message and words in verdict.message, verdict.message
