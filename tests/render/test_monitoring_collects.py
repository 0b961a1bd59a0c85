"""Monitoring that collects: the agent and rule association on the VMs hpclz
creates, managed Prometheus fed by the nodes' exporters, Managed Grafana, and alerts on node and GPU health."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from hpclz.arm.api_versions import pinned_version
from hpclz.config import load_config_text
from hpclz.config.identity import BuiltinRole
from hpclz.render import prometheus
from hpclz.render.cloudinit import _compute_identity
from hpclz.render.roles import ROLE_IDS
from hpclz.render.zone import Zone
from tests.render.conftest import preset_plan, preset_text, resources_of, variant
from tests.render.test_cloudinit import TEMPLATES, _artifacts, _nodearrays, _scripts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "monitoring"
HELPER = TEMPLATES / "prometheus_url.py"


def _template(stem: str, component: str) -> dict[str, Any]:
    (deployment,) = [d for d in preset_plan(stem).deployments if d.component == component]
    return deployment.template


def _typed(template: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in template["resources"] if r["type"] == type_]


def _vm_rule(stem: str) -> dict[str, Any]:
    (rule,) = [
        r
        for r in _typed(_template(stem, "monitoring"), "Microsoft.Insights/dataCollectionRules")
        if "syslog" in r["properties"]["dataSources"]
    ]
    return rule


def _roles(template: dict[str, Any], role: BuiltinRole) -> list[dict[str, Any]]:
    return [
        r
        for r in _typed(template, "Microsoft.Authorization/roleAssignments")
        if ROLE_IDS[role] in r["properties"]["roleDefinitionId"]
    ]


# --- the agent on the VMs hpclz creates -----------------------------------------------------------------------


def test_cyclecloud_server_runs_the_agent_and_is_associated_with_the_vm_rule() -> None:
    compute = _template("energy", "compute")
    (vm,) = _typed(compute, "Microsoft.Compute/virtualMachines")
    (agent,) = [
        r
        for r in _typed(compute, "Microsoft.Compute/virtualMachines/extensions")
        if r["properties"]["type"] == "AzureMonitorLinuxAgent"
    ]
    assert agent["name"] == f"{vm['name']}/AzureMonitorLinuxAgent"
    assert agent["properties"]["publisher"] == "Microsoft.Azure.Monitor"
    # Signs in with the VM's user-assigned identity (azure-monitor-agent-manage: identifier-name mi_res_id).
    managed = agent["properties"]["settings"]["authentication"]["managedIdentity"]
    assert managed["identifier-name"] == "mi_res_id"
    assert managed["identifier-value"] == next(iter(vm["identity"]["userAssignedIdentities"]))
    (association,) = _typed(compute, "Microsoft.Insights/dataCollectionRuleAssociations")
    assert association["scope"] == f"Microsoft.Compute/virtualMachines/{vm['name']}"
    rule = _vm_rule("energy")
    rule_ref = association["properties"]["dataCollectionRuleId"]
    assert f"'{rule['name']}'" in rule_ref and "rg-energy-monitoring" in rule_ref
    # The association names a rule in another group: compute deploys after monitoring.
    (deployment,) = [d for d in preset_plan("energy").deployments if d.component == "compute"]
    assert "hpclz-energy-prod-monitoring" in deployment.depends_on


def test_without_a_user_identity_the_agent_signs_in_with_the_system_one() -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["identity"]["managed_identities"] = {"scheduler": False, "compute": False}
        doc["identity"]["groups"] = {}

    compute = next(d.template for d in variant("finance", edit).deployments if d.component == "compute")
    (vm,) = _typed(compute, "Microsoft.Compute/virtualMachines")
    assert vm["identity"] == {"type": "SystemAssigned"}
    (agent,) = _typed(compute, "Microsoft.Compute/virtualMachines/extensions")
    assert agent["properties"]["settings"] == {}


def test_agent_off_renders_neither_agent_nor_association() -> None:
    plan = variant("energy", lambda doc: doc["monitoring"].update({"agent": False}))
    assert resources_of(plan, "Microsoft.Insights/dataCollectionRuleAssociations") == []
    extensions = resources_of(plan, "Microsoft.Compute/virtualMachines/extensions")
    assert all(e["properties"]["type"] != "AzureMonitorLinuxAgent" for e in extensions)


def test_vm_rule_collects_sign_ins_and_daemons_from_info() -> None:
    """sshd logs "Accepted publickey for ..." at INFO to facility AUTH by default (sshd_config(5): SyslogFacility
    AUTH, LogLevel INFO; openssh-portable auth.c logs accepted authentications with logit, the INFO level); the
    audit deployment's sign-in search reads those lines from Syslog."""
    sources = _vm_rule("energy")["properties"]["dataSources"]["syslog"]
    info = [s for s in sources if "Info" in s["logLevels"]]
    assert {f for s in info for f in s["facilityNames"]} == {"auth", "authpriv", "daemon"}
    assert all("Debug" not in s["logLevels"] for s in sources)
    searches = json.dumps(_template("energy", "audit"))
    assert "Syslog" in searches and "Accepted" in searches


