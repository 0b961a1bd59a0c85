"""The monthly estimate for every preset, spot pricing, the delta of a change, and how plan and deploy use it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpclz.config import load_config
from hpclz.config.root import LandingZoneConfig
from hpclz.cost.estimate import NOT_MAPPED, UNKNOWN_OFFLINE, estimate, with_delta
from tests.conftest import PRESETS, REPO, RunCli
from tests.rules.cases import Case, _set, load_case

AI = REPO / "configs" / "ai-training.yaml"


@pytest.fixture(autouse=True)
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPCLZ_PRICES_DIR", str(tmp_path / "no-cache"))  # the shipped snapshot only


def _config(preset: str, *mutations: tuple[str, object]) -> LandingZoneConfig:
    def mutate(doc: dict[str, object]) -> None:
        for path, value in mutations:
            _set(path, value)(doc)

    return load_case(Case(preset, mutate), preset).config


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_preset_has_baseline_and_partition_lines_each_priced_with_a_source_or_saying_why_not(
    preset: Path,
) -> None:
    config = load_config(preset).config
    est = estimate(config)
    groups = {li.group for li in est.lines}
    assert groups == {"baseline", "partition"}
    assert len([li for li in est.lines if li.group == "partition"]) == len(config.compute.partitions)
    assert {"scheduler", "login", "cyclecloud"} <= {li.name.split()[0] for li in est.lines}
    for li in est.lines:
        if li.priced:
            assert li.source and li.as_of and li.unit_usd is not None
        else:
            assert li.note in (UNKNOWN_OFFLINE, NOT_MAPPED) and li.unit_usd is None
    assert est.total_usd == round(sum(li.monthly_usd or 0 for li in est.lines), 2)


def test_ai_training_partitions_are_priced_from_the_recorded_answer() -> None:
    est = estimate(load_config(AI).config, hours=100)
    h100 = next(li for li in est.lines if li.name.startswith("partition h100"))
    assert (h100.unit_usd, h100.count, h100.hours) == (98.32, 64, 100)
    assert h100.monthly_usd == round(98.32 * 64 * 100, 2)
    assert est.prices_from == "snapshot" and est.prices_as_of == "2026-10-07"
    bastion = next(li for li in est.lines if li.name.startswith("Bastion"))
    assert bastion.note == UNKNOWN_OFFLINE  # mapped, but no sourced price ships


def test_a_spot_partition_is_priced_at_the_spot_meter() -> None:
    config = _config("ai-training", ("compute.partitions.0.priority", "spot"))
    h100 = next(li for li in estimate(config).lines if li.name.startswith("partition h100"))
    assert h100.spot and h100.meter == "vm-spot:Standard_ND96isr_H100_v5" and h100.unit_usd == 18.169536


def test_the_delta_of_a_change_is_the_difference_of_priced_totals() -> None:
    applied = load_config(AI).config
    bigger = _config("ai-training", ("compute.partitions.0.max_nodes", 96))
    est = with_delta(estimate(bigger, hours=200), applied)
    assert est.delta_usd == round(32 * 98.32 * 200, 2)
    assert with_delta(estimate(applied), None).delta_usd is None


def test_budget_share_and_hours_from_the_config() -> None:
    config = _config("ai-training", ("budget", {"monthly_usd": 2_000_000, "partition_hours": 250}))
    est = estimate(config)
    assert est.partition_hours == 250 and est.budget_usd == 2_000_000
    assert est.budget_share == pytest.approx((64 * 98.32 + 32 * 84.8) * 250 / 2_000_000)


def test_plan_prints_the_estimate_and_carries_it_in_json(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = run_cli("plan", str(AI), "--hours", "100").stdout
    assert "Estimated monthly cost" in text and "shipped snapshot of 2026-10-07" in text
    assert "$98.32/node-hour; at max_nodes for 100 h = $629,248.00/month" in text
    assert f"Bastion Standard: {UNKNOWN_OFFLINE}" in text and "Total: at least $" in text
    assert "Cost:" not in text
    body = json.loads(run_cli("plan", str(AI), "-o", "json").stdout)
    est = body["result"]["cost_estimate"]
    assert est["partition_hours"] == 730 and est["unpriced_lines"] > 0 and est["total_usd"] > 0
    assert set(body) >= {"result"}
    unpriced = run_cli("plan", str(REPO / "configs" / "finance.yaml")).stdout  # westeurope: nothing sourced
    assert "Total: unknown: no line with a charge has a price here; `hpclz prices refresh CONFIG`" in unpriced


def test_deploy_refuses_above_the_budget_before_touching_azure(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "over.yaml"
    config.write_text(AI.read_text(encoding="utf-8") + "budget:\n  monthly_usd: 100000\n", encoding="utf-8")
    for name in ("AZURE_SUBSCRIPTION_ID", "AZURE_CLIENT_ID"):
        monkeypatch.delenv(name, raising=False)
    refused = run_cli("deploy", str(config), "--yes")
    assert refused.exit_code == 1
    line = f"{config}:{len(AI.read_text(encoding='utf-8').splitlines()) + 2}: budget.monthly_usd: estimated"
    assert line in refused.stderr and "--over-budget" in refused.stderr and "nothing was deployed" in refused.stderr
    # With the flag the budget no longer stops it: it goes on to Azure, which this test does not provide.
    forced = run_cli("deploy", str(config), "--yes", "--over-budget")
    assert "budget.monthly_usd" not in forced.stderr


def test_plan_shows_the_monthly_delta_of_a_change_against_the_applied_state(run_cli: RunCli, tmp_path: Path) -> None:
    from tests.plan.test_cli import apply, edit

    config = tmp_path / "ai-training.yaml"
    config.write_text(AI.read_text(encoding="utf-8"), encoding="utf-8")
    apply(config)
    edit(config, "max_nodes: 64", "max_nodes: 60")
    result = run_cli("plan", str(config), "--hours", "10", "--refresh=false")
    assert result.exit_code == 0, result.stderr
    assert "compute.partitions[h100].max_nodes: 64 -> 60" in result.stdout
    assert f"Change against the last apply: -${4 * 98.32 * 10:,.2f}/month" in result.stdout
    body = json.loads(run_cli("plan", str(config), "--hours", "10", "-o", "json", "--refresh=false").stdout)
    assert body["result"]["cost_estimate"]["delta_usd"] == round(-4 * 98.32 * 10, 2)


def test_budget_rule_is_silent_with_room_to_spare() -> None:
    from hpclz.config.loader import LoadedConfig
    from hpclz.rules.config.operations import EstimateNearBudget
    from hpclz.rules.context import ConfigContext

    roomy = Case("ai-training", _set("budget", {"monthly_usd": 10_000_000}))
    assert list(EstimateNearBudget().check(ConfigContext(load_case(roomy, "roomy")))) == []
    assert isinstance(load_case(roomy, "roomy"), LoadedConfig)
