"""`hpclz plan` shows the app role assignments deploy makes and destroy deletes in CycleCloud's Entra app.

They are Microsoft Graph objects, another authority than ARM (hpclz.deploy.app_roles), so the plan lists them under
Microsoft Entra ID with their own summary, and reads Graph only where it reads Azure anyway. The zone is deployed
through the stand-in, whose Graph front (tests/support/arm_standin/graph.py) answers as Graph v1.0 does, so state
holds the assignments exactly as deploy records them. Groups and roles: tests/deploy/test_app_roles.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpclz.deploy.app_roles import ASSIGNMENT_TYPE
from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.deploy.test_app_roles import ADMINS, APP, EXPECTED, USERS, _held
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.graph import ServicePrincipal
from tests.support.arm_standin.proving import DEPLOYER

# Keys an Entra change shares with an ARM resource change (hpclz.plan.changeset.ResourceChange), and its own.
CHANGE_KEYS = {"id", "type", "name", "label", "action", "app_id", "principal_id", "app_role", "path", "reason"}


def _entra(run_cli: RunCli, zone: Path, *flags: str) -> dict[str, Any]:
    result = run_cli("plan", str(zone), *flags, "-o", "json")
    assert result.exit_code == 0, result.stderr + result.stdout
    body: dict[str, Any] = json.loads(result.stdout)["result"]
    assert body["entra"] is not None, body.keys()
    entra: dict[str, Any] = body["entra"]
    assert all(set(a) == CHANGE_KEYS and a["type"] == ASSIGNMENT_TYPE for a in entra["assignments"])
    return entra


def _rows(entra: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    """(action, group, app role, Graph ID) per assignment the plan lists."""
    return {(a["action"], a["principal_id"], a["app_role"], a["id"]) for a in entra["assignments"]}


def _section(stdout: str) -> list[str]:
    """The text plan's Entra ID section, line by line."""
    assert "Microsoft Entra ID (through Microsoft Graph, not ARM)" in stdout, stdout
    return stdout.split("Microsoft Entra ID (through Microsoft Graph, not ARM)", 1)[1].splitlines()


