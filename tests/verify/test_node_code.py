"""How verify starts hpclz on a node (hpclz.verify.dispatch.NodeCode): the node script picks, on the node itself,
python3 with the node bundle, else verify's own interpreter only where the node has it, else says in one line that
it has neither; and the run-command path's command line on the scheduler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hpclz.config.loader import load_config
from hpclz.slurm.route import SCHEDULER_PYTHON
from hpclz.verify.bundle import build
from hpclz.verify.collective_job import CollectivePlan, analyse_pairs
from hpclz.verify.collective_job import job_script as collective_job_script
from hpclz.verify.dispatch import NO_AGENT, RESULT_PLACEHOLDER, node_code, node_script, read_node
from hpclz.verify.model import BandwidthPoint, CollectiveResult, Status
from hpclz.verify.remote import remote_script
from hpclz.verify.session import VerifyOptions, agent_code, node_bundle, remote_arguments
from tests.conftest import REPO, require
from tests.verify.helpers import GOOD

CONFIG = REPO / "configs" / "ai-training.yaml"
# The rendered scheduler's interpreter, as verify sees itself there: a venv on the scheduler's own disk only.
SCHEDULER_VENV = "/opt/hpclz/venvs/" + "0" * 64 + "/bin/python"


def _run(folder: Path, bundle: Path, fallback: str, node: str = "gpu001") -> None:
    code = node_code("hpclz.verify.agent", bundle=str(bundle), python=None, fallback=fallback)
    script = folder / "node.sh"
    script.write_text(node_script(["--json", RESULT_PLACEHOLDER, "--fixtures", str(GOOD)], folder, 60, code))
    env = {**os.environ, "SLURMD_NODENAME": node}
    subprocess.run(["/bin/bash", str(script)], env=env, check=True, timeout=120)


def test_a_node_with_the_bundle_runs_it_with_python3(tmp_path: Path) -> None:
    bundle = build(tmp_path / "hpclz-node.pyz")
    _run(tmp_path, bundle, SCHEDULER_VENV)
    report = read_node(tmp_path, "gpu001", 60)
    assert report.status is Status.PASS and report.sku == "Standard_ND96isr_H200_v5"


def test_without_the_bundle_verifys_interpreter_is_used_only_where_the_node_has_it(tmp_path: Path) -> None:
    _run(tmp_path, tmp_path / "absent.pyz", sys.executable)  # a node sharing this machine's disk
    assert read_node(tmp_path, "gpu001", 60).status is Status.PASS
    _run(tmp_path, tmp_path / "absent.pyz", SCHEDULER_VENV, node="gpu002")  # a node of the rendered cluster
    report = read_node(tmp_path, "gpu002", 60)
    [check] = report.checks
    assert check.check_id == NO_AGENT and check.status is Status.FAIL
    assert check.message == (
        f"hpclz's node code is not on gpu002, which has none of: python3 {tmp_path / 'absent.pyz'}; {SCHEDULER_VENV}"
    )
    assert not (tmp_path / "gpu002.rc").exists()  # nothing ran


def test_by_default_the_nodes_run_the_clusters_bundle_under_sched() -> None:
    config = load_config(CONFIG).config
    # cyclecloud-slurm's /sched/<cluster> (hpclz.render.health_gate), the cluster <metadata.name>-<environment>.
    assert node_bundle(config) == "/sched/aitrain-prod/hpclz/hpclz-node.pyz"
    starts = agent_code(config, None, None, "hpclz.verify.agent").starts
    assert starts[0].argv == ("python3", "/sched/aitrain-prod/hpclz/hpclz-node.pyz")
    assert starts[1].argv == (sys.executable, "-m", "hpclz.verify.agent")
    own = agent_code(config, "/opt/conda/bin/python", None, "hpclz.verify.agent")
    assert [s.argv for s in own.starts] == [("/opt/conda/bin/python", "-m", "hpclz.verify.agent")]


def test_a_collective_rank_starts_from_the_bundle_and_a_job_without_it_says_so(tmp_path: Path) -> None:
    config = load_config(CONFIG).config
    code = agent_code(config, None, None, "hpclz.verify.collective_job", "collective")
    plan = CollectivePlan(python=SCHEDULER_VENV, work_dir=tmp_path, code=code)
    script = collective_job_script(plan, "pair-a-b", tmp_path / "out.json")
    assert "  rank=(python3 /sched/aitrain-prod/hpclz/hpclz-node.pyz collective)\n" in script
    assert '"${rank[@]}" --name=pair-a-b' in script and 'MASTER_PORT="$("${rank[0]}" -c' in script
    # On a node with neither, the batch script prints the one line and exits before srun.
    plan = CollectivePlan(
        python=SCHEDULER_VENV,
        work_dir=tmp_path,
        code=node_code("m", bundle=str(tmp_path / "absent.pyz"), python=None, fallback=SCHEDULER_VENV),
    )
    (tmp_path / "job.sh").write_text(collective_job_script(plan, "pair-a-b", tmp_path / "out.json"))
    done = subprocess.run(["/bin/bash", str(tmp_path / "job.sh")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stdout.startswith("hpclz's node code is not on ")


def _no_result(a: str, b: str, message: str) -> CollectiveResult:
    return CollectiveResult(name=f"pair-{a}-{b}", nodes=[a, b], backend="nccl", ranks=16, message=message)


def _measured(*pairs: tuple[str, str, float]) -> list[CollectiveResult]:
    return [
        CollectiveResult(
            name=f"pair-{a}-{b}",
            nodes=[a, b],
            backend="nccl",
            ranks=16,
            points=[BandwidthPoint(size_bytes=1 << 30, time_us=1.0, algbw_gbps=bw, busbw_gbps=bw)],
        )
        for a, b, bw in pairs
    ]


def test_pairs_that_measured_nothing_blame_no_node() -> None:
    """A lone pair (a two-node partition) whose ranks never ran, for want of hpclz or torch on the nodes, is the
    set-up's fault: it fails, and drains neither node."""
    no_code = _no_result("a", "b", "no result: hpclz's node code is not on a, which has none of: python3 x")
    assert analyse_pairs([no_code], threshold=350.0) == {}
    assert no_code.status is Status.FAIL and no_code.message == (
        "no result: hpclz's node code is not on a, which has none of: python3 x"
    )
    no_torch = _no_result("a", "b", "no result: ModuleNotFoundError: No module named 'torch'")
    assert analyse_pairs([no_torch], threshold=350.0) == {}
    assert no_torch.status is Status.FAIL and "no pair produced a result: the set-up, not one node" in (
        no_torch.message or ""
    )
    # Beside pairs that measured: c's only measured pair is slow, but its other pair could not start, so nothing
    # shows c (rather than a) at fault; counted as slow, the unstarted pair would have convicted c.
    pairs = [_no_result("b", "c", no_code.message or ""), *_measured(("a", "b", 380.0), ("c", "a", 200.0))]
    assert analyse_pairs(pairs, threshold=350.0) == {}
    assert [p.status for p in pairs] == [Status.FAIL, Status.PASS, Status.FAIL]


