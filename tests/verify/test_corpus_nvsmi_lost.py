"""A GPU that nvidia-smi cannot open, read from real outputs (corpus/nvsmi-lost/, PROVENANCE.md): HPCLZ-VFY-001
names the GPU and gives aznhc's code for it, with no Xid line in the kernel log to help."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpclz.remediate.classify import REBOOT, classify
from hpclz.verify.probes.nvsmi import lost_gpus
from tests.verify.helpers import FIXTURES, GOOD, agent, by_id

LOST = FIXTURES / "corpus" / "nvsmi-lost"
# capture -> (bus id, nvidia-smi's words), as printed
CAPTURES = {
    "marian-251-gpu-is-lost": ("0000:03:00.0", "GPU is lost. Reboot the system to recover this GPU"),
    "syno-22-unknown-error": ("0000:07:00.0", "Unknown Error"),
    "nvidia-docker-1553-unknown-error": ("0000:09:00.0", "Unknown Error"),
    "darknet-86-wrapped": ("0000:03:00.0", "GPU is lost. Reboot the system to recover this GPU"),
}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_each_capture_names_the_lost_gpu(name: str) -> None:
    assert lost_gpus((LOST / f"{name}.txt").read_text()) == [CAPTURES[name]]


def node(tmp_path: Path, text: str, rc: str) -> Path:
    """The healthy H200 node, except that both nvidia-smi queries the agent makes print `text` and exit `rc`."""
    folder = tmp_path / "node"
    folder.mkdir()
    (folder / "fixtures.base").write_text(str(GOOD))
    for probe in ("nvidia-smi-q.xml", "query-gpu.csv"):
        (folder / probe).write_text(text)
        (folder / f"{probe}.rc").write_text(rc)
    return folder


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_lost_gpu_fails_vfy_001_as_aznhc_codes_it_with_no_xid(name: str, tmp_path: Path) -> None:
    # The reports show the words, not the exit status: 255 is nvidia-smi(1)'s "other error", the least it could be.
    report = by_id(agent(node(tmp_path, (LOST / f"{name}.txt").read_text(), "255"), tier="health", with_nccl=False))
    vfy001 = report["HPCLZ-VFY-001"]
    bus, _why = CAPTURES[name]
    assert vfy001["status"] == "fail" and vfy001["nhc_code"] == "NHC2010"
    assert vfy001["message"].startswith(f"GPU {bus} lost: fallen off the bus or inaccessible (nvidia-smi failed:")
    assert report["HPCLZ-VFY-006"]["status"] == "pass"  # the kernel log has no Xid: only VFY-001 sees it
    assert classify(vfy001["nhc_code"]).first == REBOOT  # "Reboot the system to recover this GPU"


@pytest.mark.parametrize(("rc", "code", "words"), [("15", "NHC2010", "a GPU lost"), ("14", "NHC2008", "infoROM")])
def test_the_exit_status_alone_gives_the_code(tmp_path: Path, rc: str, code: str, words: str) -> None:
    vfy001 = by_id(agent(node(tmp_path, "", rc), tier="health", with_nccl=False))["HPCLZ-VFY-001"]
    assert (vfy001["status"], vfy001["nhc_code"]) == ("fail", code) and words in vfy001["message"]
