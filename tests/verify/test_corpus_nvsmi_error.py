"""nvidia-smi printing an error instead of a reading, from real outputs (corpus/nvsmi-error/, PROVENANCE.md).

A liveness check that takes any output with exit status 0 as an answer passes on these lines: read as a
`--query-gpu` CSV, "No devices were found" is a header with no rows, i.e. zero GPUs and no error. HPCLZ-VFY-001 must
fail on each whatever the status, and give aznhc's fault code where the status is one aznhc maps
(customTests/csc_nvidia_smi.nhc @09ab175, lines 41-76)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.verify.probes.nvsmi import parse_csv
from tests.verify.helpers import FIXTURES, GOOD, agent, by_id

ERRORS = FIXTURES / "corpus" / "nvsmi-error"
# capture -> the exit status its thread shows (None: the thread shows only the words)
CAPTURES = {
    "gputil-55-version-mismatch": 18,  # anderskm/gputil#55: `echo $?` printed 18
    "dra-driver-1008-no-supported-gpus": 255,  # kubernetes-sigs/dra-driver-nvidia-gpu#1008: `echo $?` printed 255
    "open-gpu-kernel-modules-862-no-devices": None,
    "manylinux-cuda-5-has-failed": None,
}


def node(tmp_path: Path, text: str, rc: int) -> Path:
    """The healthy H200 node, except that both nvidia-smi queries the agent makes print `text` and exit `rc`."""
    folder = tmp_path / "node"
    folder.mkdir()
    (folder / "fixtures.base").write_text(str(GOOD))
    for probe in ("nvidia-smi-q.xml", "query-gpu.csv"):
        (folder / probe).write_text(text)
        (folder / f"{probe}.rc").write_text(str(rc))
    return folder


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_an_error_line_is_not_a_csv_reading(name: str) -> None:
    with pytest.raises(ValueError, match="not a --query-gpu answer"):
        parse_csv((ERRORS / f"{name}.txt").read_text())


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_an_error_message_with_exit_status_0_fails_liveness(name: str, tmp_path: Path) -> None:
    text = (ERRORS / f"{name}.txt").read_text()
    checks = by_id(agent(node(tmp_path, text, 0), tier="health", with_nccl=False))
    vfy001 = checks["HPCLZ-VFY-001"]
    first_line = text.splitlines()[0]
    assert (vfy001["status"], vfy001["nhc_code"]) == ("fail", "NHC2001")
    assert vfy001["message"].startswith("nvidia-smi failed: exit status 0 but no GPU reading: " + first_line[:40])
    # Every GPU check depends on the reading: none of them may pass on it either.
    assert checks["HPCLZ-VFY-002"]["status"] == "not_measured"


@pytest.mark.parametrize(
    ("rc", "code", "words"),
    [
        # aznhc's map (csc_nvidia_smi.nhc @09ab175): 9 driver not loaded and 2/4/12 are NHCNA, 8 and 10 NHC2001,
        # 14 NHC2008, 15 NHC2010, any other failure NHC2001.
        (9, "NHCNA", "NVIDIA driver not loaded"),
        (12, "NHCNA", "NVML shared library not found"),
        (4, "NHCNA", "permission denied"),
        (10, "NHC2001", "interrupt issue"),
        (14, "NHC2008", "infoROM corrupted"),
        (15, "NHC2010", "a GPU lost"),
        (18, "NHC2001", "exit status 18"),  # the version mismatch of gputil#55: no line of its own in aznhc's map
        (255, "NHC2001", "exit status 255"),  # nvidia-smi's "Other error", not a signal (see _nvsmi_failure)
    ],
)
def test_the_exit_status_gives_aznhcs_fault_code(tmp_path: Path, rc: int, code: str, words: str) -> None:
    text = (ERRORS / "gputil-55-version-mismatch.txt").read_text()
    vfy001 = by_id(agent(node(tmp_path, text, rc), tier="health", with_nccl=False))["HPCLZ-VFY-001"]
    assert (vfy001["status"], vfy001["nhc_code"]) == ("fail", code)
    assert words in vfy001["message"]


@pytest.mark.parametrize(("name", "rc"), [(n, rc) for n, rc in CAPTURES.items() if rc is not None])
def test_each_capture_with_its_own_exit_status_fails(name: str, rc: int, tmp_path: Path) -> None:
    text = (ERRORS / f"{name}.txt").read_text()
    vfy001 = by_id(agent(node(tmp_path, text, rc), tier="health", with_nccl=False))["HPCLZ-VFY-001"]
    assert vfy001["status"] == "fail" and f"exit status {rc}" in vfy001["message"]
