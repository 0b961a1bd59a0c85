"""`hpclz verify` through a real Slurm on localhost, set up as the rendered cluster is: the "scheduler" runs verify
from an interpreter the nodes do not have (hpclz's venv lives on the scheduler's own disk), and the nodes have only
python3 with the standard library and the single-file bundle the scheduler installs under /sched. The nodes are
judged from the bundle; a node without it answers in one line and is not drained.

How the localhost nodes are made to lack what the rendered ones lack: verify's own interpreter (sys.executable) is
set to the scheduler's venv path, which does not exist here, and the jobs' python3 (first on the PATH sbatch exports)
is this interpreter started with -I -S: isolated, without site-packages, so neither hpclz nor torch can be imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hpclz.verify.bundle import build
from tests.conftest import REPO, CliResult
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm
from tests.verify import test_dispatch_slurm as dispatch
from tests.verify.test_dispatch_slurm import GOOD, XID79, plant

pytestmark = pytest.mark.slurm
slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm
cluster_env = dispatch.cluster_env

CONFIG = REPO / "configs" / "ai-training.yaml"
REAL_PYTHON = sys.executable
SCHEDULER_VENV = "/opt/hpclz/venvs/" + "0" * 64 + "/bin/python"  # as hpclz-install-wheel names it on the scheduler


@pytest.fixture
def rendered_nodes(cluster_env: LocalSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> LocalSlurm:
    bare = tmp_path / "node-bin"
    bare.mkdir()
    (bare / "python3").write_text(f'#!/bin/sh\nexec {REAL_PYTHON} -I -S "$@"\n')
    (bare / "python3").chmod(0o755)
    lacks = subprocess.run([bare / "python3", "-c", "import hpclz"], capture_output=True, check=False, timeout=60)
    assert lacks.returncode == 1, "the nodes' python3 must not have hpclz"
    monkeypatch.setenv("PATH", f"{bare}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "executable", SCHEDULER_VENV)
    assert not Path(SCHEDULER_VENV).exists()
    return cluster_env


def _verify(run_cli: Callable[..., CliResult], *args: str) -> dict[str, Any]:
    conf = os.environ["SLURM_CONF"]
    result = run_cli("verify", str(CONFIG), "-p", "gpu", "--slurm-conf", conf, "--drain", "-o", "json", *args)
    return dict(json.loads(result.stdout))


def _states(cluster: LocalSlurm) -> dict[str, str]:
    """Each node's state, an idle node that backfill still marks PLANNED read as idle: "The node is planned by the
    backfill scheduler for a higher priority job" (sinfo(1), Slurm 22.05, NODE STATE CODES). The flag outlives the
    verify jobs it was set for until backfill's next pass, so a loaded machine showed node4 'planned' right after
    verify returned (a whole-suite run of 2af5524f); it is no drain, which is what these tests judge."""
    lines = cluster.client("sinfo", "-h", "-N", "-o", "%N|%T").splitlines()
    return {node: "idle" if state == "planned" else state for node, state in (ln.split("|", 1) for ln in lines)}


@pytest.mark.timeout(240)
def test_nodes_without_the_schedulers_venv_are_judged_from_the_bundle_and_only_the_faulty_one_drained(
    rendered_nodes: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    (tmp_path / "sched").mkdir()
    bundle = build(tmp_path / "sched" / "hpclz-node.pyz")  # as hpclz-gate-install writes it under /sched
    plant(tmp_path / "readings", {"node1": GOOD, "node2": XID79, "node3": GOOD, "node4": GOOD})
    work = tmp_path / "w"
    out = _verify(run_cli, "--bundle", str(bundle), "--nccl", "--work-dir", str(work))

    assert out["exit_code"] == 6
    result = out["result"]
    checks = {n["node"]: {c["check_id"] for c in n["checks"] if c["status"] == "fail"} for n in result["nodes"]}
    assert checks == {"node1": set(), "node2": {"HPCLZ-VFY-006"}, "node3": set(), "node4": set()}  # no VFY-900
    assert result["drained"] == ["node2"]
    assert _states(rendered_nodes) == {"node1": "idle", "node2": "drained", "node3": "idle", "node4": "idle"}
    assert f"  start=(python3 {bundle})\n" in (work / "health-run-gpu" / "node.sh").read_text()
    # The ring pairs started from the bundle too; the nodes' python3 has no torch, so they measured nothing, which
    # fails them and convicts no node.
    runs = {c["name"]: c for c in result["collectives"]}
    assert sorted(runs) == ["all-nodes", "pair-node1-node3", "pair-node3-node4", "pair-node4-node1"]
    said = {name: c["message"] for name, c in runs.items()}
    assert all(c["status"] == "fail" for c in runs.values()), said
    # Each run that started ended on the rank's own import error; on a loaded machine an exclusive pair may still be
    # pending when its time is up (hpclz.verify.collective_job: "cancelled while PENDING after its time budget"),
    # which measures nothing either. At least one rank must have started from the bundle.
    torch = [n for n, m in said.items() if "No module named 'torch'" in m]
    assert torch and all(n in torch or "cancelled while PENDING" in m for n, m in said.items()), said
    assert f"  rank=(python3 {bundle} collective)\n" in (work / "collectives" / "all-nodes.sh").read_text()


@pytest.mark.timeout(240)
def test_nodes_without_the_bundle_say_so_in_one_line_and_none_is_drained(
    rendered_nodes: LocalSlurm, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """The gate not installed yet: nothing ran on the nodes, so nothing is known of their devices."""
    plant(tmp_path / "readings", {"node1": GOOD, "node2": XID79, "node3": GOOD, "node4": GOOD})
    bundle = tmp_path / "sched" / "hpclz-node.pyz"
    out = _verify(run_cli, "--bundle", str(bundle), "--work-dir", str(tmp_path / "w"))

    assert out["exit_code"] == 6  # the run failed: no node was measured
    result = out["result"]
    assert result["drained"] == [] and set(_states(rendered_nodes).values()) == {"idle"}
    for node in result["nodes"]:
        [check] = node["checks"]
        assert check["check_id"] == "HPCLZ-VFY-904" and check["status"] == "fail"
        assert check["message"] == (
            f"hpclz's node code is not on {node['node']}, which has none of: python3 {bundle}; {SCHEDULER_VENV}"
        )
    assert sorted(f["rule_id"] for f in out["findings"]) == ["HPCLZ-VFY-904"] * 4
