"""The cluster in the plan: scheduler, login nodes and partitions as lines, with their change verdicts,
in text and in `-o json`."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from hpclz.azure.backends import open_backend
from hpclz.cli.views.changeset import print_changeset
from hpclz.config.loader import load_config
from hpclz.config.root import LandingZoneConfig
from hpclz.plan.changeset import Action, ChangeSet, ClusterLine, Policy, StateRef
from hpclz.plan.cluster import cluster_lines
from hpclz.plan.config_diff import config_changes, config_snapshot
from tests.conftest import REPO, CliResult
from tests.plan.support import applied_state, edited, preset

Run = Callable[..., CliResult]


def _changes(before: LandingZoneConfig | None, after: LandingZoneConfig, *, baseline: bool = True) -> ChangeSet:
    """The change set's config part as `hpclz plan` builds it: none without state, a diff with an applied config."""
    cs = ChangeSet(mode="offline", landing_zone="energy", environment="prod")
    if before is not None:
        cs.state = StateRef(lineage="l", serial=1)
        cs.config_baseline = baseline
        cs.config_changes = config_changes(config_snapshot(before), after) if baseline else []
    return cs


def _by_name(lines: list[ClusterLine]) -> dict[str, ClusterLine]:
    return {line.name: line for line in lines}


def _partition(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in data["compute"]["partitions"] if p["name"] == name)


def test_no_state_every_node_role_is_created_with_its_size_and_limits() -> None:
    config = preset("energy")
    lines = _by_name(cluster_lines(config, _changes(None, config)))
    assert list(lines) == ["scheduler", "login", *(p.name for p in config.compute.partitions)]
    assert all(line.action is Action.CREATE for line in lines.values())
    gpu = next(p for p in config.compute.partitions if p.name == "gpu")
    line = lines["gpu"]
    # A partition nodearray has MaxCount = max_nodes and no InitialCount: nodes start only when jobs ask.
    assert (line.vm_size, line.min_nodes, line.max_nodes, line.zone) == (gpu.vm_size, 0, gpu.max_nodes, gpu.zone)
    assert lines["login"].min_nodes == lines["login"].max_nodes == config.compute.login.count
    assert lines["scheduler"].max_nodes == 1
    assert line.racks is None  # not a rack-scale size


def test_unchanged_config_is_no_change_and_a_resize_carries_the_drain_verdict() -> None:
    before = preset("energy")
    assert {li.action for li in cluster_lines(before, _changes(before, before))} == {Action.NO_CHANGE}

    def resize(d: dict[str, Any]) -> None:
        _partition(d, "gpu")["vm_size"] = "Standard_ND96isr_H200_v5"

    after = edited(before, resize)
    lines = _by_name(cluster_lines(after, _changes(before, after)))
    gpu = lines["gpu"]
    assert gpu.action is Action.MODIFY
    assert gpu.verdict.policy is Policy.DRAIN_PARTITION
    assert [c.path for c in gpu.changes] == ["compute.partitions[gpu].vm_size"]
    assert lines["hbv4"].action is Action.NO_CHANGE
    assert lines["scheduler"].action is Action.NO_CHANGE


def test_added_and_removed_partitions_and_spot() -> None:
    before = preset("energy")

    def swap(d: dict[str, Any]) -> None:
        d["compute"]["partitions"] = [p for p in d["compute"]["partitions"] if p["name"] != "hbv3"]
        d["compute"]["partitions"].append(
            {"name": "viz", "vm_size": "Standard_NV36ads_A10_v5", "max_nodes": 2, "priority": "spot"}
        )

    after = edited(before, swap)
    lines = _by_name(cluster_lines(after, _changes(before, after)))
    assert lines["viz"].action is Action.CREATE and lines["viz"].spot
    assert lines["hbv3"].action is Action.DELETE
    assert lines["hbv3"].verdict.policy is Policy.DRAIN_PARTITION  # its jobs must finish first


def test_service_zone_moves_scheduler_and_login_only() -> None:
    before = preset("energy")

    def move(d: dict[str, Any]) -> None:
        d["compute"]["service_zone"] = "2" if d["compute"]["service_zone"] != "2" else "3"

    after = edited(before, move)
    lines = _by_name(cluster_lines(after, _changes(before, after)))
    assert lines["scheduler"].action is lines["login"].action is Action.MODIFY
    assert lines["scheduler"].verdict.policy is Policy.REPLACE  # a VM's zone is fixed at creation
    assert lines["gpu"].action is Action.NO_CHANGE


def test_login_count_zero_has_no_line_unless_it_just_went() -> None:
    before = preset("energy")

    def no_login(d: dict[str, Any]) -> None:
        d["compute"]["login"]["count"] = 0

    after = edited(before, no_login)
    assert "login" not in _by_name(cluster_lines(after, _changes(None, after)))
    assert _by_name(cluster_lines(after, _changes(before, after)))["login"].action is Action.DELETE
    assert _by_name(cluster_lines(before, _changes(after, before)))["login"].action is Action.CREATE


def test_state_without_applied_config_leaves_actions_unknown() -> None:
    config = preset("energy")
    lines = cluster_lines(config, _changes(config, config, baseline=False))
    assert lines and all(line.action is None for line in lines)
    cs = _changes(config, config, baseline=False)
    cs.cluster = lines
    out = io.StringIO()
    print_changeset(Console(file=out, width=200, no_color=True), cs)
    assert "? = unknown, the state holds no applied config" in out.getvalue()
    assert "  ? scheduler:" in out.getvalue()


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "energy.yaml"
    shutil.copy(REPO / "configs" / "energy.yaml", path)
    return path


def test_plan_text_and_json_carry_the_cluster(run_cli: Run, tmp_path: Path) -> None:
    path = _config(tmp_path)
    text = run_cli("plan", str(path), "--refresh=false")
    assert text.exit_code == 0, text.stderr
    assert "Cluster (CycleCloud creates these nodes from the cluster template):" in text.stdout
    assert "+ partition gpu: 4 x Standard_ND96isr_H100_v5 (0-4 nodes, zone 1)" in text.stdout
    body = json.loads(run_cli("plan", str(path), "--refresh=false", "-o", "json").stdout)["result"]
    gpu = next(line for line in body["cluster"] if line["name"] == "gpu")
    assert gpu["role"] == "partition" and gpu["action"] == "create" and gpu["racks"] is None
    assert gpu["max_nodes"] == 4 and gpu["min_nodes"] == 0


def test_plan_after_apply_shows_the_partition_edit_under_its_line(run_cli: Run, tmp_path: Path) -> None:
    path = _config(tmp_path)
    loaded = load_config(path)
    backend = open_backend(loaded.config, base_dir=path.parent)
    backend.read()
    backend.write(applied_state(loaded.config))
    text = path.read_text()
    assert "max_nodes: 64\n" in text
    path.write_text(text.replace("max_nodes: 64\n", "max_nodes: 32\n"))
    result = run_cli("plan", str(path), "--refresh=false")
    assert result.exit_code == 0, result.stderr
    assert "~ partition hbv3: 32 x Standard_HB120rs_v3 (0-32 nodes, zone 1)" in result.stdout
    assert "compute.partitions[hbv3].max_nodes: 64 -> 32" in result.stdout
    assert "= scheduler: Standard_D8as_v5" in result.stdout
