"""A running ARM stand-in and a config folder per test; hpclz reaches the stand-in through its environment."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hpclz.cli import main
from tests.conftest import REPO, CliResult, RunCli
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.snapshot import carry, fingerprint

HPCLZ = [str(Path(sys.executable).parent / "hpclz")]


@pytest.fixture
def arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ArmStandIn]:
    with ArmStandIn(tmp_path / "standin").in_environment(monkeypatch) as standin:
        yield standin


@pytest.fixture
def zone(tmp_path: Path) -> Path:
    """The largest preset, in a folder of its own (the local state lands beside it)."""
    folder = tmp_path / "zone"
    folder.mkdir()
    target = folder / "lz.yaml"
    shutil.copy(REPO / "configs" / "ai-training.yaml", target)
    return target


@pytest.fixture
def energy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The energy preset, in a folder of its own."""
    # The preset keeps the Slurm accounting password in Key Vault, read from the environment at deploy time.
    monkeypatch.setenv("SLURMDB_PASSWORD", "slurmdb-Test-4b1d9e")
    folder = tmp_path / "zone"
    folder.mkdir()
    target = folder / "lz.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", target)
    return target


@pytest.fixture
def manufacturing(tmp_path: Path) -> Path:
    """The NetApp preset (shared home on NetApp volumes), in a folder of its own."""
    folder = tmp_path / "cae"
    folder.mkdir()
    target = folder / "lz.yaml"
    shutil.copy(REPO / "configs" / "manufacturing.yaml", target)
    return target


# What a deploy reads besides its config: hpclz's and the Azure SDK's settings, and the secrets the presets read from
# the environment. The stand-in's own (its endpoint, certificate, token) differ per stand-in and are not compared.
_DEPLOY_ENV_PREFIXES = ("HPCLZ_", "AZURE_", "SLURMDB_")


class DeployedWorlds:
    """Zones deployed once per worker: `into(arm, config)` leaves `arm` and the folder of `config` as
    `hpclz deploy CONFIG --yes` would have on a fresh stand-in, from a copy of the one deploy this worker made of
    the same config text under the same settings (tests/support/arm_standin/snapshot.py copies the stand-in's
    world; the state folder beside the config is copied). Nothing is shared: each test gets its own copies."""

    def __init__(self, root: Path):
        self.root = root
        self.made: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[ArmStandIn, Any, Path]] = {}

    def into(self, arm: ArmStandIn, config: Path) -> None:
        own = set(arm.env())
        settings = tuple(
            sorted((k, v) for k, v in os.environ.items() if k.startswith(_DEPLOY_ENV_PREFIXES) and k not in own)
        )
        key = (config.parent.name + "/" + config.name, config.read_text(), settings)
        if key not in self.made:
            self.made[key] = self._deploy(config, len(self.made))
        standin, pristine, folder = self.made[key]
        carry(standin, arm, pristine)
        shutil.copytree(folder, config.parent, dirs_exist_ok=True)

    def _deploy(self, config: Path, number: int) -> tuple[ArmStandIn, Any, Path]:
        folder = self.root / str(number) / config.parent.name
        folder.mkdir(parents=True)
        shutil.copy(config, folder / config.name)
        standin = ArmStandIn(self.root / str(number) / "standin")
        pristine = fingerprint(standin)
        out, err = io.StringIO(), io.StringIO()
        with (
            pytest.MonkeyPatch.context() as patch,
            standin.in_environment(patch),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            code = main(["deploy", str(folder / config.name), "--yes"])
        assert code == 0, f"the deploy to copy from failed ({code}): {out.getvalue()}{err.getvalue()}"
        return standin, pristine, folder


@pytest.fixture(scope="session")
def deployed_worlds(tmp_path_factory: pytest.TempPathFactory) -> DeployedWorlds:
    return DeployedWorlds(tmp_path_factory.mktemp("deployed"))


@pytest.fixture
def predeployed(arm: ArmStandIn, deployed_worlds: DeployedWorlds) -> Callable[[Path], None]:
    """`predeployed(config)`: the zone as `hpclz deploy CONFIG --yes` leaves it in `arm` and beside CONFIG, made once per
    worker and copied into this test (DeployedWorlds)."""
    return lambda config: deployed_worlds.into(arm, config)


def run_hpclz(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HPCLZ, *args], env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )


def state_of(config: Path) -> dict[str, Any]:
    import json

    files = list((config.parent / ".hpclz").rglob("state.json"))
    assert files, "no state file written"
    state: dict[str, Any] = json.loads(files[0].read_text())
    return state


def left_after_destroy(arm: ArmStandIn) -> list[str]:
    """What destroy left in the stand-in, less the Defender plans that it leaves on by design (docs/defender.md)
    and the Network Watcher Azure made with the VNet (not hpclz's: destroy deletes only the flow log under it)."""
    return [
        k
        for k, r in arm.world.resources.items()
        if r["type"] not in ("Microsoft.Security/pricings", "Microsoft.Network/networkWatchers")
    ]


def azure_made(arm: ArmStandIn) -> set[str]:
    """IDs (lower case) of what Azure itself created in the stand-in: the region's Network Watcher and its group,
    enabled with the first VNet (tests/support/arm_standin/behaviours.py network_watcher_for)."""
    watchers = {k for k, r in arm.world.resources.items() if r["type"] == "Microsoft.Network/networkWatchers"}
    group = arm.world.group("NetworkWatcherRG")
    return watchers | ({group["id"].lower()} if group else set())


def our_groups(arm: ArmStandIn) -> dict[str, dict[str, Any]]:
    """The stand-in's resource groups less NetworkWatcherRG, which Azure made with the first VNet."""
    made = azure_made(arm)
    return {k: g for k, g in arm.world.groups.items() if g["id"].lower() not in made}


def destroy_everything(run_cli: RunCli, arm: ArmStandIn, zone: Path) -> CliResult:
    """destroy --include-data as it goes with backup: on: the first run stops protecting the CycleCloud server but
    Azure keeps its backups soft-deleted and refuses the vault; once their retention has run out (the stand-in
    forgets them) the second run deletes the vault and its group. Returns the second run's result."""
    first = run_cli("destroy", str(zone), "--yes", "--include-data")
    if not arm.world.soft_deleted_backups:
        return first
    assert first.exit_code == 5 and "ServiceResourceNotEmptyWithContainerDetails" in first.stdout, first.stdout
    arm.world.soft_deleted_backups.clear()  # backup.soft_delete_days later
    return run_cli("destroy", str(zone), "--yes", "--include-data")
