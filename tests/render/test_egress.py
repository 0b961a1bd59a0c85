"""The derived egress allow-list (hpclz.render.egress) cannot drift from what the presets render.

Every host a rendered artefact names (comments, docstrings and NOT_EGRESS left out) must be a row of the table for
that VM role, and every row of the table must be used by some preset: a fetch added without a row, or a row left
behind by a removed fetch, fails here.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hpclz.arm import checkov_gate
from hpclz.arm.schema_gate import validate_template
from hpclz.gates import Gate, check_plan
from hpclz.render import egress, hub_egress
from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.render.writer import output_files, write_plan
from tests.arm.support import deployment, plan_of, require_schemas
from tests.conftest import PRESETS, require
from tests.render.conftest import preset_plan, resources_of, variant
from tests.render.test_cloudinit import _artifacts, _scripts

STEMS = [p.stem for p in PRESETS]


def _used(plan: DeploymentPlan) -> set[egress.Destination]:
    return {row.destination for row in egress.allow_list(plan)}


@pytest.mark.parametrize("stem", STEMS)
def test_every_host_an_artefact_names_is_a_used_row(stem: str) -> None:
    plan = preset_plan(stem)
    used = _used(plan)
    missing = [
        (role, host)
        for role, hosts in egress.named_hosts(plan).items()
        for host in sorted(hosts)
        if not any(d.role == role and d.matches(host) for d in used)
    ]
    assert missing == [], f"{stem}: hosts fetched by the rendered artefacts with no row in egress.DESTINATIONS"


def test_every_row_is_used_by_some_preset() -> None:
    used = set().union(*(_used(preset_plan(stem)) for stem in STEMS))
    unused = [(d.role, d.host) for d in egress.DESTINATIONS if d not in used]
    assert unused == [], "rows of egress.DESTINATIONS that no rendered preset uses"


def test_every_role_fetches_something_somewhere() -> None:
    """Each role's artefacts are found and read (a renamed artefact would leave its role silently empty)."""
    found = {row.destination.role for stem in STEMS for row in egress.allow_list(preset_plan(stem))}
    assert found == set(egress.ROLES)


def _with_artifact(plan: DeploymentPlan, name: str, text: str) -> DeploymentPlan:
    last = plan.deployments[-1]
    extra = Deployment(name="extra", component="extra", scope=last.scope, location=last.location, template={})
    extra.artifacts[name] = text
    return plan.model_copy(update={"deployments": [*plan.deployments, extra]})


def test_an_unlisted_fetch_is_caught_and_a_cited_link_is_not() -> None:
    script = (
        "#!/bin/bash\n"
        "# from https://docs.example.org/howto (a citation, not a fetch)\n"
        "curl -fsSL -o /tmp/tool.tgz https://downloads.example.net/tool.tgz\n"
    )
    plan = _with_artifact(preset_plan("finance"), "cyclecloud/slurm-cluster.txt", script)
    named = egress.named_hosts(plan)[egress.NODES]
    assert "downloads.example.net" in named
    assert "docs.example.org" not in named
    assert not any(d.matches("downloads.example.net") for d in egress.DESTINATIONS)


def test_placeholders_read_as_one_label() -> None:
    assert egress.hosts_in('BLOB = "https://{account}.blob.core.windows.net"') == {"x.blob.core.windows.net"}
    row = next(d for d in egress.DESTINATIONS if d.host == "*.blob.core.windows.net")
    assert row.matches("x.blob.core.windows.net")
    assert not row.matches("blob.core.windows.net.example.com")


def test_private_endpoints_keep_storage_and_key_vault_inside_the_zone() -> None:
    """finance puts the locker, the blob account and the vault behind private endpoints with their private DNS zones
    (configs/finance.yaml storage.blob.private_endpoint, network.private_dns_zones): no hub rule for them."""
    plan = preset_plan("finance")
    rows = egress.allow_list(plan)
    in_zone = {(r.destination.role, r.destination.host) for r in rows if r.in_zone}
    assert in_zone == {
        (egress.CYCLECLOUD, "*.blob.core.windows.net"),
        (egress.CYCLECLOUD, "*.vault.azure.net"),
        (egress.NODES, "*.blob.core.windows.net"),
        (egress.NODES, "*.vault.azure.net"),  # the job credential reads the jobs' secrets (hpclz-job-storage)
    }
    # Without the private DNS zones, the same rows leave through the hub.
    network = next(d for d in plan.deployments if d.component == "network")
    resources = [r for r in network.resources() if r.get("type") != "Microsoft.Network/privateDnsZones"]
    stripped = network.model_copy(update={"template": {**network.template, "resources": resources}})
    without = plan.model_copy(update={"deployments": [stripped if d is network else d for d in plan.deployments]})
    assert not any(r.in_zone for r in egress.allow_list(without))


def test_render_writes_the_list_for_the_hub_team() -> None:
    files = output_files(preset_plan("finance"))
    document = json.loads(files[egress.EGRESS_JSON])
    assert "Https:443 github.com" in document["hub_must_allow"]
    assert "Https:443 management.azure.com" in document["hub_must_allow"]
    assert "Http:80 azure.archive.ubuntu.com" in document["hub_must_allow"]
    # From the VM extensions the compute deployment installs on the CycleCloud server, not from any script.
    assert "Https:443 pas.windows.net" in document["hub_must_allow"]
    assert "Https:443 global.handler.control.monitor.azure.com" in document["hub_must_allow"]
    assert not any("blob.core.windows.net" in entry for entry in document["hub_must_allow"])
    assert "| nodes | `packages.microsoft.com` | Https:443 |" in files[egress.EGRESS_MD]