def test_the_run_command_path_runs_the_schedulers_hpclz_and_lets_it_find_the_bundle() -> None:
    """On the rendered scheduler hpclz lives in /opt/hpclz/venv (install_wheel.sh.j2); the system python3 has none."""
    opts = VerifyOptions(config=CONFIG, drain=True)
    assert opts.remote_python == SCHEDULER_PYTHON == "/opt/hpclz/venv/bin/python"
    args = remote_arguments(opts)
    assert "--python" not in args and "--bundle" not in args  # the scheduler's verify picks its cluster's bundle
    script = remote_script(opts.remote_python, args, "/shared/.hpclz-verify/x")
    assert "/opt/hpclz/venv/bin/python -m hpclz verify" in script and "python3 -m hpclz" not in script
    mine = remote_arguments(VerifyOptions(config=CONFIG, python="/opt/conda/bin/python", bundle="/shared/n.pyz"))
    assert mine[mine.index("--python") + 1] == "/opt/conda/bin/python"
    assert mine[mine.index("--bundle") + 1] == "/shared/n.pyz"


def test_the_node_and_collective_scripts_pass_shellcheck(tmp_path: Path) -> None:
    require(shutil.which("shellcheck") is not None, "shellcheck")
    code = node_code("hpclz.verify.agent", bundle="/sched/a b/n.pyz", python=None, fallback=SCHEDULER_VENV)
    rank = node_code("m", bundle="/sched/a b/n.pyz", python=None, fallback=SCHEDULER_VENV, bundle_args=["collective"])
    texts = {
        "node": node_script(["--json", RESULT_PLACEHOLDER], tmp_path, 60, code),
        "pair": collective_job_script(CollectivePlan(python="x", work_dir=tmp_path, code=rank), "pair-a-b", tmp_path),
    }
    for name, text in texts.items():
        path = tmp_path / f"{name}.sh"
        path.write_text(text)
        done = subprocess.run(["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name}:\n{done.stdout}"
