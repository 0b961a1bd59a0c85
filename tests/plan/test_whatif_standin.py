"""`hpclz plan --what-if` through the real SDK clients against the ARM stand-in (tests/support/arm_standin)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult
from tests.support.arm_standin import ArmStandIn

Run = Callable[..., CliResult]


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    target = tmp_path / "zone" / "lz.yaml"
    target.parent.mkdir()
    shutil.copy(REPO / "configs" / "ai-training.yaml", target)
    return target


def what_if(run_cli: Run, zone: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = run_cli("plan", str(zone), "--what-if", "-o", "json", "--detailed-exitcode", *extra)
    assert result.stdout, result.stderr
    return result.exit_code, json.loads(result.stdout)["result"]


def test_what_if_before_and_after_a_deploy(arm: ArmStandIn, zone: Path, run_cli: Run) -> None:
    code, body = what_if(run_cli, zone)
    assert (code, body["mode"]) == (2, "what-if")
    assert body["summary"]["add"] > 10 and body["summary"]["change"] == 0
    assert {r["action"] for r in body["resources"]} == {"create"}
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stderr + deployed.stdout

    before = len(arm.log)
    code, body = what_if(run_cli, zone)
    assert [r for r in arm.log[before:] if r.method in ("PUT", "PATCH", "DELETE")] == []  # what-if never writes
    assert body["summary"] == {"add": 0, "change": 0, "replace": 0, "destroy": 0}, body["resources"]
    assert code == 0

    zone.write_text(zone.read_text().replace("owner: ", "owner: new-", 1))
    code, body = what_if(run_cli, zone)
    assert code == 2
    changed = [r for r in body["resources"] if r["action"] != "no_change"]
    assert changed and all(r["action"] == "modify" for r in changed)
    # Only tags change, and the CycleCloud server's userData, whose cluster gives every node the zone's tags.
    assert all(
        p["path"].startswith("tags.") or p["path"] == "properties.userData" for r in changed for p in r["changes"]
    )


def test_offline_plan_against_the_state_a_real_deploy_wrote(arm: ArmStandIn, zone: Path, run_cli: Run) -> None:
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stderr + deployed.stdout
    same = run_cli("plan", str(zone), "--detailed-exitcode")
    assert same.exit_code == 0, same.stdout + same.stderr
    assert "No changes." in same.stdout

    zone.write_text(
        zone.read_text().replace("address_space: [10.40.0.0/16]", "address_space: [10.40.0.0/16, 10.41.0.0/16]")
    )
    grown = run_cli("plan", str(zone), "--detailed-exitcode", "-o", "json")
    body = json.loads(grown.stdout)["result"]
    assert grown.exit_code == 2, grown.stdout
    changed = [r for r in body["resources"] if r["action"] != "no_change"]
    assert [(r["type"], r["action"], r["verdict"]["policy"]) for r in changed] == [
        ("Microsoft.Network/virtualNetworks", "modify", "in_place")
    ]
    # deploy recorded the applied config, so the plan also names the config field and its cost
    assert [(c["path"], c["verdict"]["policy"]) for c in body["config_changes"]] == [
        ("network.vnet.address_space", "in_place")
    ]


def test_guid_named_role_assignments_survive_an_edit(arm: ArmStandIn, zone: Path, run_cli: Run) -> None:
    """Deploy records role assignments by their evaluated GUID; the template names them `[guid(...)]`."""
    assert run_cli("deploy", str(zone), "--yes").exit_code == 0
    zone.write_text(zone.read_text().replace("owner: ", "owner: new-", 1))  # every deployment changes
    body = json.loads(run_cli("plan", str(zone), "-o", "json").stdout)["result"]
    roles = [r for r in body["resources"] if r["type"] == "Microsoft.Authorization/roleAssignments"]
    assert roles and {r["action"] for r in roles} == {"no_change"}
    assert body["summary"]["destroy"] == body["summary"]["replace"] == 0


def test_deploy_applies_a_saved_plan_once_then_refuses_it_as_stale(arm: ArmStandIn, zone: Path, run_cli: Run) -> None:
    saved = zone.parent / "plan.json"
    assert run_cli("plan", str(zone), "--out", str(saved)).exit_code == 0
    applied = run_cli("deploy", str(zone), "--plan", str(saved), "--yes")
    assert applied.exit_code == 0, applied.stderr + applied.stdout
    again = run_cli("deploy", str(zone), "--plan", str(saved), "--yes")
    assert again.exit_code == 1
    assert "stale plan, refusing to apply it: the state changed since the plan was made" in again.stderr

    fresh = zone.parent / "fresh.json"
    assert run_cli("plan", str(zone), "--out", str(fresh)).exit_code == 0
    zone.write_text(zone.read_text().replace("owner: ", "owner: new-", 1))
    edited = run_cli("deploy", str(zone), "--plan", str(fresh), "--yes")
    assert edited.exit_code == 1 and "the config changed since the plan was made" in edited.stderr


def test_what_if_sends_secure_parameters_and_never_prints_them(
    arm: ArmStandIn, zone: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ARM refuses a what-if whose secureString parameters have no value ("The value for the template
    # parameter '...' is not provided."), exactly as it refuses the deployment itself.
    secret = "wi-S3cret-value-5521"
    # Beside the preset's own secret (Slurm accounting's database password, from SLURMDB_PASSWORD).
    monkeypatch.setenv("WI_API_TOKEN", secret)  # a secret written in clear text is refused (HPCLZ-IDN-010)
    text = zone.read_text().replace("    secrets:\n", "    secrets:\n      api-token: ${env:WI_API_TOKEN}\n")
    assert text != zone.read_text()
    zone.write_text(text)
    assert run_cli("deploy", str(zone), "--yes").exit_code == 0
    result = run_cli("plan", str(zone), "--what-if", "--detailed-exitcode")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert secret not in result.stdout + result.stderr
    sent = [r for r in arm.log if r.method == "POST" and r.path.lower().endswith("/whatif")]
    assert sent, "no what-if request reached ARM"


def test_what_if_says_when_the_cyclecloud_images_terms_are_not_accepted(
    arm: ArmStandIn, zone: Path, run_cli: Run
) -> None:
    """Online, plan reads the CycleCloud image's Marketplace terms as deploy's preflight does (HPCLZ-CMP-110)."""

    def terms_findings() -> tuple[int, list[dict[str, Any]]]:
        result = run_cli("plan", str(zone), "--what-if", "-o", "json", "--detailed-exitcode")
        envelope = json.loads(result.stdout)
        return result.exit_code, [f for f in envelope["findings"] if f["rule_id"] == "HPCLZ-CMP-110"]

    arm.world.unaccepted_terms.add("azurecyclecloud:azure-cyclecloud:cyclecloud8-gen2")
    code, found = terms_findings()
    assert code == 1 and len(found) == 1
    assert "az vm image terms accept --publisher azurecyclecloud --offer azure-cyclecloud" in found[0]["message"]
    arm.world.unaccepted_terms.clear()
    assert terms_findings() == (2, [])
