"""hpclz's Graph adapter (hpclz.azure.graph) against the stand-in's Graph front: the answers it reads, the errors
it turns into GraphError, and the caller rules the front applies (sources in tests/support/arm_standin/graph.py)."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

import pytest

from hpclz.azure.clients import StaticTokenCredential
from hpclz.azure.graph import Graph, GraphError
from hpclz.azure.settings import settings_from_env
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.proving import DEPLOYER

APP = "11111111-2222-4333-8444-555555555555"
GROUP = "99999999-8888-4777-8666-555555555555"


@pytest.fixture
def graph(arm: ArmStandIn) -> Graph:
    return Graph(settings_from_env(), StaticTokenCredential(arm.token))


def test_reads_the_service_principal_and_its_assignments(arm: ArmStandIn, graph: Graph) -> None:
    sp = arm.graph.add_app(APP)
    found = graph.service_principal(APP)
    assert found is not None and found["id"] == sp.id
    assert {r["value"]: r["id"] for r in found["appRoles"]} == sp.roles
    assert graph.service_principal("00000000-0000-4000-8000-000000000000") is None  # 404 Request_ResourceNotFound
    made = arm.graph.assignment(sp, GROUP, sp.roles["User"])
    assert graph.assigned_to(sp.id) == [made]
    # Every request carried the bearer token over TLS, and reads need no Entra role.
    assert [status for *_, status in arm.graph.log] == [200, 404, 200]


def test_a_caller_without_an_entra_role_or_ownership_is_refused_with_graphs_body(arm: ArmStandIn, graph: Graph) -> None:
    sp = arm.graph.add_app(APP)
    with pytest.raises(GraphError) as refused:
        graph.assign(sp.id, GROUP, sp.roles["User"])
    assert (refused.value.status, refused.value.code) == (403, "Authorization_RequestDenied")
    assert refused.value.message == "Insufficient privileges to complete the operation." and refused.value.refused
    assert sp.assignments == []


def test_a_role_the_app_does_not_define_is_a_bad_request(arm: ArmStandIn, graph: Graph) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.directory_roles[DEPLOYER.object_id] = {"Privileged Role Administrator"}
    with pytest.raises(GraphError) as bad:
        graph.assign(sp.id, GROUP, "00000000-0000-4000-8000-00000000beef")
    assert (bad.value.status, bad.value.code, bad.value.refused) == (400, "Request_BadRequest", False)
    made = graph.assign(sp.id, GROUP, sp.roles["Global.Node.User"])
    assert made["principalId"] == GROUP and made["resourceId"] == sp.id and len(made["id"]) == 43
    assert graph.unassign(sp.id, made["id"]) is True
    assert graph.unassign(sp.id, made["id"]) is False  # 404: already gone
    assert sp.assignments == []


def test_an_unknown_token_is_401(arm: ArmStandIn) -> None:
    arm.graph.add_app(APP)
    request = urllib.request.Request(
        f"{arm.graph.url}/v1.0/servicePrincipals(appId='{APP}')", headers={"Authorization": "Bearer nobody"}
    )
    context = ssl.create_default_context(cafile=str(arm.cert))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30, context=context)
    assert refused.value.code == 401


def test_every_page_of_assignments_is_read(arm: ArmStandIn, graph: Graph) -> None:
    sp = arm.graph.add_app(APP)
    arm.graph.page_size = 2
    made = [arm.graph.assignment(sp, f"99999999-8888-4777-8666-00000000000{i}", sp.roles["User"]) for i in range(5)]
    assert graph.assigned_to(sp.id) == made
    assert [path for _, path, _ in arm.graph.log].count(f"/v1.0/servicePrincipals/{sp.id}/appRoleAssignedTo") == 3


def test_reads_the_apps_spa_redirect_uris(arm: ArmStandIn, graph: Graph) -> None:
    """`GET /applications(appId='{appId}')?$select=spa` (learn.microsoft.com/graph/api/application-get)."""
    assert graph.spa_redirect_uris(APP) is None  # no such app in the tenant: 404 Request_ResourceNotFound
    arm.graph.add_app(APP).spa_redirect_uris = ["https://localhost:8443/home"]
    assert graph.spa_redirect_uris(APP) == ["https://localhost:8443/home"]
    assert arm.graph.writes() == []