def test_only_a_zone_routed_to_a_hub_firewall_gets_the_hub_template() -> None:
    # energy and ai-training peer with a hub for their users but keep the NAT gateway: no route to its firewall.
    for peered in ("energy", "ai-training"):
        assert resources_of(preset_plan(peered), "Microsoft.Network/virtualNetworks/virtualNetworkPeerings")
        assert hub_egress.hub_template(preset_plan(peered)) is None
        assert hub_egress.HUB_TEMPLATE not in output_files(preset_plan(peered))
    assert hub_egress.HUB_TEMPLATE in output_files(preset_plan("finance"))


def _rules(template: dict[str, Any]) -> list[dict[str, Any]]:
    (group,) = template["resources"]
    return [rule for collection in group["properties"]["ruleCollections"] for rule in collection["rules"]]


def test_the_hub_template_allows_exactly_what_leaves_through_the_hub() -> None:
    plan = preset_plan("finance")
    template = hub_egress.hub_template(plan)
    assert template is not None
    allowed = {
        (fqdn, p["protocolType"], p["port"])
        for r in _rules(template)
        for fqdn in r.get("targetFqdns", [])
        for p in r["protocols"]
    }
    tags = {tag for r in _rules(template) for tag in r.get("destinationAddresses", [])}
    expected = egress.through_hub(egress.allow_list(plan))
    assert allowed == {
        (r.destination.host, r.destination.protocol, r.destination.port)
        for r in expected
        if r.destination.service_tag is None
    }
    assert tags == {r.destination.service_tag for r in expected if r.destination.service_tag is not None}
    assert "Storage" not in tags  # finance's locker and blob account sit behind private endpoints
    assert template["parameters"]["sourceAddresses"]["defaultValue"] == ["10.60.0.0/16"]


def test_the_hub_template_meets_the_shipped_schema_and_the_schema_can_refuse_it() -> None:
    require_schemas()
    template = hub_egress.hub_template(preset_plan("finance"))
    assert template is not None
    assert validate_template(template, "resourceGroup") == []
    broken = copy.deepcopy(template)
    _rules(broken)[0]["ipProtocols"] = ["SCTP"]
    assert validate_template(broken, "resourceGroup")


@pytest.mark.checkov
@pytest.mark.slow
def test_the_hub_template_passes_every_gate() -> None:
    """The ARM schema, the lint rules and checkov, as `render` gates the zone's own templates."""
    require(checkov_gate.find_checkov() is not None, "checkov")
    template = hub_egress.hub_template(preset_plan("finance"))
    assert template is not None
    hub = deployment("hub-egress", template).model_copy(update={"parameters": {"firewallPolicyName": "afwp-hub"}})
    report = check_plan(plan_of(hub))
    assert report.ran == [Gate.SCHEMA, Gate.LINT, Gate.CHECKOV]
    # HPCLZ-TPL-031 speaks of the allowlist's entries for the zone's own templates, none of which is scanned here.
    findings = [f.message for gate in report.results.values() for f in gate.findings if f.rule_id != "HPCLZ-TPL-031"]
    assert findings == []


def test_a_later_render_without_a_hub_route_removes_the_hub_template(tmp_path: Path) -> None:
    write_plan(preset_plan("finance"), tmp_path)
    assert (tmp_path / hub_egress.HUB_TEMPLATE).is_file()

    def nat(doc: dict[str, Any]) -> None:
        doc["network"]["nat_gateway"]["enabled"] = True
        del doc["network"]["hub_peering"]["firewall_private_ip"]

    write_plan(variant("finance", nat), tmp_path)
    assert not (tmp_path / hub_egress.HUB_TEMPLATE).exists()
    assert (tmp_path / egress.EGRESS_JSON).is_file()


def test_a_fetch_inside_a_cloud_config_file_is_caught() -> None:
    """Embedded files are JSON-escaped quoted values of the cloud-config: decoded, their comments left out."""
    script = "#!/bin/bash\n# see https://docs.example.org/x\ncurl -o /tmp/a https://downloads.example.net/a\n"
    cloud_config = f"#cloud-config\nwrite_files:\n  - path: /opt/x\n    content: {json.dumps(script)}\n"
    plan = _with_artifact(preset_plan("finance"), "cloud-init/extra.yaml", cloud_config)
    named = egress.named_hosts(plan)[egress.CYCLECLOUD]
    assert "downloads.example.net" in named
    assert "docs.example.org" not in named


def test_the_schedulers_locked_dependencies_open_pypi_without_healthagent() -> None:
    """hpclz-install-wheel, as rendered into the cluster template, installs hpclz's dependencies from PyPI (only what
    the wheel's hash-pinned lock names): its text alone, with no healthagent spec beside it, uses PyPI's two rows."""
    (scheduler,) = [
        s for s in _scripts(_artifacts("finance")["cyclecloud/slurm-cluster.txt"]) if "hpclz-install-wheel" in s
    ]
    assert not re.search(egress.HEALTHAGENT, scheduler)
    pypi = {d.host for d in egress.DESTINATIONS if d.role == egress.NODES and d.used_in(scheduler)}
    assert {"pypi.org", "files.pythonhosted.org"} <= pypi
    no_lock = scheduler.replace("--require-hashes", "")
    assert not {"pypi.org", "files.pythonhosted.org"} & {
        d.host for d in egress.DESTINATIONS if d.role == egress.NODES and d.used_in(no_lock)
    }
