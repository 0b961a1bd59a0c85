"""Lustre subnet size by capacity is an error, banded as the Azure Managed Lustre network prerequisites table
gives it (learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites#network-size-requirements):
4-16 TiB /27, 20-40 TiB /26, 44-92 TiB /25, 96-196 TiB /24, 200-400 TiB /23 or larger."""

from __future__ import annotations

import pytest

from hpclz.config import load_config_text
from hpclz.findings import Severity
from hpclz.services.validate import check_config
from tests.conftest import REPO

BASE = (REPO / "configs" / "energy.yaml").read_text()

# (capacity TiB, Lustre subnet prefix, refused?): each band's edge from the table, just inside and just outside.
ROWS = [
    (16, 27, False),
    (16, 28, True),
    (24, 26, False),
    (40, 27, True),
    (48, 25, False),
    (88, 26, True),
    (96, 24, False),
    (128, 25, True),
]


@pytest.mark.parametrize(("capacity", "prefix", "refused"), ROWS, ids=[f"{c}TiB-/{p}" for c, p, _ in ROWS])
def test_subnet_size_follows_the_documented_table(capacity: int, prefix: int, refused: bool) -> None:
    text = BASE.replace("capacity_tib: 48 ", f"capacity_tib: {capacity} ", 1)
    text = text.replace("lustre: {cidr: 10.20.2.0/24}", f"lustre: {{cidr: 10.20.2.0/{prefix}}}", 1)
    findings, _ = check_config(load_config_text(text, "energy.yaml"))
    size = [f for f in findings if f.rule_id == "HPCLZ-NET-006"]
    assert [f.severity for f in size] == ([Severity.ERROR] if refused else [])
    assert not [f for f in findings if f.severity is Severity.ERROR and f.rule_id != "HPCLZ-NET-006"]