# --- managed Prometheus and Grafana -----------------------------------------------------------------------------


def test_prometheus_workspace_rule_and_grafana_as_ccws_deploys_them() -> None:
    monitoring = _template("ai-training", "monitoring")
    (workspace,) = _typed(monitoring, "Microsoft.Monitor/accounts")
    (endpoint,) = _typed(monitoring, "Microsoft.Insights/dataCollectionEndpoints")
    (rule,) = [
        r
        for r in _typed(monitoring, "Microsoft.Insights/dataCollectionRules")
        if "prometheusForwarder" in json.dumps(r)
    ]
    props = rule["properties"]
    assert props["dataSources"]["prometheusForwarder"][0]["streams"] == ["Microsoft-PrometheusMetrics"]
    (destination,) = props["destinations"]["monitoringAccounts"]
    assert f"'{workspace['name']}'" in destination["accountResourceId"]
    assert f"'{endpoint['name']}'" in props["dataCollectionEndpointId"]
    (grafana,) = _typed(monitoring, "Microsoft.Dashboard/grafana")
    assert grafana["identity"] == {"type": "SystemAssigned"}
    (integration,) = grafana["properties"]["grafanaIntegrations"]["azureMonitorWorkspaceIntegrations"]
    assert f"'{workspace['name']}'" in integration["azureMonitorWorkspaceResourceId"]
    assert grafana["properties"]["apiKey"] == "Disabled"


def test_prometheus_roles_follow_ccws() -> None:
    """Monitoring Metrics Publisher for the nodes' identity on the rule (miMonitoringRoleAssignments.bicep),
    Monitoring Data Reader for Grafana on the workspace and Grafana Admin for the admins (managedMonitoring.bicep)."""
    monitoring = _template("ai-training", "monitoring")
    # The compute identity (scheduler, partitions) and the locker identity, the only one the login nodes carry.
    publishers = _roles(monitoring, BuiltinRole.MONITORING_METRICS_PUBLISHER)
    assert all(p["scope"].startswith("Microsoft.Insights/dataCollectionRules/dcr-") for p in publishers)
    assert sorted(p["properties"]["principalId"].split("'")[5] for p in publishers) == [
        "id-aitrain-compute-prod-eus2",
        "id-aitrain-locker-prod-eus2",
    ]
    (reader,) = _roles(monitoring, BuiltinRole.MONITORING_DATA_READER)
    assert reader["scope"].startswith("Microsoft.Monitor/accounts/")
    assert "'full').identity.principalId" in reader["properties"]["principalId"]
    admins = _roles(monitoring, BuiltinRole.GRAFANA_ADMIN)
    assert [a["properties"]["principalId"] for a in admins] == ["53f5840a-6a69-4e27-ab39-b50a1723b1fb"]
    identity = _template("ai-training", "identity")
    own = [
        r for r in _roles(identity, BuiltinRole.READER) if "userAssignedIdentities/id-aitrain-" in str(r.get("scope"))
    ]
    assert len(own) == 2, "the nodes read their own client ID (compute identity; locker identity on login nodes)"
    # The publisher assignment reads the nodes' identity's principal: monitoring deploys after identity.
    (deployment,) = [d for d in preset_plan("ai-training").deployments if d.component == "monitoring"]
    assert "hpclz-aitrain-prod-identity" in deployment.depends_on


def test_presets_without_prometheus_render_none_of_it() -> None:
    for stem in ("finance", "manufacturing"):
        plan = preset_plan(stem)
        assert resources_of(plan, "Microsoft.Monitor/accounts") == []
        assert resources_of(plan, "Microsoft.AlertsManagement/prometheusRuleGroups") == []
        assert "hpclz-metrics" not in _artifacts(stem)["cyclecloud/slurm-cluster.txt"]


# --- alerts ---------------------------------------------------------------------------------------------------