def _deployed(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> tuple[ServicePrincipal, list[dict[str, Any]]]:
    """The zone deployed by a caller Graph lets assign: the four assignments made and recorded."""
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Cloud Application Administrator"}
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stderr + deployed.stdout
    recorded: list[dict[str, Any]] = state_of(zone)["app_role_assignments"]
    assert {(r["principal_id"], r["app_role"]) for r in recorded} == EXPECTED == _held(sp)
    return sp, recorded


def test_a_first_plan_lists_what_deploy_will_make_as_entra_changes_without_calling_graph(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    arm.graph.add_app(APP)
    shown = run_cli("plan", str(zone))
    assert shown.exit_code == 0, shown.stderr + shown.stdout
    section = _section(shown.stdout)
    for group, path, roles in ((ADMINS, "admins", ("SuperUser", "Global.Node.Admin")), (USERS, "users", ("User",))):
        for role in roles:
            assert f"  + app role {role} for identity.groups.{path}[0] ({group})" in section, section
    assert "Entra ID: 4 to add, 0 to destroy." in section
    assert any("Graph may refuse them without failing the deploy" in line for line in section)

    entra = _entra(run_cli, zone)
    assert _rows(entra) == {("create", group, role, "") for group, role in EXPECTED}
    assert (entra["authority"], entra["via"], entra["app_id"]) == ("Microsoft Entra ID", "Microsoft Graph", APP)
    assert entra["summary"] == {"add": 4, "change": 0, "replace": 0, "destroy": 0} and entra["has_changes"] is True
    assert entra["graph_read"] is False and "reads nothing from Azure" in entra["not_read"]
    assert arm.graph.log == []  # a zone not deployed yet is planned without credentials, Graph included


@pytest.mark.timeout(240)  # a deploy and three plans of the largest preset
def test_a_deployed_zone_shows_the_recorded_assignments_unchanged_reading_graph_as_it_reads_arm(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    _sp, recorded = _deployed(arm, zone, run_cli)
    kept = {("no_change", r["principal_id"], r["app_role"], r["id"]) for r in recorded}
    reads, writes = len(arm.graph.log), len(arm.graph.writes())

    entra = _entra(run_cli, zone)  # refresh, the default, reads ARM back: Graph is read too
    assert _rows(entra) == kept and entra["has_changes"] is False and entra["graph_read"] is True
    assert len(arm.graph.log) > reads and len(arm.graph.writes()) == writes  # read, never written
    shown = run_cli("plan", str(zone))
    section = _section(shown.stdout)
    admin = next(r for r in recorded if (r["principal_id"], r["app_role"]) == (ADMINS, "SuperUser"))
    assert f"  = app role SuperUser for identity.groups.admins[0] ({ADMINS})  [{admin['id']}]" in section
    assert "Entra ID: 0 to add, 0 to destroy." in section

    reads = len(arm.graph.log)
    offline = _entra(run_cli, zone, "--refresh=false")  # reads nothing: from state and config
    assert _rows(offline) == kept and offline["graph_read"] is False and len(arm.graph.log) == reads


@pytest.mark.timeout(240)  # two deploys and four plans of the largest preset
def test_an_update_plan_shows_the_deletes_and_remakes_deploy_will_do(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    sp, recorded = _deployed(arm, zone, run_cli)
    ids = {(r["principal_id"], r["app_role"]): r["id"] for r in recorded}
    zone.write_text(zone.read_text().replace(f"users: [{USERS}]", "users: []"))
    # Deleted in Entra ID by hand: deploy forgets the record and makes the assignment again.
    sp.assignments = [a for a in sp.assignments if a["id"] != ids[ADMINS, "SuperUser"]]

    entra = _entra(run_cli, zone)
    assert _rows(entra) == {
        ("create", ADMINS, "SuperUser", ""),
        ("no_change", ADMINS, "Global.Node.Admin", ids[ADMINS, "Global.Node.Admin"]),
        ("delete", USERS, "User", ids[USERS, "User"]),
        ("delete", USERS, "Global.Node.User", ids[USERS, "Global.Node.User"]),
    }
    assert entra["summary"]["add"] == 1 and entra["summary"]["destroy"] == 2
    section = _section(run_cli("plan", str(zone)).stdout)
    assert f"  - app role User for group {USERS}  [{ids[USERS, 'User']}]  # the config no longer implies it" in section

    # Without reading Graph the plan can only go by the state: the record stands.
    offline = _entra(run_cli, zone, "--refresh=false")
    assert ("no_change", ADMINS, "SuperUser", ids[ADMINS, "SuperUser"]) in _rows(offline)

    deployed = run_cli("deploy", str(zone), "--yes")  # what the plan said is what deploy does
    assert deployed.exit_code == 0, deployed.stderr + deployed.stdout
    assert _held(sp) == {(ADMINS, "SuperUser"), (ADMINS, "Global.Node.Admin")}
    assert _rows(_entra(run_cli, zone)) == {
        ("no_change", r["principal_id"], r["app_role"], r["id"]) for r in state_of(zone)["app_role_assignments"]
    }


def test_an_assignment_made_outside_hpclz_is_no_change_and_never_in_a_destroy_plan(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Cloud Application Administrator"}
    by_hand = arm.graph.assignment(sp, USERS, sp.roles["Global.Node.User"])
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stderr + deployed.stdout
    recorded = state_of(zone)["app_role_assignments"]
    assert by_hand["id"] not in {r["id"] for r in recorded}

    planned = _entra(run_cli, zone)
    present = next(
        a for a in planned["assignments"] if (a["principal_id"], a["app_role"]) == (USERS, "Global.Node.User")
    )
    assert present["action"] == "no_change" and present["id"] == "" and "not made by hpclz" in present["reason"]

    destroy = _entra(run_cli, zone, "--destroy", "--include-data")
    assert _rows(destroy) == {("delete", r["principal_id"], r["app_role"], r["id"]) for r in recorded}
    assert destroy["summary"]["destroy"] == 3 and destroy["graph_read"] is True
    assert "fails the destroy and stays recorded" in destroy["note"]
    shown = run_cli("plan", str(zone), "--destroy", "--include-data")
    assert shown.exit_code == 0, shown.stderr + shown.stdout
    section = _section(shown.stdout)
    assert all(any(f"[{r['id']}]" in line and line.lstrip().startswith("- ") for line in section) for r in recorded)
    assert "Entra ID: 0 to add, 3 to destroy." in section
    assert by_hand["id"] not in shown.stdout
    # Without Graph (a stand-in token and no stand-in Graph: hpclz never calls the real one) the plan lists what
    # state records, and still nothing else.
    unread = _entra_without_graph(run_cli, zone)
    assert _rows(unread) == _rows(destroy) and "HPCLZ_GRAPH_ENDPOINT" in unread["not_read"]


def _entra_without_graph(run_cli: RunCli, zone: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as env:
        env.delenv("HPCLZ_GRAPH_ENDPOINT")
        return _entra(run_cli, zone, "--destroy", "--include-data")


def test_a_destroy_plan_leaves_out_what_destroy_would_not_delete(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    sp, recorded = _deployed(arm, zone, run_cli)
    by_hand = arm.graph.assignment(sp, "0d6f1c55-8f7e-4f0b-9c1d-2a3b4c5d6e7f", sp.roles["User"])
    gone, forged, *rest = recorded
    sp.assignments = [a for a in sp.assignments if a["id"] != gone["id"]]  # deleted by hand in Entra ID
    # State edited by hand: a record now names the hand-made assignment's ID (destroy leaves it, not proved ours).
    state_file = next((zone.parent / ".hpclz").rglob("state.json"))
    doc = json.loads(state_file.read_text())
    doc["app_role_assignments"][1]["id"] = by_hand["id"]
    state_file.write_text(json.dumps(doc))

    destroy = _entra(run_cli, zone, "--destroy", "--include-data")
    assert _rows(destroy) == {("delete", r["principal_id"], r["app_role"], r["id"]) for r in rest}
    assert destroy["left_alone"] == [
        f"{by_hand['id']}: Graph holds this ID for another group or role than state records, not proved hpclz's"
    ]
    assert forged["id"] not in json.dumps(destroy) and gone["id"] not in json.dumps(destroy)

    # The update plan goes by the same proofs: the forged record stays left alone (its group's role is in Graph, made
    # outside what state now records), and the one deleted by hand is made again.
    update = _entra(run_cli, zone)
    assert _rows(update) == {
        ("create", gone["principal_id"], gone["app_role"], ""),
        ("no_change", forged["principal_id"], forged["app_role"], ""),
        *(("no_change", r["principal_id"], r["app_role"], r["id"]) for r in rest),
    }
    assert update["left_alone"] == destroy["left_alone"]


def test_a_graph_that_cannot_be_read_leaves_the_plan_as_it_is_and_says_why(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tenant has no service principal for CycleCloud's app: deploy succeeds and records no assignment.
    deployed = run_cli("deploy", str(zone), "--yes")
    assert deployed.exit_code == 0, deployed.stderr + deployed.stdout
    assert state_of(zone)["app_role_assignments"] == []

    entra = _entra(run_cli, zone)
    assert _rows(entra) == {("create", group, role, "") for group, role in EXPECTED} and entra["graph_read"] is True
    assert all("has no service principal for CycleCloud's app" in a["reason"] for a in entra["assignments"])
    # Entra ID changes are counted apart: --detailed-exitcode still means ARM and config changes.
    assert run_cli("plan", str(zone), "--detailed-exitcode").exit_code == 0

    import socket

    with socket.socket() as unused:  # a loopback port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    monkeypatch.setenv("HPCLZ_GRAPH_ENDPOINT", f"https://127.0.0.1:{port}")
    unread = _entra(run_cli, zone)
    assert _rows(unread) == _rows(entra) and unread["graph_read"] is False
    assert unread["not_read"].startswith(f"Microsoft Graph at https://127.0.0.1:{port}")
    assert all(a["reason"] == "" for a in unread["assignments"])
    shown = run_cli("plan", str(zone))
    assert shown.exit_code == 0, shown.stderr + shown.stdout
    assert any(line.startswith("Microsoft Graph not read (Microsoft Graph at ") for line in _section(shown.stdout))
