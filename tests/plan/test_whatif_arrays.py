"""What-if arrays item by item, as ARM returns them (tests/fixtures/arm/whatif_array_items.json: the documented
VNet example and azure-cli's nested-array case), mapped into the change set and printed; then end to end through
the real SDK clients against the ARM stand-in, which answers in the same shape."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console

from hpclz.cli.views.changeset import print_changeset
from hpclz.plan.changeset import Action, Policy
from hpclz.plan.whatif import whatif_changeset
from tests.conftest import REPO, CliResult
from tests.plan.test_whatif import recorded
from tests.support.arm_standin import ArmStandIn

Run = Callable[..., CliResult]


def _items() -> dict[str, list[tuple[str, Action, object, object]]]:
    changes = whatif_changeset({"d": recorded("whatif_array_items")}, landing_zone="t", environment="dev")
    return {r.name: [(p.path, p.kind, p.before, p.after) for p in r.changes] for r in changes.resources}


def test_an_array_of_plain_values_is_shown_item_by_item_as_the_documented_output() -> None:
    vnet = _items()["vnet-001"]
    assert vnet == [
        ("tags.Owner", Action.DELETE, "Team A", None),
        ("properties.addressSpace.addressPrefixes[0]", Action.DELETE, "10.0.0.0/16", None),
        ("properties.addressSpace.addressPrefixes[0]", Action.CREATE, None, "10.0.0.0/15"),
        (
            "properties.subnets[0]",
            Action.DELETE,
            {"name": "subnet001", "properties": {"addressPrefix": "10.0.0.0/24"}},
            None,
        ),
    ]
    printed = recorded("whatif_array_items")["_printed"]["vnet-001"]
    # One change per line the CLI printed with a symbol under the resource (its own line aside).
    assert len(vnet) == sum(1 for line in printed[1:] if line.strip()[:1] in "+-~" and not line.strip().endswith("["))


def test_an_item_is_judged_against_the_whole_array() -> None:
    """10.0.0.0/16 -> 10.0.0.0/15 is a removal and an addition item by item, but the space only grows (the old
    range lies inside the new one), so both items are in place, as the address-space rule says for the whole."""
    changes = whatif_changeset({"d": recorded("whatif_array_items")}, landing_zone="t", environment="dev")
    vnet = next(r for r in changes.resources if r.name == "vnet-001")
    prefixes = [p for p in vnet.changes if p.path.startswith("properties.addressSpace")]
    assert {p.verdict.policy for p in prefixes} == {Policy.IN_PLACE}
    assert all("grows" in p.verdict.reason for p in prefixes)


def test_an_array_inside_an_array_has_no_path_of_its_own() -> None:
    assert _items()["myaccount/accesscontrol/workflows"] == [
        ("properties.resource.indexingPolicy.compositeIndexes[0][0].order", Action.DELETE, "ascending", None),
        ("properties.resource.indexingPolicy.compositeIndexes[0][1].order", Action.DELETE, "ascending", None),
    ]


def test_printed_items_not_whole_arrays() -> None:
    changes = whatif_changeset({"d": recorded("whatif_array_items")}, landing_zone="t", environment="dev")
    buffer = io.StringIO()
    print_changeset(Console(file=buffer, width=200, no_color=True, highlight=False), changes)
    text = buffer.getvalue()
    assert '- properties.addressSpace.addressPrefixes[0]: "10.0.0.0/16"' in text
    assert '+ properties.addressSpace.addressPrefixes[0]: "10.0.0.0/15"' in text
    assert '["10.0.0.0/16"]' not in text  # never the whole list before and after


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


def test_an_address_range_added_shows_as_one_new_item_through_the_stand_in(
    arm: ArmStandIn, tmp_path: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURMDB_PASSWORD", "slurmdb-Test-4b1d9e")
    zone = tmp_path / "zone" / "lz.yaml"
    zone.parent.mkdir()
    shutil.copy(REPO / "configs" / "energy.yaml", zone)
    assert run_cli("deploy", str(zone), "--yes").exit_code == 0
    zone.write_text(
        zone.read_text().replace("address_space: [10.20.0.0/16]", "address_space: [10.20.0.0/16, 10.21.0.0/16]")
    )

    result = run_cli("plan", str(zone), "--what-if", "-o", "json")
    assert result.exit_code == 0, result.stdout + result.stderr
    body = json.loads(result.stdout)["result"]
    (vnet,) = [r for r in body["resources"] if r["type"] == "Microsoft.Network/virtualNetworks" and r["changes"]]
    assert [(p["path"], p["kind"], p["before"], p["after"]) for p in vnet["changes"]] == [
        ("properties.addressSpace.addressPrefixes[1]", "create", None, "10.21.0.0/16")
    ]
    assert vnet["verdict"]["policy"] == "in_place"
