"""The derived egress allow-list (hpclz.render.egress) cannot drift from what the presets render.

Every host a rendered artefact names (comments, docstrings and NOT_EGRESS left out) must be a row of the table for
that VM role, and every row of the table must be used by some preset: a fetch added without a row, or a row left
behind by a removed fetch, fails here.
"""

from __future__ import annotations

import json

import pytest

from hpclz.render import egress
from hpclz.render.model import Deployment, DeploymentPlan
from hpclz.render.writer import output_files
from tests.conftest import PRESETS
from tests.render.conftest import preset_plan

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
    assert not any("blob.core.windows.net" in entry for entry in document["hub_must_allow"])
    assert "| nodes | `packages.microsoft.com` | Https:443 |" in files[egress.EGRESS_MD]
