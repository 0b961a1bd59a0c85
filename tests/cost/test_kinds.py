"""Every resource kind a plan deploys has a cost line (priced, free with a reason, or "not priced: why"),
and no subtotal reads $0.00 while its lines have no price."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from hpclz.cli.views.money import print_estimate, subtotal
from hpclz.config.loader import load_config
from hpclz.config.root import LandingZoneConfig
from hpclz.cost.estimate import NO_FACT, NOT_PRICED, estimate
from hpclz.cost.kinds import NO_CHARGE, UNPRICED
from hpclz.plan.resources import desired_resources
from hpclz.render.build import build_plan


@pytest.fixture(autouse=True)
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "no-cache"))  # the shipped snapshot only


def _kinds(config_path: Path) -> tuple[Counter[str], LandingZoneConfig]:
    config = load_config(config_path).config
    return Counter(r.type for r in desired_resources(build_plan(config))), config


def test_every_kind_a_preset_deploys_has_a_line(preset_path: Path) -> None:
    kinds, config = _kinds(preset_path)
    est = estimate(config, kinds=kinds)
    covered = {kind for line in est.lines for kind in line.covers}
    assert set(kinds) <= covered, set(kinds) - covered
    assert not [li.name for li in est.lines if li.note == NO_FACT]  # every shipped kind has a billing fact
    for line in est.lines:
        assert line.priced or line.note, line.name  # unpriced lines always say why


def test_billed_kinds_say_how_they_are_billed_and_free_ones_cost_nothing(preset_path: Path) -> None:
    kinds, config = _kinds(preset_path)
    est = estimate(config, kinds=kinds)
    for line in est.lines:
        if line.note.startswith(f"{NOT_PRICED}: billed"):
            assert line.monthly_usd is None and line.covers[0] in UNPRICED
            assert "pricing/details/" in line.note  # the basis names its public pricing page
    free = [li for li in est.lines if li.name.startswith("no charge of their own")]
    assert len(free) == 1 and free[0].monthly_usd == 0.0
    assert all(kind in NO_CHARGE for kind in free[0].covers)


def test_the_tables_do_not_overlap() -> None:
    assert not set(NO_CHARGE) & set(UNPRICED)


def test_an_unknown_kind_is_a_line_not_a_silence(tmp_path: Path) -> None:
    config = load_config(Path(__file__).parents[2] / "configs" / "energy.yaml").config
    est = estimate(config, kinds={"Microsoft.Example/widgets": 2})
    line = next(li for li in est.lines if "widgets" in li.name)
    assert line.note == NO_FACT and not line.priced and line.name == "Example/widgets x 2"


def test_a_subtotal_of_unknown_lines_is_unknown_not_zero() -> None:
    energy = Path(__file__).parents[2] / "configs" / "energy.yaml"
    kinds, config = _kinds(energy)
    est = estimate(config, kinds=kinds)  # southcentralus: the snapshot has no price
    assert est.baseline_usd == 0.0 and est.unpriced > 0
    assert subtotal(est, "baseline") == "baseline unknown"
    out = io.StringIO()
    print_estimate(Console(file=out, width=400, no_color=True), est)
    text = out.getvalue()
    assert "$0.00/month" not in text and "Total: unknown" in text
    assert "DBforMySQL/flexibleServers x 1: not priced: billed compute per hour (twice with high availability)" in text


def test_a_partly_priced_subtotal_is_a_lower_bound() -> None:
    kinds, config = _kinds(Path(__file__).parents[2] / "configs" / "ai-training.yaml")
    est = estimate(config, kinds=kinds)  # eastus2: the snapshot prices the GPU sizes
    assert subtotal(est, "partition").startswith("partition $") or subtotal(est, "partition").startswith(
        "partition at least $"
    )
    assert subtotal(est, "baseline") == "baseline unknown"
