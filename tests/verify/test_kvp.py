"""The physical host name and the GPU serials a Guest Health Report asks for, in every verify report."""

from __future__ import annotations

import shutil
from pathlib import Path

from hpclz.verify.model import NodeReport
from hpclz.verify.probes.kvp import RECORD_SIZE, build_pool, parse_pool, physical_host
from hpclz.verify.probes.nvsmi import parse_xml
from tests.verify.helpers import FIXTURES, GOOD, agent

POOL = FIXTURES / "kvp" / "kvp_pool_3"


def test_the_pool_is_read_record_by_record() -> None:
    data = POOL.read_bytes()
    assert len(data) % RECORD_SIZE == 0
    assert physical_host(data) == "GGBB90904476"
    # A record cut short (the daemon writing while we read) is left out, the whole ones before it kept.
    cut = data + build_pool({"PhysicalHostName": "other"})[:100]
    assert parse_pool(cut) == parse_pool(data)
    assert physical_host(build_pool({"VirtualMachineName": "vm"})) is None
    assert physical_host(b"") is None


def test_every_gpu_serial_of_a_real_capture_is_read() -> None:
    # The 8 x V100S capture (corpus/PROVENANCE.md): one <serial> per board.
    gpus, _ = parse_xml((FIXTURES / "corpus" / "nvsmi" / "v100s-pcie-8gpu-v11.xml").read_text())
    assert len(gpus) == 8 and all(g.serial and g.serial.isdigit() for g in gpus)
    assert gpus[0].serial == "1562920006088"
    assert len({g.serial for g in gpus}) == 8


def test_the_report_carries_the_physical_host_and_each_gpu(tmp_path: Path) -> None:
    node = tmp_path / "node"
    node.mkdir()
    (node / "fixtures.base").write_text(str(GOOD))
    shutil.copy(POOL, node / "kvp_pool_3")
    report = NodeReport.model_validate(agent(node, tier="health", with_nccl=False))
    assert report.physical_host == "GGBB90904476"
    assert [(g.index, g.serial) for g in report.gpus][:2] == [(0, "0000000000001"), (1, "0000000000002")]
    assert len(report.gpus) == 8
    without = NodeReport.model_validate(agent(GOOD, tier="health", with_nccl=False))
    assert without.physical_host is None  # off Azure (no pool): nothing invented
