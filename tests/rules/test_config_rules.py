"""Every config rule fires on its failing case (tests/rules/cases.py) and stays quiet on the presets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpclz.config import load_config
from hpclz.findings import Finding
from hpclz.registry import CONFIG_RULES
from hpclz.services.validate import check_config
from tests.rules.cases import CASES, ZERO, Case, _set, load_case

# Rules that report a fact on every config by design (no passing case exists): the quota report.
ALWAYS_REPORTS = {"HPCLZ-CMP-010"}
# Findings a preset shows on purpose, each explained in the preset's comments.
DELIBERATE = {
    ("ai-training", "HPCLZ-MON-002"),
    ("energy", "HPCLZ-SEC-001"),
    ("energy", "HPCLZ-MNT-020"),
    # Azure Backup cannot back up their NFS shares: share soft delete is all Azure offers (HPCLZ-MNT-031's docstring).
    ("ai-training", "HPCLZ-MNT-031"),
    ("finance", "HPCLZ-MNT-031"),
    # No published capture states the zones of these presets' sizes in their regions (availability.json _gaps).
    ("ai-training", "HPCLZ-ZON-002"),
    ("energy", "HPCLZ-ZON-002"),
    ("finance", "HPCLZ-ZON-002"),
    # Slurm accounting: the password in /sched's slurmdbd.conf, readable by root on every node (HPCLZ-CMP-047).
    ("ai-training", "HPCLZ-CMP-047"),
    ("energy", "HPCLZ-CMP-047"),
    ("finance", "HPCLZ-CMP-047"),
    # finance's only egress is the hub firewall: the hub team needs the list of what the zone fetches.
    ("finance", "HPCLZ-NET-014"),
    # No public source states cyclecloud-slurm 4.0.9's SHA-256: no preset can pin it, each trusts the first fetch.
    ("ai-training", "HPCLZ-CMP-021"),
    ("energy", "HPCLZ-CMP-021"),
    ("finance", "HPCLZ-CMP-021"),
    ("manufacturing", "HPCLZ-CMP-021"),
}
# Rules every preset shows (all DELIBERATE), each with its passing case tested below instead.
PASSES_OUTSIDE_PRESETS = {"HPCLZ-CMP-021"}

CASE_PARAMS = [
    pytest.param(rule_id, case, id=f"{rule_id}-{n}") for rule_id, cases in CASES.items() for n, case in enumerate(cases)
]


def test_table_covers_every_registered_config_rule() -> None:
    registered = {r.id for r in CONFIG_RULES}
    assert set(CASES) == registered, (
        f"missing cases: {sorted(registered - set(CASES))}; cases for unknown rules: {sorted(set(CASES) - registered)}"
    )


def _findings(rule_id: str, case: Case) -> list[Finding]:
    reported, _ = check_config(load_case(case, f"{case.preset}-{rule_id}"))
    return [f for f in reported if f.rule_id == rule_id]


@pytest.mark.parametrize(("rule_id", "case"), CASE_PARAMS)
def test_rule_fires_on_its_failing_case(rule_id: str, case: Case) -> None:
    fired = _findings(rule_id, case)
    assert fired, f"{rule_id} did not fire on its failing case ({case.preset})"
    rule = next(r for r in CONFIG_RULES if r.id == rule_id)
    expected = case.severity or rule.severity.value
    assert {f.severity.value for f in fired} == {expected}
    for f in fired:
        assert "crashed" not in f.message
        # what is wrong (message), where (file:line and config path), how to fix it (fix)
        assert f.message and f.fix and f.path, f
        assert f.file and f.line, f"{rule_id}: finding has no file:line ({f.path})"


def test_presets_are_the_passing_cases(preset_path: Path) -> None:
    reported, _ = check_config(load_config(preset_path))
    unexpected = [
        f for f in reported if f.rule_id not in ALWAYS_REPORTS and (preset_path.stem, f.rule_id) not in DELIBERATE
    ]
    assert unexpected == [], "\n".join(f"{f.rule_id} {f.path}: {f.message}" for f in unexpected)


@pytest.mark.parametrize(("preset", "rule_id"), sorted(DELIBERATE))
def test_deliberate_preset_findings_still_fire_and_are_documented(preset: str, rule_id: str) -> None:
    from tests.conftest import REPO

    path = REPO / "configs" / f"{preset}.yaml"
    reported, _ = check_config(load_config(path))
    assert rule_id in {f.rule_id for f in reported}
    assert rule_id in path.read_text(encoding="utf-8"), f"{preset}.yaml must explain why it shows {rule_id}"


def test_every_rule_passes_somewhere() -> None:
    """Each rule except the always-on reports is silent on at least one preset (its passing case)."""
    from tests.conftest import PRESETS

    fired_everywhere = set(CASES)
    for path in PRESETS:
        reported, _ = check_config(load_config(path))
        fired_everywhere &= {f.rule_id for f in reported}
    assert fired_everywhere == ALWAYS_REPORTS | PASSES_OUTSIDE_PRESETS


def test_a_pinned_release_is_not_trusted_on_first_use() -> None:
    """HPCLZ-CMP-021's passing case: every file of the release pinned (digests made up for the test only; HPCLZ-CMP-018
    checks the names, the sync checks the bytes)."""
    from hpclz.catalog.versions import PROJECT_BLOBS

    pinned = {name: "a" * 64 for name in PROJECT_BLOBS["4.0.9"]}
    case = Case("finance", _set("compute.cyclecloud.slurm_project_sha256", pinned))
    assert _findings("HPCLZ-CMP-021", case) == []
    assert _findings("HPCLZ-CMP-018", case) == []
    (unpinned,) = _findings("HPCLZ-CMP-021", CASES["HPCLZ-CMP-021"][0])
    assert "recorded in the locker's hpclz/cyclecloud-slurm-4.0.9.sha256.json" in unpinned.message
    (unrecorded,) = _findings("HPCLZ-CMP-021", CASES["HPCLZ-CMP-021"][1])
    assert "every fetch from GitHub is trusted as it comes" in unrecorded.message


def test_every_internet_spelling_is_caught_but_deny_and_outbound_are_not() -> None:
    (case,) = CASES["HPCLZ-NET-008"]
    assert len(_findings("HPCLZ-NET-008", case)) == 3  # 0.0.0.0 → 22, Any → 20-25, * → 80,22

    def harmless(doc: dict[str, Any]) -> None:
        case.mutate(doc)
        rules = doc["network"]["nsg_rules"]
        rules[0]["access"] = "Deny"
        rules[1]["direction"] = "Outbound"
        rules[2]["source_address_prefix"] = "10.0.0.0/16"

    assert _findings("HPCLZ-NET-008", Case(case.preset, harmless)) == []


def test_private_destination_is_quiet_where_a_route_may_reach_or_nothing_is_allowed_out() -> None:
    """HPCLZ-NET-015 warns only on an outbound allow rule to a private prefix no peering, gateway or firewall route
    covers (manufacturing without its hub, the first failing case)."""
    unpeered = CASES["HPCLZ-NET-015"][0]
    (finding,) = _findings("HPCLZ-NET-015", unpeered)
    assert "10.0.0.0/16 is neither in the VNet nor in a hub" in finding.message

    def quiet(change: Any) -> list[Finding]:
        def mutate(doc: dict[str, Any]) -> None:
            unpeered.mutate(doc)
            change(doc)

        return _findings("HPCLZ-NET-015", Case("manufacturing", mutate))

    def rule(key: str, value: str) -> Any:
        return _set(f"network.nsg_rules.0.{key}", value)

    hub = {
        "remote_vnet_id": f"/subscriptions/{ZERO}/resourceGroups/rg-hub/providers/"
        "Microsoft.Network/virtualNetworks/vnet-hub",
        "remote_address_space": ["10.1.0.0/16"],
    }
    assert quiet(rule("access", "Deny")) == []
    assert quiet(rule("direction", "Inbound")) == []
    assert quiet(rule("destination_address_prefix", "VirtualNetwork")) == []  # a service tag, not a prefix
    assert quiet(rule("destination_address_prefix", "20.50.0.0/16")) == []  # public: the Internet route
    assert quiet(rule("destination_address_prefix", "10.80.8.0/22")) == []  # inside the VNet
    assert quiet(_set("network.hub_peering", {**hub, "use_remote_gateways": True, "hub_gateway": True})) == []
    assert quiet(_set("network.hub_peering", {**hub, "firewall_private_ip": "10.1.0.4"})) == []
    # A hub that holds another range is no route to this one.
    assert len(quiet(_set("network.hub_peering", hub))) == 1


def _rendered_names(node: object) -> set[str]:
    """Every `name` string in a rendered template, a child resource's `parent/child` split into its parts."""
    if isinstance(node, dict):
        name = node.get("name")
        own = set(name.split("/")) if isinstance(name, str) else set()
        return own.union(*(_rendered_names(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_rendered_names(item) for item in node))
    return set()


def test_org004_checks_the_names_render_writes(preset_path: Path) -> None:
    """ORG-004 predicts names from the config; each one hpclz itself creates must be the name render emits.
    Scheduler, login and partition VMs are CycleCloud's, so render has no name for them to compare."""
    from hpclz.render.build import build_plan
    from hpclz.rules.config.organization import planned_names
    from hpclz.rules.context import ConfigContext

    loaded = load_config(preset_path)
    rendered = set().union(*(_rendered_names(d.template) for d in build_plan(loaded.config).deployments))
    cyclecloud_owned = {("compute", "scheduler"), ("compute", "login")}
    planned = {
        name
        for kind, name, path in planned_names(ConfigContext(loaded))
        if kind != "virtual_machine" or (path not in cyclecloud_owned and path[:2] != ("compute", "partitions"))
    }
    assert planned - rendered == set()


def test_a_server_kept_on_the_image_it_was_created_from_passes() -> None:
    """HPCLZ-CMP-020's passing case beside the presets: CycleCloud 8.9.1 upgraded in place on the 8.9.0 image."""
    case = Case("finance", _set("compute.cyclecloud.image_release", "8.9.0"))
    assert _findings("HPCLZ-CMP-020", case) == []
