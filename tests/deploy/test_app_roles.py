"""CycleCloud's app roles for identity.groups through Microsoft Graph: made by deploy, recorded, removed by destroy.

The Graph front of the stand-in (tests/support/arm_standin/graph.py) answers as Graph v1.0 does, with the same bearer
tokens as ARM; hpclz reaches it through HPCLZ_GRAPH_ENDPOINT. The preset's groups are admins 53f5840a-... (SuperUser,
Global.Node.Admin) and users 6e666e94-... (User, Global.Node.User): hpclz.render.entra.APP_ROLES.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.azure.clients import StaticTokenCredential
from hpclz.azure.graph import Graph
from hpclz.azure.settings import settings_from_env
from hpclz.config.loader import load_config
from hpclz.deploy.app_roles import ASSIGNMENT_TYPE, grant, revoke
from hpclz.state.model import StateDocument
from tests.conftest import RunCli
from tests.deploy.conftest import destroy_everything, state_of
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.graph import ServicePrincipal
from tests.support.arm_standin.proving import DEPLOYER

APP = "8d2f4a61-3b7e-4c19-a5d0-6e1f9b3c2a84"  # configs/ai-training.yaml identity.cyclecloud_entra.client_id
ADMINS = "53f5840a-6a69-4e27-ab39-b50a1723b1fb"
USERS = "6e666e94-4aa7-495a-b3c5-ef894ff99311"
EXPECTED = {(ADMINS, "SuperUser"), (ADMINS, "Global.Node.Admin"), (USERS, "User"), (USERS, "Global.Node.User")}
DENIED = "Authorization_RequestDenied: Insufficient privileges to complete the operation."


def _held(sp: ServicePrincipal) -> set[tuple[str, str]]:
    by_id = {rid: value for value, rid in sp.roles.items()}
    return {(a["principalId"], by_id[a["appRoleId"]]) for a in sp.assignments}


def _give_steps(stdout: str) -> list[str]:
    return [line.strip() for line in stdout.split("Next steps", 1)[1].splitlines() if "give identity.groups" in line]


@pytest.mark.timeout(240)  # two deploys and two destroys of the largest preset
def test_deploy_makes_the_missing_assignments_records_them_and_destroy_takes_only_those(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Cloud Application Administrator"}
    # Made by hand before hpclz: the users group already holds Global.Node.User.
    by_hand = arm.graph.assignment(sp, USERS, sp.roles["Global.Node.User"])

    first = run_cli("deploy", str(zone), "--yes")
    assert first.exit_code == 0, first.stderr + first.stdout
    assert _held(sp) == EXPECTED
    posts = [w for w in arm.graph.writes() if w[0] == "POST"]
    assert [status for *_, status in posts] == [201, 201, 201]  # the hand-made one is not asked for again
    recorded = state_of(zone)["app_role_assignments"]
    assert {(r["principal_id"], r["app_role"]) for r in recorded} == EXPECTED - {(USERS, "Global.Node.User")}
    assert {r["id"] for r in recorded} == {a["id"] for a in sp.assignments} - {by_hand["id"]}
    assert all(r["resource_id"] == sp.id and r["app_id"] == APP for r in recorded)
    assert f"+ app role Global.Node.Admin for identity.groups.admins[0] ({ADMINS})" in first.stdout
    assert _give_steps(first.stdout) == []  # nothing left for the operator to give
    # The bearer token never reaches the output or the state.
    state_text = next((zone.parent / ".hpclz").rglob("state.json")).read_text()
    assert arm.token not in first.stdout + first.stderr and arm.token not in state_text

    shown = run_cli("state", "show", str(zone))
    assert "app role assignments in CycleCloud's Entra app (3):" in shown.stdout
    assert all(f"group {r['principal_id']}  [{r['id']}]" in shown.stdout for r in recorded), shown.stdout

    writes = len(arm.graph.writes())
    again = run_cli("-vv", "deploy", str(zone), "--yes")
    assert again.exit_code == 0, again.stderr + again.stdout
    # Each Graph call is a log line, and the SDK's HTTP log redacts the token.
    assert f"GET /v1.0/servicePrincipals/{sp.id}/appRoleAssignedTo -> 200" in again.stderr
    assert arm.token not in again.stdout + again.stderr
    assert len(arm.graph.writes()) == writes  # nothing changed: reads only
    assert "+ app role" not in again.stdout and _give_steps(again.stdout) == []

    first_destroy = run_cli("destroy", str(zone), "--yes", "--include-data")
    listed = {line.split()[2] for line in first_destroy.stderr.splitlines() if f"deleted {ASSIGNMENT_TYPE} " in line}
    assert listed == {r["id"] for r in recorded}, first_destroy.stderr
    destroy_everything(run_cli, arm, zone)  # the backup vault's second round (tests/deploy/conftest.py)
    deletes = [w for w in arm.graph.writes() if w[0] == "DELETE"]
    assert sorted(path.rsplit("/", 1)[-1] for _, path, _ in deletes) == sorted(r["id"] for r in recorded)
    assert sp.assignments == [by_hand]  # the hand-made assignment stays
    assert state_of(zone)["app_role_assignments"] == []


def test_refused_caller_still_deploys_says_why_and_prints_the_steps(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    sp = arm.graph.add_app(APP)  # the deploying user holds no Entra role and does not own the app

    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout
    refusal = [line for line in result.stdout.splitlines() if DENIED in line]
    assert len(refusal) == 1 and "Cloud Application Administrator" in refusal[0], result.stdout
    assert "ownership of the app's service principal" in refusal[0]
    assert _give_steps(result.stdout) == [
        f"In CycleCloud's app {APP}, give identity.groups.admins[0] ({ADMINS}) the app roles SuperUser and "
        "Global.Node.Admin: node access account with sudo (docs/entra-login.md)",
        f"In CycleCloud's app {APP}, give identity.groups.users[0] ({USERS}) the app roles User and "
        "Global.Node.User: node access account (docs/entra-login.md)",
    ]
    assert sp.assignments == []
    assert [status for method, _, status in arm.graph.writes()] == [403]
    assert state_of(zone)["app_role_assignments"] == []
    body = json.loads(run_cli("deploy", str(zone), "--yes", "-o", "json").stdout)["result"]["app_roles"]
    assert body["made"] == [] and len(body["missing"]) == 4 and DENIED in body["refused"]


# ----- the engine against the Graph front, without ARM -----


@pytest.fixture
def graph(arm: ArmStandIn) -> Graph:
    return Graph(settings_from_env(), StaticTokenCredential(arm.token))


def _doc() -> StateDocument:
    return StateDocument(landing_zone="aitrain", environment="prod")


def _saved(docs: list[StateDocument]) -> Callable[[StateDocument], StateDocument]:
    def save(doc: StateDocument) -> StateDocument:
        docs.append(doc)
        return doc

    return save


def test_an_unknown_app_is_one_line_and_every_assignment_stays_a_step(
    arm: ArmStandIn, graph: Graph, zone: Path
) -> None:
    saved: list[StateDocument] = []
    doc, result = grant(graph, load_config(zone), _doc(), _saved(saved))
    assert result is not None and result.made == [] and len(result.missing) == 4
    assert result.refused is not None and "Request_ResourceNotFound" in result.refused and APP in result.refused
    assert saved == [] and doc.app_role_assignments == []
    assert arm.graph.writes() == []


def test_an_app_without_the_node_roles_gets_the_others(arm: ArmStandIn, graph: Graph, zone: Path) -> None:
    sp = arm.graph.add_app(APP, roles=("Administrator", "SuperUser", "User"))
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Application Administrator"}
    doc, result = grant(graph, load_config(zone), _doc(), _saved([]))
    assert result is not None and result.refused is not None
    assert "defines no app role Global.Node.Admin, Global.Node.User" in result.refused
    assert {(m.group, m.app_role) for m in result.missing} == {
        (ADMINS, "Global.Node.Admin"),
        (USERS, "Global.Node.User"),
    }
    assert _held(sp) == {(ADMINS, "SuperUser"), (USERS, "User")}
    assert len(doc.app_role_assignments) == 2


def test_the_owner_of_the_app_may_assign_and_revoke_leaves_what_it_did_not_make(
    arm: ArmStandIn, graph: Graph, zone: Path
) -> None:
    sp = arm.graph.add_app(APP)
    sp.owners.add(DEPLOYER.object_id)  # a member user owning the app needs no Entra role (rbac include, above)
    doc, result = grant(graph, load_config(zone), _doc(), _saved([]))
    assert result is not None and result.refused is None and len(result.made) == 4
    by_hand = arm.graph.assignment(sp, "0d6f1c55-8f7e-4f0b-9c1d-2a3b4c5d6e7f", sp.roles["User"])
    doc, outcomes = revoke(graph, doc, _saved([]))
    assert [o.action.value for o in outcomes] == ["deleted"] * 4
    assert sp.assignments == [by_hand] and doc.app_role_assignments == []


def test_a_refused_delete_stays_recorded(arm: ArmStandIn, graph: Graph, zone: Path) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Cloud Application Administrator"}
    doc, _ = grant(graph, load_config(zone), _doc(), _saved([]))
    arm.graph.directory_roles.clear()  # the role was only eligible, and has lapsed
    doc, outcomes = revoke(graph, doc, _saved([]))
    assert {o.action.value for o in outcomes} == {"failed"} and all(DENIED in o.reason for o in outcomes)
    assert len(doc.app_role_assignments) == 4 and len(sp.assignments) == 4


def test_a_group_dropped_from_the_config_loses_the_roles_hpclz_gave_it(
    arm: ArmStandIn, graph: Graph, zone: Path
) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Cloud Application Administrator"}
    doc, _ = grant(graph, load_config(zone), _doc(), _saved([]))
    zone.write_text(zone.read_text().replace(f"users: [{USERS}]", "users: []"))
    doc, result = grant(graph, load_config(zone), doc, _saved([]))
    assert result is not None and {(r.group, r.app_role) for r in result.removed} == {
        (USERS, "User"),
        (USERS, "Global.Node.User"),
    }
    assert _held(sp) == {(ADMINS, "SuperUser"), (ADMINS, "Global.Node.Admin")}
    assert {(r.principal_id, r.app_role) for r in doc.app_role_assignments} == _held(sp)


def test_a_stand_in_token_never_goes_to_the_real_graph(
    monkeypatch: pytest.MonkeyPatch, arm: ArmStandIn, zone: Path
) -> None:
    monkeypatch.delenv("HPCLZ_GRAPH_ENDPOINT")
    settings = settings_from_env()
    assert settings.graph_url == "https://graph.microsoft.com"
    _, result = grant(Graph(settings, StaticTokenCredential(arm.token)), load_config(zone), _doc(), _saved([]))
    assert result is not None and result.refused is not None and "HPCLZ_GRAPH_ENDPOINT" in result.refused
    assert len(result.missing) == 4 and arm.graph.log == []


def test_an_unreachable_graph_is_one_line_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, arm: ArmStandIn, zone: Path
) -> None:
    import socket

    with socket.socket() as unused:  # a loopback port nobody listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    monkeypatch.setenv("HPCLZ_GRAPH_ENDPOINT", f"https://127.0.0.1:{port}")
    graph = Graph(settings_from_env(), StaticTokenCredential(arm.token))
    saved: list[StateDocument] = []
    _, result = grant(graph, load_config(zone), _doc(), _saved(saved))
    assert result is not None and result.refused is not None and len(result.missing) == 4
    assert result.refused.startswith("Microsoft Graph did not make the app role assignments (Microsoft Graph at ")
    assert "\n" not in result.refused and saved == []


def test_a_record_naming_another_groups_assignment_is_left_alone(arm: ArmStandIn, graph: Graph, zone: Path) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Cloud Application Administrator"}
    by_hand = arm.graph.assignment(sp, "0d6f1c55-8f7e-4f0b-9c1d-2a3b4c5d6e7f", sp.roles["User"])
    doc, _ = grant(graph, load_config(zone), _doc(), _saved([]))
    # State edited by hand: one record now names the hand-made assignment's ID.
    forged = doc.app_role_assignments[0].model_copy(update={"id": by_hand["id"]})
    doc = doc.model_copy(update={"app_role_assignments": [forged, *doc.app_role_assignments[1:]]})
    doc, outcomes = revoke(graph, doc, _saved([]))
    assert [o.action.value for o in outcomes] == ["left alone", "deleted", "deleted", "deleted"]
    assert "not proved hpclz's" in outcomes[0].reason
    assert by_hand in sp.assignments and doc.app_role_assignments == [forged]
