"""Memory-health and PCIe checks on real `nvidia-smi -q -x` output from other projects (corpus/PROVENANCE.md).

Each capture is read as published; a fault case changes one element of a real capture to the value the driver
prints on a faulty GPU (the element names and layouts are the captures' own), so the test proves the field of
that driver generation is read, not a layout hpclz invented.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hpclz.verify.checks import gpu as checks
from hpclz.verify.checks.core import FAIL, NOT_MEASURED, PASS, WARN, Verdict
from hpclz.verify.probes.facts import Gpu, NodeFacts, NvidiaSmi, Reading
from hpclz.verify.probes.nvsmi import parse_xml
from hpclz.verify.thresholds import Thresholds, load_thresholds
from tests.verify.helpers import FIXTURES

NVSMI = FIXTURES / "corpus" / "nvsmi"
# name -> (driver, product, PCI bus id), as printed in each capture
CAPTURES = {
    "quadro-p400": ("418.43", "Quadro P400", "00000000:43:00.0"),
    "tesla-t4": ("515.105.01", "Tesla T4", "00000000:00:1E.0"),
    "a10g": ("515.105.01", "NVIDIA A10G", "00000000:00:1E.0"),
    "a100-sxm4-v12": ("535.54.03", "NVIDIA A100-SXM4-80GB", "00000000:01:00.0"),
    "rtx-3060-v12": ("570.124.04", "NVIDIA GeForce RTX 3060", "00000000:2D:00.0"),
    "rtx-3080-v13": ("595.58.03", "NVIDIA GeForce RTX 3080", "00000000:0C:00.0"),
}


def capture(name: str, *edits: tuple[str, str]) -> str:
    text = (NVSMI / f"{name}.xml").read_text()
    for old, new in edits:
        assert text.count(old) >= 1, f"{old!r} not in {name}.xml"
        text = text.replace(old, new, 1)
    return text


def facts_of(text: str, load: str | None = None) -> NodeFacts:
    gpus, driver = parse_xml(text)
    facts = NodeFacts(node="n1", sku=None, nvsmi=NvidiaSmi(True, gpus=gpus, driver_version=driver))
    if load is not None:
        facts.clocks_under_load = Reading(parse_xml(load)[0])
    return facts


DEFAULTS = load_thresholds(None)


def judge(check: str, text: str, thresholds: Thresholds = DEFAULTS, load: str | None = None) -> Verdict:
    verdict: Verdict = getattr(checks, check)(facts_of(text, load), thresholds)
    return verdict


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_every_capture_parses_and_its_healthy_gpu_passes_memory_checks(name: str) -> None:
    driver, product, bus = CAPTURES[name]
    gpus, seen_driver = parse_xml(capture(name))
    assert (seen_driver, [(g.name, g.bus_id) for g in gpus]) == (driver, [(product, bus)])
    assert judge("gpu_ecc", capture(name)).status == PASS
    assert judge("row_remap", capture(name)).status == PASS


# (capture, the one element changed, check, words the message must hold)
MEMORY_FAULTS = {
    "sram uncorrectable, drivers up to 535": (
        "a100-sxm4-v12",
        (
            "<sram_uncorrectable>0</sram_uncorrectable>\n                <dram_correctable>0",
            "<sram_uncorrectable>3</sram_uncorrectable>\n                <dram_correctable>0",
        ),
        "gpu_ecc",
        "3 uncorrectable ECC errors since reset",
    ),
    "pre-Ampere volatile double-bit": (
        "quadro-p400",
        (
            "<total>N/A</total>\n                                </double_bit>",
            "<total>2</total>\n                                </double_bit>",
        ),
        "gpu_ecc",
        "2 uncorrectable ECC errors since reset",
    ),
    "SRAM threshold exceeded, 570": (
        "rtx-3060-v12",
        (
            "<sram_threshold_exceeded>N/A</sram_threshold_exceeded>",
            "<sram_threshold_exceeded>Yes</sram_threshold_exceeded>",
        ),
        "gpu_ecc",
        "SRAM ECC error threshold exceeded",
    ),
    "unrepairable memory, 595": (
        "rtx-3080-v13",
        ("<unrepairable_memory>N/A</unrepairable_memory>", "<unrepairable_memory>Yes</unrepairable_memory>"),
        "row_remap",
        "unrepairable memory",
    ),
    "channel repair pending, 595": (
        "rtx-3080-v13",
        ("<channel_repair_pending>No</channel_repair_pending>", "<channel_repair_pending>Yes</channel_repair_pending>"),
        "row_remap",
        "memory channel repair pending",
    ),
    "remapped rows beyond aznhc's 512": (
        "a10g",
        ("<remapped_row_unc>0</remapped_row_unc>", "<remapped_row_unc>513</remapped_row_unc>"),
        "row_remap",
        "513 rows remapped for uncorrectable errors > 512",
    ),
    "retirement table full with a pending blacklist, 515": (
        "tesla-t4",
        ("<retired_count>0</retired_count>", "<retired_count>60</retired_count>"),
        "gpu_ecc",
        "page retirement table full (62 pages)",
    ),
}


@pytest.mark.parametrize("case", sorted(MEMORY_FAULTS))
def test_memory_health_fault_fails_naming_the_gpu(case: str) -> None:
    name, edit, check, words = MEMORY_FAULTS[case]
    edits = [edit]
    if name == "tesla-t4":  # the double-bit count and the pending flag of the same block, as aznhc's V100 test data
        edits += [("<retired_count>0</retired_count>", "<retired_count>2</retired_count>")]
        edits += [("<pending_blacklist>No</pending_blacklist>", "<pending_blacklist>Yes</pending_blacklist>")]
    verdict = judge(check, capture(name, *edits))
    assert verdict.status == FAIL, verdict
    assert words in verdict.message and CAPTURES[name][2] in verdict.message


def test_remapped_rows_at_the_limit_and_a_small_pending_retirement_do_not_fail() -> None:
    at_limit = capture("a10g", ("<remapped_row_unc>0</remapped_row_unc>", "<remapped_row_unc>512</remapped_row_unc>"))
    assert judge("row_remap", at_limit).status == PASS
    pending = capture(
        "tesla-t4", ("<pending_blacklist>No</pending_blacklist>", "<pending_blacklist>Yes</pending_blacklist>")
    )
    assert judge("gpu_ecc", pending).status == WARN


def test_pcie_on_an_unknown_size_is_not_judged_against_the_cards_maximum() -> None:
    # The T4 capture runs Gen3 x8 on a x16 card: healthy on a host that wires the slot x8.
    verdict = judge("pcie_link", capture("tesla-t4"), Thresholds(sku="Standard_Unknown"))
    assert verdict.status == NOT_MEASURED and "Gen3 x8" in verdict.message


def test_pcie_width_below_the_sizes_fails() -> None:
    x16 = load_thresholds(None, {"pcie_gen": 3, "pcie_width": 16})
    verdict = judge("pcie_link", capture("tesla-t4"), x16)
    assert verdict.status == FAIL and verdict.message == "GPU 0 (00000000:00:1E.0): PCIe Gen3 x8, expected Gen3 x16"


def test_pcie_generation_drop_warns_when_idle_and_fails_under_load() -> None:
    # The A10G capture: Gen1 of Gen4 with the idle clock reason active (driver 515 power saving).
    gen4 = load_thresholds(None, {"pcie_gen": 4, "pcie_width": 8})
    idle = capture("a10g")
    assert judge("pcie_link", idle, gen4).status == WARN
    verdict = judge("pcie_link", idle, gen4, load=idle)
    assert verdict.status == FAIL and "PCIe Gen1 under GEMM load" in verdict.message
    at_gen4 = capture("a10g", ("<current_link_gen>1</current_link_gen>", "<current_link_gen>4</current_link_gen>"))
    assert judge("pcie_link", idle, gen4, load=at_gen4).status == PASS


def test_corpus_files_are_listed_in_provenance() -> None:
    listed = (FIXTURES / "corpus" / "PROVENANCE.md").read_text()
    for path in sorted((FIXTURES / "corpus").rglob("*")):
        if path.is_file() and path.name != "PROVENANCE.md":
            assert str(Path(path).relative_to(FIXTURES / "corpus")) in listed, path


@pytest.mark.parametrize("case", sorted(MEMORY_FAULTS))
def test_the_agent_exits_6_naming_the_check_and_the_gpu(case: str, tmp_path: Path) -> None:
    """The whole agent on a real capture with one fault: exit 6 (VERIFY_FAILED), the NHC line names both."""
    from hpclz.verify.agent import main

    name, edit, check, _ = MEMORY_FAULTS[case]
    edits = [edit]
    if name == "tesla-t4":
        edits += [("<retired_count>0</retired_count>", "<retired_count>2</retired_count>")]
        edits += [("<pending_blacklist>No</pending_blacklist>", "<pending_blacklist>Yes</pending_blacklist>")]
    (tmp_path / "nvidia-smi-q.xml").write_text(capture(name, *edits))
    assert main(["--fixtures", str(tmp_path), "--sku", "Standard_Unknown", "--json", str(tmp_path / "r.json")]) == 6
    failed = [c for c in json.loads((tmp_path / "r.json").read_text())["checks"] if c["status"] == FAIL]
    expected = {"gpu_ecc": "HPCLZ-VFY-004", "row_remap": "HPCLZ-VFY-005"}[check]
    assert [c["check_id"] for c in failed] == [expected]
    assert CAPTURES[name][2] in failed[0]["message"]


def test_retirement_table_verdicts_match_aznhcs_own_test_data() -> None:
    """aznhc's V100 test data (`nvidia-smi -q -d PAGE_RETIREMENT`, driver 535.86.10): its rule fails the GPUs with
    62 or more retired pages and a pending blacklist (00000002, 06, 08); hpclz reads the same counters from the XML
    and must agree. 00000004 has a pending page but a near-empty table: a warning. 00000001 is full-ish, nothing
    pending: healthy for both."""
    text = (FIXTURES / "corpus" / "aznhc" / "bad_nvsmi8_output.txt").read_text()
    rows = re.findall(r"GPU (\S+)\n.*?Single Bit ECC\s*:\s*(\d+)\n.*?Double Bit ECC\s*:\s*(\d+)\n"
                      r".*?Pending Page Blacklist\s*:\s*(\w+)", text, re.S)  # fmt: skip
    gpus = [
        Gpu(index=i, bus_id=bus, retired_pages=int(sbe) + int(dbe), retirement_pending=pending == "Yes")
        for i, (bus, sbe, dbe, pending) in enumerate(rows)
    ]
    assert len(gpus) == 8
    verdict = checks.gpu_ecc(NodeFacts(node="n1", sku=None, nvsmi=NvidiaSmi(True, gpus=gpus)), DEFAULTS)
    full = re.findall(r"\((\S+)\): page retirement table full", verdict.message)
    assert verdict.status == FAIL and full == ["00000002:00:00.0", "00000006:00:00.0", "00000008:00:00.0"]
    assert "GPU 3 (00000004:00:00.0): page retirement pending (6 retired)" in verdict.message
    assert "00000001:00:00.0" not in verdict.message


@pytest.mark.parametrize(
    ("name", "gpu", "status", "words"),
    [
        ("good_nvlink_status.txt", 7, PASS, "12 links up on every GPU"),
        # aznhc's "all links are inactive" case: NVML prints no Link line at all for the GPU.
        ("bad_nvlink_status.txt", 6, FAIL, "GPU 6 (00000007:00:00.0): 0 NVLinks, expected 12"),
    ],
)
def test_nvlink_on_aznhcs_own_test_data(name: str, gpu: int, status: str, words: str) -> None:
    from hpclz.verify.probes.nvlink import parse_nvlink_status

    facts = NodeFacts(
        node="n1", sku=None, nvsmi=NvidiaSmi(True, gpus=[Gpu(index=gpu, bus_id=f"0000000{gpu + 1}:00:00.0")])
    )
    facts.nvlinks = Reading(parse_nvlink_status((FIXTURES / "corpus" / "aznhc" / name).read_text()))
    verdict = checks.nvlink(facts, load_thresholds("Standard_ND96amsr_A100_v4"))
    assert verdict.status == status and words in verdict.message, verdict


def test_lost_carrier_counts_on_aznhcs_flapping_test_data() -> None:
    from hpclz.verify.probes.infiniband import count_lost_carrier

    corpus = FIXTURES / "corpus" / "aznhc"
    assert count_lost_carrier((corpus / "0flap_syslog").read_text()) == {}
    assert count_lost_carrier((corpus / "1dev_6flap_syslog").read_text()) == {"ib6": 6}  # "Gained carrier" not counted
    # aznhc's /ib[0-9a-zA-Z_]+/ takes a predictable interface name too: its own data with ib6 renamed (synthetic).
    renamed = (corpus / "1dev_6flap_syslog").read_text().replace("ib6:", "ibP257s1:")
    assert count_lost_carrier(renamed) == {"ibP257s1": 6}
