"""docs/verify-conformance.md against aznhc's own confs (copied with provenance) and DCGM's r1/r2 test lists."""

from __future__ import annotations

import json
import re

from hpclz.verify.checks import CHECKS
from hpclz.verify.checks.outcomes import OUTCOMES
from tests.conftest import REPO
from tests.verify.helpers import FIXTURES

PAGE = REPO / "docs" / "verify-conformance.md"
CONFS = FIXTURES / "corpus" / "aznhc" / "conf"
KNOWN_IDS = {spec.id for spec in CHECKS} | {spec.id for spec in OUTCOMES}


def table(heading: str) -> list[list[str]]:
    text = PAGE.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("|")][2:]  # past the header and its rule
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def aznhc_checks() -> dict[str, set[str]]:
    """Active check lines per conf (`* || check_x args`; commented-out lines do not run)."""
    found: dict[str, set[str]] = {}
    for conf in sorted(CONFS.glob("*.conf")):
        for line in conf.read_text().splitlines():
            m = re.match(r"^\s*\*\s*\|\|\s*(check_\w+)", line)
            if m:
                found.setdefault(m.group(1), set()).add(conf.stem)
    return found


def test_every_aznhc_check_has_a_row_naming_exactly_the_sizes_that_run_it() -> None:
    rows = {row[0]: row for row in table("aznhc checks")}
    expected = aznhc_checks()
    assert set(rows) == set(expected)
    for check, sizes in expected.items():
        assert set(rows[check][1].split(", ")) == sizes, check


def test_no_row_is_empty_and_every_named_check_exists() -> None:
    for row in table("aznhc checks") + table("DCGM diagnostics"):
        assert len(row) in (3, 4) and all(row), row
        hpclz = row[2]
        named = set(re.findall(r"HPCLZ-VFY-\d{3}", hpclz))
        assert named <= KNOWN_IDS, row
        assert named or hpclz.startswith(("not applicable:", "not covered:", "not run")), row


def test_every_dcgm_level_1_and_2_test_has_a_row() -> None:
    doc = json.loads((FIXTURES / "corpus" / "dcgm" / "v4-r1-pass.json").read_text())
    level1 = {t["name"] for c in doc["DCGM Diagnostic"]["test_categories"] for t in c["tests"]}
    rows = {(row[0], row[1].split(" (")[0]) for row in table("DCGM diagnostics")}
    assert {("1", name) for name in level1} | {("2", "memory"), ("2", "pcie")} == rows