def test_alert_rules_watch_node_down_xid_and_ecc_and_reach_the_action_group() -> None:
    alerts = _template("ai-training", "alerts")
    (group,) = _typed(alerts, "Microsoft.AlertsManagement/prometheusRuleGroups")
    assert "Microsoft.Monitor/accounts" in group["properties"]["scopes"][0]
    rules = {r["alert"]: r for r in group["properties"]["rules"]}
    assert set(rules) == {"HpclzNodeDown", "HpclzGpuXidError", "HpclzGpuEccDoubleBit"}
    assert "DCGM_FI_DEV_XID_ERRORS" in rules["HpclzGpuXidError"]["expression"]
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in rules["HpclzGpuEccDoubleBit"]["expression"]
    assert 'job="node"' in rules["HpclzNodeDown"]["expression"]
    action = alerts["resources"][0]["properties"]["actions"][0]["actionGroupId"]
    assert all(r["actions"] == [{"actionGroupId": action}] for r in rules.values())
    # The action group mails the config's address (monitoring.action_group.emails).
    (group_resource,) = _typed(_template("ai-training", "monitoring"), "Microsoft.Insights/actionGroups")
    assert group_resource["properties"]["emailReceivers"][0]["emailAddress"] == "ml-oncall@example.com"


def test_alerted_metrics_are_the_ones_the_nodes_export() -> None:
    """Every DCGM field an alert reads is in the counters file the DCGM exporter is started with, and the
    node-down rule reads the scrape job the node script configures."""
    exported = {row[0] for row in prometheus.DCGM_COUNTERS}
    for rule in prometheus.PROMETHEUS_ALERTS:
        for metric in re.findall(r"DCGM_FI_[A-Z_]+", str(rule["expression"])):
            assert metric in exported, metric
    assert "job_name: node" in (TEMPLATES / "metrics.sh.j2").read_text(encoding="utf-8")


def test_without_the_gpu_exporter_only_the_node_rule_is_left() -> None:
    plan = variant("ai-training", lambda doc: doc["monitoring"]["prometheus"].update({"gpu_exporter": False}))
    (group,) = resources_of(plan, "Microsoft.AlertsManagement/prometheusRuleGroups")
    assert [r["alert"] for r in group["properties"]["rules"]] == ["HpclzNodeDown"]


# --- the node side ----------------------------------------------------------------------------------------------


def _metrics_helper(script: str) -> str:
    body: str
    (body,) = re.findall(r"<<'HPCLZ_EOF'\n(#!/bin/bash\n# hpclz-metrics.*?)^HPCLZ_EOF$", script, flags=re.S | re.M)
    return body


