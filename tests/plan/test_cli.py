"""`hpclz plan` end to end: exit codes, the JSON envelope, colour, saved plans and stale-plan refusal."""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from hpclz.azure.backends import open_backend
from hpclz.cli.views.changeset import print_changeset
from hpclz.config.loader import load_config
from hpclz.errors import HpclzError
from hpclz.output import ENVELOPE_KEYS
from hpclz.plan.offline import offline_changeset
from hpclz.plan.saved import load_saved_plan
from hpclz.render.build import build_plan
from hpclz.state.model import StateDocument
from tests.conftest import REPO, CliResult
from tests.plan.support import applied_state

Run = Callable[..., CliResult]
RESULT_KEYS = {
    "file", "state_location", "saved_to", "mode", "landing_zone", "environment", "state", "config_changes",
    "config_baseline", "resources", "ignored", "unsupported", "summary", "has_changes", "noise_filtered",
    "worst_policy", "blocked", "data_loss",
}  # fmt: skip


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "energy.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", path)
    return path


def apply(config: Path) -> StateDocument:
    """Record the config as applied, through the real local state backend."""
    loaded = load_config(config)
    backend = open_backend(loaded.config, base_dir=config.parent)
    backend.read()
    return backend.write(applied_state(loaded.config))


def edit(config: Path, old: str, new: str) -> None:
    text = config.read_text()
    assert old in text
    config.write_text(text.replace(old, new))


def test_no_state_everything_is_created(run_cli: Run, config: Path) -> None:
    result = run_cli("plan", str(config))
    assert result.exit_code == 0, result.stderr
    assert "no state at" in result.stdout
    assert "to add, 0 to change, 0 to replace, 0 to destroy." in result.stdout
    assert "\x1b[" not in result.stdout  # not a terminal: no colour codes


def test_detailed_exitcode(run_cli: Run, config: Path) -> None:
    assert run_cli("plan", str(config), "--detailed-exitcode").exit_code == 2
    apply(config)
    same = run_cli("plan", str(config), "--detailed-exitcode", "--refresh=false")
    assert same.exit_code == 0, same.stdout + same.stderr
    assert "No changes." in same.stdout
    edit(config, "workload: seismic", "workload: fwi")
    assert run_cli("plan", str(config), "--detailed-exitcode", "--refresh=false").exit_code == 2
    assert run_cli("plan", str(config), "--refresh=false").exit_code == 0


def test_blocked_change_fails_and_usage_errors_are_64(run_cli: Run, config: Path) -> None:
    apply(config)
    # GRS -> ZRS adds zone redundancy (a conversion, not a PUT); ZRS has no Archive tier, so archiving stops too.
    edit(config, "replication: GRS", "replication: ZRS")
    edit(config, "archive_after_days: 180", "cold_after_days: 180")
    result = run_cli("plan", str(config), "--detailed-exitcode", "--refresh=false")
    assert result.exit_code == 1
    assert "NOT ALLOWED" in result.stdout
    assert run_cli("plan", str(config), "--no-such-flag").exit_code == 64
    missing = run_cli("plan", str(config.parent / "absent.yaml"))
    assert missing.exit_code == 3 and "not found" in missing.stderr


def test_json_envelope(run_cli: Run, config: Path) -> None:
    apply(config)
    edit(config, "capacity_tib: 48", "capacity_tib: 32")  # Lustre cannot shrink: a new, empty file system
    result = run_cli("plan", str(config), "-o", "json", "--detailed-exitcode", "--refresh=false")
    envelope = json.loads(result.stdout)
    assert tuple(envelope) == ENVELOPE_KEYS
    assert (envelope["command"], envelope["exit_code"], result.exit_code) == ("plan", 2, 2)
    body = envelope["result"]
    assert set(body) >= RESULT_KEYS  # scripts read these: add keys, never rename or drop one
    assert body["mode"] == "offline"
    assert body["summary"] == {"add": 0, "change": 0, "replace": 1, "destroy": 0}
    assert body["has_changes"] is True
    assert body["worst_policy"] == "replace_data"
    assert "storage.lustre.capacity_tib" in body["data_loss"]
    (change,) = body["config_changes"]
    assert change["path"] == "storage.lustre.capacity_tib"
    assert (change["before"], change["after"], change["verdict"]["policy"]) == (48, 32, "replace_data")
    (lustre,) = [r for r in body["resources"] if r["action"] != "no_change"]
    assert lustre["action"] == "replace" and lustre["changes"][0]["path"] == "properties.storageCapacityTiB"


def test_colour_follows_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    changes = offline_changeset(build_plan(load_config(REPO / "configs" / "energy.yaml").config), None)

    def printed() -> str:
        buffer = io.StringIO()
        print_changeset(Console(file=buffer, force_terminal=True, width=200, highlight=False), changes)
        return buffer.getvalue()

    colour = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|9[0-7])[;m]")  # foreground colours; bold is not colour
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert colour.search(printed())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour.search(printed())


def test_saved_plan_round_trip_and_stale_refusal(run_cli: Run, config: Path) -> None:
    state = apply(config)
    out = config.parent / "plan.json"
    edit(config, "workload: seismic", "workload: fwi")
    result = run_cli("plan", str(config), "--out", str(out), "--refresh=false")
    assert result.exit_code == 0, result.stderr
    assert f"hpclz deploy {config} --plan {out}" in result.stdout
    loaded = load_config(config)
    assert load_saved_plan(out, loaded, state) == build_plan(loaded.config)

    with pytest.raises(HpclzError, match="the state changed since the plan was made"):
        load_saved_plan(out, loaded, state.model_copy(update={"serial": state.serial + 1}))
    with pytest.raises(HpclzError, match="the state changed"):
        load_saved_plan(out, loaded, None)
    edit(config, "workload: fwi", "workload: rtm")
    with pytest.raises(HpclzError, match="stale plan, refusing to apply it: the config changed"):
        load_saved_plan(out, load_config(config), state)


def test_saved_plan_edited_by_hand_or_not_a_plan(run_cli: Run, config: Path) -> None:
    out = config.parent / "plan.json"
    assert run_cli("plan", str(config), "--out", str(out)).exit_code == 0
    loaded = load_config(config)
    raw = json.loads(out.read_text())
    raw["plan"]["deployments"][0]["template"]["resources"][0]["location"] = "westeurope"
    out.write_text(json.dumps(raw))
    with pytest.raises(HpclzError, match="edited after it was saved"):
        load_saved_plan(out, loaded, None)
    out.write_text(json.dumps({"deployments": []}))
    with pytest.raises(HpclzError, match="not an hpclz saved plan"):
        load_saved_plan(out, loaded, None)
    with pytest.raises(HpclzError, match="saved plan not found"):
        load_saved_plan(config.parent / "nope.json", loaded, None)


def test_a_config_failing_validation_is_not_planned(run_cli: Run, config: Path) -> None:
    edit(config, "compute: {cidr: 10.20.16.0/20}", "compute: {cidr: 10.20.0.0/20}")  # overlaps admin
    result = run_cli("plan", str(config), "--detailed-exitcode", "--refresh=false")
    assert result.exit_code == 1
    assert "error" in result.stdout and "fails validation" in result.stdout
    assert "Plan:" not in result.stdout
