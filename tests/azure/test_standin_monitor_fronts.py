"""The stand-in's Managed Grafana and Azure Monitor ingestion fronts (tests/support/arm_standin/data_planes.py), each
judged by the world's role assignments with the real role JSONs: Grafana Admin's data action
Microsoft.Dashboard/grafana/ActAsGrafanaAdmin/action, and Monitoring Metrics Publisher's on a data collection rule.
The refusals are the ones Azure documents (sources beside each front)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import GrafanaFront, IngestionFront

GROUP = "Microsoft.Insights"


def _call(arm: ArmStandIn, request: urllib.request.Request) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(arm.cert))
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _seed(arm: ArmStandIn, rtype: str, name: str, properties: dict[str, object]) -> str:
    rid = f"{arm.proving.subscription_scope}/resourceGroups/rg-mon/providers/{rtype}/{name}"
    arm.world.resources[rid.lower()] = {"id": rid, "name": name, "type": rtype, "properties": properties}
    return rid


def test_grafana_lets_an_admin_in_and_shows_no_roles_assigned_to_anyone_else(arm: ArmStandIn) -> None:
    grafana = _seed(arm, "Microsoft.Dashboard/grafana", "amg1", {})
    admin, admin_token = arm.proving.principal("grafana admin", groups=("admins-group",))
    _, other_token = arm.proving.principal("someone", groups=("users-group",))
    arm.proving.authorization.grant("admins-group", "Grafana Admin", grafana)
    arm.proving.authorization.grant("users-group", "Contributor", arm.proving.subscription_scope)  # no data action
    front = GrafanaFront(arm, grafana).start()
    try:
        users = f"{front.endpoint}/api/org/users"
        status, body = _call(arm, urllib.request.Request(users, headers={"Authorization": "Bearer " + admin_token}))
        assert status == 200
        assert json.loads(body) == [{"orgId": 1, "userId": 1, "email": "", "login": admin.object_id, "role": "Admin"}]
        status, body = _call(arm, urllib.request.Request(users, headers={"Authorization": "Bearer " + other_token}))
        assert status == 403 and b"<h1>No Roles Assigned</h1>" in body
        # The admin's group assignment on another instance reaches nothing here.
        authz = arm.proving.authorization
        authz.seeded = [g for g in authz.seeded if g.scope != grafana]
        arm.proving.authorization.grant("admins-group", "Grafana Admin", grafana + "-other")
        status, body = _call(arm, urllib.request.Request(users, headers={"Authorization": "Bearer " + admin_token}))
        assert status == 403 and b"No Roles Assigned" in body
    finally:
        front.stop()


def test_ingestion_takes_metrics_from_a_publisher_on_the_rule_only(arm: ArmStandIn) -> None:
    rule = _seed(arm, f"{GROUP}/dataCollectionRules", "dcr1", {"immutableId": "dcr-00112233445566778899aabbccddeeff"})
    other = _seed(arm, f"{GROUP}/dataCollectionRules", "dcr2", {"immutableId": "dcr-ffeeddccbbaa99887766554433221100"})
    endpoint = _seed(arm, f"{GROUP}/dataCollectionEndpoints", "dce1", {})
    node, token = arm.proving.principal("node identity", kind="ServicePrincipal")
    arm.proving.authorization.grant(node.object_id, "Monitoring Metrics Publisher", rule)
    arm.proving.authorization.grant(node.object_id, "Owner", other)  # control plane only: no data action
    front = IngestionFront(arm, endpoint).start()
    path = "/dataCollectionRules/{}/streams/Microsoft-PrometheusMetrics/api/v1/write?api-version=2023-04-24"
    try:

        def send(immutable: str) -> tuple[int, bytes]:
            request = urllib.request.Request(
                front.url + path.format(immutable), data=b"", method="POST",
                headers={"Authorization": "Bearer " + token, "Content-Encoding": "snappy"},
            )  # fmt: skip
            return _call(arm, request)

        assert send("dcr-00112233445566778899aabbccddeeff") == (200, b"")
        status, body = send("dcr-ffeeddccbbaa99887766554433221100")
        error = json.loads(body)["error"]
        assert status == 403 and error["code"] == "OperationFailed"
        assert error["message"].startswith(
            "The authentication token provided does not have access to ingest data for the data collection rule "
            "with immutable Id 'dcr-ffeeddccbbaa99887766554433221100'"
        )
        assert f"objectId {node.object_id} on resourceId {other}" in error["message"]
        assert front.accepted == [(node.object_id, "dcr-00112233445566778899aabbccddeeff")]
    finally:
        front.stop()