def test_gpu_nodes_install_pinned_exporters_and_the_dcgm_exporter_by_digest() -> None:
    arrays = _nodearrays(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"])
    helper = _metrics_helper(_scripts(arrays["h100"])[0])
    for name, pins in prometheus.EXPORTERS.items():
        assert f"{pins['version']}" in helper and pins["amd64"] in helper and pins["arm64"] in helper, name
    assert "sha256sum -c -" in helper
    assert prometheus.DCGM_EXPORTER_IMAGE in helper and "@sha256:" in prometheus.DCGM_EXPORTER_IMAGE
    assert "ROLE=h100" in helper
    assert "systemctl start --no-block hpclz-metrics.service" in _scripts(arrays["h100"])[0]


def test_cpu_nodes_scheduler_and_login_get_node_exporter_only() -> None:
    cluster = _artifacts("energy")["cyclecloud/slurm-cluster.txt"]
    hbv3 = _metrics_helper(_scripts(_nodearrays(cluster)["hbv3"])[0])
    assert "docker run" not in hbv3 and prometheus.DCGM_EXPORTER_IMAGE not in hbv3
    found = [re.search(r"^ROLE=(\S+)$", _metrics_helper(s), flags=re.M) for s in _scripts(cluster)]
    roles = {m.group(1) for m in found if m is not None}
    assert None not in found
    assert {"scheduler", "login", "hbv3"} <= roles


def test_checksums_are_checked_before_anything_is_unpacked() -> None:
    helper = (TEMPLATES / "metrics.sh.j2").read_text(encoding="utf-8")
    body = helper[helper.index("fetch_release() {") :]
    assert body.index("sha256sum -c") < body.index("tar -xzf")


# --- the boot-time lookup, against Azure's documented responses --------------------------------------------------


def _fixture(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    body.pop("_source")
    return body


@pytest.fixture
def azure_apis(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[str, Any], list[str]]]:
    """A local stand-in for IMDS and ARM serving the documented bodies; records each request's path."""
    routes: dict[str, Any] = {}
    seen: list[str] = []
    token = _fixture("imds_token_docs_sample.json")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            seen.append(url.path)
            query = parse_qs(url.query)
            if url.path == "/metadata/instance/compute" and self.headers["Metadata"] == "true":
                body: Any = {"subscriptionId": routes["subscription"]}
            elif url.path == "/metadata/identity/oauth2/token" and self.headers["Metadata"] == "true":
                routes["mi_res_id"] = query["mi_res_id"][0]
                body = token
            elif self.headers["Authorization"] == f"Bearer {token['access_token']}" and url.path in routes:
                assert query["api-version"][0] == routes["api"][url.path]
                body = routes[url.path]
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", routes, seen
    finally:
        server.shutdown()
        server.server_close()


def _lookup_args() -> list[str]:
    zone = Zone(load_config_text(preset_text("ai-training"), "ai-training.yaml").config)
    metrics = prometheus.node_metrics(zone, _compute_identity(zone))
    assert metrics is not None
    return [metrics["identity"], metrics["rule"], metrics["endpoint"]]


def _serve(routes: dict[str, Any], args: list[str], endpoint_body: str) -> None:
    subscription = "703362b3-f278-4e4b-9179-c76eaf41ffc2"
    prefix = f"/subscriptions/{subscription}/"
    identity, rule, endpoint = args
    routes.update(
        {
            "subscription": subscription,
            prefix + identity: _fixture("identity_get_specexample.json"),
            prefix + rule: _fixture("dcr_create_specexample.json"),
            prefix + endpoint: _fixture(endpoint_body),
            "api": {
                prefix + identity: pinned_version("Microsoft.ManagedIdentity/userAssignedIdentities"),
                prefix + rule: pinned_version("Microsoft.Insights/dataCollectionRules"),
                prefix + endpoint: pinned_version("Microsoft.Insights/dataCollectionEndpoints"),
            },
        }
    )


def _run_helper(base: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {"HPCLZ_IMDS": f"{base}/metadata", "HPCLZ_ARM": base, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(HELPER), *args, "1"], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_node_builds_the_remote_write_url_from_what_azure_returns(
    azure_apis: tuple[str, dict[str, Any], list[str]],
) -> None:
    base, routes, seen = azure_apis
    args = _lookup_args()
    _serve(routes, args, "dce_get_docs_sample.json")
    done = _run_helper(base, args)
    assert done.returncode == 0, done.stderr
    url, client_id = done.stdout.split()
    assert url == (
        "https://mycollectionendpoint-abcd.eastus-1.metrics.ingest.monitor.azure.com/dataCollectionRules/"
        "dcr-b74e0d383fc9415abaa584ec41adece3/streams/Microsoft-PrometheusMetrics/api/v1/write?api-version=2023-04-24"
    )
    assert client_id == "4024ab25-56a8-4370-aea6-6389221caf29"
    assert routes["mi_res_id"] == f"/subscriptions/{routes['subscription']}/{args[0]}"
    assert seen[:2] == ["/metadata/instance/compute", "/metadata/identity/oauth2/token"]


def test_an_endpoint_without_metrics_ingestion_is_waited_for_not_guessed(
    azure_apis: tuple[str, dict[str, Any], list[str]],
) -> None:
    """The 2022-06-01 spec example of a data collection endpoint has no metricsIngestion: the helper keeps
    waiting (here one attempt) and prints nothing Prometheus could write to."""
    base, routes, _ = azure_apis
    args = _lookup_args()
    _serve(routes, args, "dce_get_specexample_2022-06-01.json")
    done = _run_helper(base, args)
    assert done.returncode == 1 and done.stdout == ""
    assert "metricsIngestion" in done.stderr


def test_helper_reads_at_the_pinned_api_versions() -> None:
    text = HELPER.read_text(encoding="utf-8")
    assert f'DATA_COLLECTION_API = "{pinned_version("Microsoft.Insights/dataCollectionRules")}"' in text
    assert f'IDENTITY_API = "{pinned_version("Microsoft.ManagedIdentity/userAssignedIdentities")}"' in text


# --- dashboards ---------------------------------------------------------------------------------------------------


def test_node_and_gpu_dashboards_read_what_the_nodes_export() -> None:
    (monitoring,) = [d for d in preset_plan("ai-training").deployments if d.component == "monitoring"]
    nodes = json.loads(monitoring.artifacts["grafana/hpclz-nodes.json"])
    gpus = json.loads(monitoring.artifacts["grafana/hpclz-gpus.json"])
    exported = {row[0] for row in prometheus.DCGM_COUNTERS}
    exprs = [t["expr"] for p in gpus["panels"] for t in p["targets"]]
    assert {m for e in exprs for m in re.findall(r"DCGM_FI_[A-Z_]+", e)} <= exported
    assert any("DCGM_FI_DEV_XID_ERRORS" in e for e in exprs) and any("ECC_DBE" in e for e in exprs)
    assert any('up{job="node"' in t["expr"] for p in nodes["panels"] for t in p["targets"])
    assert {v["name"] for v in nodes["templating"]["list"]} == {"datasource", "cluster", "instance"}
    (no_grafana,) = [d for d in preset_plan("finance").deployments if d.component == "monitoring"]
    assert not any(name.startswith("grafana/") for name in no_grafana.artifacts)
