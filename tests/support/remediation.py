"""A small fleet for remediation tests: real Slurm nodes, their VMs in the ARM stand-in, and what each node's
verify agent reads (a fixture folder of tools' outputs, tests/verify/fixtures), kept in a JSON file so a
remediator in another process (the kill -9 tests) sees the same fleet.

A restart or reimage in the stand-in calls `Fleet.after_action`, which swaps the node's folder for the one the
test planned (healthy again, or still faulty), as a real reboot might or might not clear a fault.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from hpclz.azure.clients import AzureClients
from hpclz.remediate.engine import Policy, Remediator, Verdict, verdict_of
from hpclz.remediate.fleet import AzureFleet
from hpclz.remediate.model import RemediationState
from hpclz.remediate.store import Store
from hpclz.slurm.client import SlurmClient
from hpclz.verify.agent import run_agent
from hpclz.verify.model import NodeReport

VERIFY_FIXTURES = Path(__file__).resolve().parents[1] / "verify" / "fixtures"
GOOD = VERIFY_FIXTURES / "h200-good"
FAULTS = VERIFY_FIXTURES / "h200-faults"
RG = "rg-cluster"
CLUSTER = "c1"


def report_of(node: str, folder: Path) -> NodeReport:
    """The health-tier verify report of a node reading `folder`."""
    return NodeReport.model_validate(run_agent(fixtures=folder, node=node, tier="health"))


@dataclass
class FixtureChecker:
    """The post-repair check: the real verify agent (health tier) on the folder the node reads now."""

    world_file: Path

    def check(self, node: str) -> Verdict:
        world = json.loads(self.world_file.read_text())
        return verdict_of(report_of(node, Path(world["reads"][node])))


@dataclass
class Fleet:
    folder: Path
    nodes: dict[str, str] = field(default_factory=dict)  # node -> VM resource ID

    @property
    def world_file(self) -> Path:
        return self.folder / "world.json"

    def _world(self) -> dict[str, dict[str, object]]:
        if not self.world_file.exists():
            return {"reads": {}, "after": {}}
        loaded: dict[str, dict[str, object]] = json.loads(self.world_file.read_text())
        return loaded

    def plant(self, node: str, reads: Path, after_repair: list[Path] | None = None) -> None:
        """`node` reads `reads` now; each restart or reimage makes it read the next of `after_repair`."""
        world = self._world()
        world["reads"][node] = str(reads)
        world["after"][node] = [str(p) for p in after_repair or []]
        self.folder.mkdir(parents=True, exist_ok=True)
        self.world_file.write_text(json.dumps(world))

    def after_action(self, resource_id: str, _action: str) -> None:
        node = next(n for n, rid in self.nodes.items() if rid.lower() == resource_id.lower())
        world = self._world()
        queue = world["after"].get(node) or []
        assert isinstance(queue, list)
        if queue:
            world["reads"][node] = queue.pop(0)
            world["after"][node] = queue
            self.world_file.write_text(json.dumps(world))

    def reports(self, *nodes: str) -> list[NodeReport]:
        world = self._world()
        return [report_of(n, Path(str(world["reads"][n]))) for n in nodes]


def remediator(state: Path, world_file: Path, slurm: SlurmClient, subscription: str, policy: Policy) -> Remediator:
    return Remediator(
        store=Store(state),
        scheduler=slurm,
        fleet=AzureFleet(AzureClients(subscription), RG, CLUSTER),
        checker=FixtureChecker(world_file),
        policy=policy,
    )


class CrashingStore(Store):
    """A store whose process is killed with SIGKILL instead of making its `die_at`-th save: the action that
    save would have recorded is done, the record of it is not. Injected, as a store, into the real engine."""

    def __init__(self, folder: Path, die_at: int):
        super().__init__(folder)
        self.die_at = die_at
        self.saves = 0

    def save(self, state: RemediationState) -> None:
        self.saves += 1
        if self.saves == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        super().save(state)
