"""The `deployed` fixture (a zone deployed once per worker, copied into each test) leaves a test where its own
`hpclz deploy --yes` would have: the same resources, groups, deployments, run commands, grants and state, a clean
plan; and no copy shares anything mutable with another copy or with the deploy it came from."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RunCli
from tests.deploy.conftest import DeployedWorlds, state_of
from tests.deploy.test_day2 import assert_inventory_is_state, assert_plan_clean, writes_since
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.snapshot import SnapshotError, carry, fingerprint

# Differ between any two deploys, copied or not: when, and the IDs ARM makes up per run.
# The state's lineage is a new random ID per first deploy, and a secret's fingerprint is salted afresh per write;
# resources are recorded as the deployments of a wave end.
VOLATILE = {
    *("timestamp", "correlationId", "correlation_id", "lineage", "salt", "digest"),
    *("created_at", "updated_at", "started_at", "finished_at"),
}


def _state(config: Path) -> dict[str, Any]:
    state = state_of(config)
    return {**state, "resources": sorted(state["resources"], key=lambda r: str(r["id"]).lower())}


def _steady(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _differences(a: Any, b: Any, at: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at}: {a!r} != {b!r}"[:300]]


def _world(arm: ArmStandIn) -> dict[str, Any]:
    return {
        "groups": arm.world.groups,
        "resources": arm.world.resources,
        "deployments": {k: _steady(run.view()) for k, run in arm.world.deployments.items()},
        "commands": sorted(c.name for c in arm.compute.commands.values()),
        "scripts": len(arm.compute.scripts),
        "grants": sorted(map(repr, arm.proving.authorization.grants(arm.world.resources))),
        "apps": sorted(arm.graph.apps),
        # Sorted: hpclz runs independent deployments of a wave side by side, in whichever order they start.
        "log": sorted((r.method, r.path.split("?")[0]) for r in arm.log if r.method != "GET"),
    }


def test_a_copy_is_what_a_deploy_leaves(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, tmp_path: Path, deployed_worlds: DeployedWorlds
) -> None:
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    copied = tmp_path / "copied" / "zone" / "lz.yaml"
    copied.parent.mkdir(parents=True)
    copied.write_text(energy.read_text())
    with pytest.MonkeyPatch.context() as patch, ArmStandIn(tmp_path / "other").in_environment(patch) as other:
        deployed_worlds.into(other, copied)
        world, state = _steady(_world(other)), _steady(_state(copied))
        assert world == _steady(_world(arm)), "\n".join(_differences(world, _steady(_world(arm))))
        assert state == _steady(_state(energy)), "\n".join(_differences(state, _steady(_state(energy))))
        start = len(other.log)
        assert_plan_clean(run_cli, copied)
        assert_inventory_is_state(other, copied)
        assert run_cli("deploy", str(copied), "--yes").exit_code == 0  # a no-op deploy on the copy, as on the original
        assert writes_since(other, start) == []


def test_copies_share_nothing(
    arm: ArmStandIn, energy: Path, predeployed: Callable[[Path], None], deployed_worlds: DeployedWorlds, tmp_path: Path
) -> None:
    predeployed(energy)
    before = json.dumps(_steady(_world(arm)), sort_keys=True, default=str)
    for key in list(arm.world.resources):  # what a test may do to its copy
        arm.world.resources[key].setdefault("tags", {})["touched"] = "yes"
    arm.world.deployments.clear()
    arm.compute.commands.clear()
    state = energy.parent / ".hpclz"
    for file in state.rglob("*.json"):
        file.write_text("{}")

    second = tmp_path / "second" / "zone" / "lz.yaml"
    second.parent.mkdir(parents=True)
    second.write_text(energy.read_text())
    with pytest.MonkeyPatch.context() as patch, ArmStandIn(tmp_path / "other").in_environment(patch) as other:
        deployed_worlds.into(other, second)
        assert json.dumps(_steady(_world(other)), sort_keys=True, default=str) == before
        assert state_of(second)["resources"]
        other.world.resources.clear()  # and the other way round: this copy's edits leave the first copy as it was
        assert all(r["tags"]["touched"] == "yes" for r in arm.world.resources.values())


def test_a_hook_the_new_stand_in_does_not_own_stops_the_copy(tmp_path: Path) -> None:
    with ArmStandIn(tmp_path / "a") as old, ArmStandIn(tmp_path / "b") as new:
        pristine = fingerprint(old)
        old.world.latency["x"] = 1.0
        old.compute.scripts.append("echo")
        carry(old, new, pristine)
        assert new.world.latency == {"x": 1.0} and new.compute.scripts == ["echo"]
        assert new.world.lock is not old.world.lock and new.world.guards is not old.world.guards
        old.world.registering["hook"] = lambda: 0  # type: ignore[assignment]
        with pytest.raises(SnapshotError, match=r"World\.registering holds"):
            carry(old, new, fingerprint(new))


def test_a_stand_in_set_up_before_the_copy_is_refused(tmp_path: Path) -> None:
    with ArmStandIn(tmp_path / "a") as old, ArmStandIn(tmp_path / "b") as new:
        pristine = fingerprint(old)
        new.world.taken_names.add("stenergyprodscus")  # a test's set-up the copy would wipe out
        with pytest.raises(SnapshotError, match="not as it started"):
            carry(old, new, pristine)
