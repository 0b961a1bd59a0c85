"""The job credential under a real slurmd: the rendered prolog and epilog run as Slurm 22.05 runs them.

The prolog and epilog are the files hpclz-gate-install writes under /sched (40-hpclz-job-storage.sh); slurm.conf names
them as cyclecloud-slurm does (Prolog, Epilog, PrologFlags=Alloc from cyclecloud-slurm 4.0.9's slurm.conf.template
l.36-42 @50e6739), and nothing else of hpclz's: the job finds its folder at the fixed path <jobs>/$SLURM_JOB_ID. The endpoints are the loopback stand-in (tests/support/user_delegation.py): slurmd gives a
Prolog an environment of its own ("these programs do not have a search path set", slurm.schedmd.com/
prolog_epilog.html), so a wrapper exports HPCLZ_IMDS_URL and HPCLZ_BLOB_URL before it runs the rendered script. The
job runs as another user (sbatch --uid, root only), as every job of a real cluster does. Where a test adds secrets
to the installed settings, the prolog reads them from the stand-in's vault (<stand-in>/vault, its vault_url).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpclz.render.job_storage import SCRIPT
from tests.conftest import require
from tests.render.test_health_gate import _install
from tests.support.local_http import serve
from tests.support.slurm import LocalSlurm, slurm_available, start_cluster, stop_cluster
from tests.support.slurm_power import wait_until
from tests.support.user_delegation import DelegationStandIn

NODES = ["s1"]
NOBODY = 65534
pytestmark = pytest.mark.slurm


@dataclass
class JobStorageHooks:
    """start_cluster's hooks: the rendered scripts, pointed at the stand-in and at folders under the cluster root."""

    sched: Path
    url: str

    def install(self, root: Path) -> None:
        settings_path = self.sched / "hpclz/job-storage.json"
        settings = json.loads(settings_path.read_text())
        # The rendered layout (/run/hpclz/jobs beside root's /run/hpclz/key) under the cluster's root.
        settings.update(
            jobs=str(root / "run/hpclz/jobs"), key_cache=str(root / "run/hpclz/key/user-delegation-key.json")
        )
        settings_path.write_text(json.dumps(settings))
        endpoints = f"export HPCLZ_IMDS_URL={self.url} HPCLZ_BLOB_URL={self.url}/{{account}}\n"
        for phase in ("prolog", "epilog"):
            wrapper = root / f"{phase}.sh"
            wrapper.write_text(f"#!/bin/bash\n{endpoints}exec {self.sched / f'{phase}.d' / SCRIPT}\n")
            wrapper.chmod(0o755)
        (root / "out").mkdir()
        (root / "out").chmod(0o1777)

    def lines(self, root: Path) -> list[str]:
        return [
            f"Prolog={root / 'prolog.sh'}",
            f"Epilog={root / 'epilog.sh'}",
            "PrologFlags=Alloc",
            f"PartitionName=debug Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP",
        ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalSlurm, type[DelegationStandIn]]]:
    require(slurm_available(), "Slurm (slurmctld, slurmd, munged, sinfo)")
    require(shutil.which("sbatch") is not None, "sbatch")
    tmp = tmp_path_factory.mktemp("job-storage")
    (tmp / "sched/prolog.d").mkdir(parents=True)
    sched, done = _install(tmp, "ai-training")
    assert done.returncode == 0, done.stdout + done.stderr
    DelegationStandIn.keys = []
    DelegationStandIn.refuse = False
    with serve(DelegationStandIn) as url:
        slurm = start_cluster(NODES, power=JobStorageHooks(sched, url))
        try:
            yield slurm, DelegationStandIn
        finally:
            stop_cluster(slurm)


# What the job sees at <jobs>/$SLURM_JOB_ID (JOBS, the cluster root's stand-in for /run/hpclz/jobs): whether its
# folder is there, and each file's owner, mode and first line.
JOB = """#!/bin/bash
dir=JOBS/$SLURM_JOB_ID
if [ -d "$dir" ]; then
  echo "folder=$dir"
  stat -c 'folder %u %a' "$dir"
  for f in "$dir"/*; do stat -c "file %n %u %a" "$f"; done
  echo "url=$(cat "$dir/checkpoints.url")"
else
  echo "folder=none"
fi
"""


def _run_job(slurm: LocalSlurm, name: str, text: str = JOB) -> tuple[str, str]:
    out = slurm.root / "out"
    script = out / f"{name}.sh"
    script.write_text(text.replace("JOBS", str(slurm.root / "run/hpclz/jobs")))
    script.chmod(0o755)
    job = slurm.client(
        "sbatch",
        "--parsable",
        f"--uid={NOBODY}",
        f"--gid={NOBODY}",
        f"--chdir={out}",
        f"--output={out}/{name}.out",
        str(script),
    ).strip()
    output = out / f"{name}.out"
    wait_until(lambda: not slurm.client("squeue", "-h", "-j", job, "-o", "%T").strip(), f"job {job} done", timeout=60)
    wait_until(lambda: output.exists() and "folder=" in output.read_text(), f"job {job}'s output", timeout=60)
    return job, output.read_text()


def test_a_job_gets_its_own_tokens_and_the_epilog_takes_them(
    cluster: tuple[LocalSlurm, type[DelegationStandIn]],
) -> None:
    slurm, standin = cluster
    standin.refuse = False
    job, output = _run_job(slurm, "minted")
    folder = slurm.root / "run/hpclz/jobs" / job
    assert f"folder={folder}\n" in output, output
    assert f"folder {NOBODY} 700\n" in output, output
    files = sorted(line.split()[1:] for line in output.splitlines() if line.startswith("file "))
    assert files == [
        [str(folder / name), str(NOBODY), "600"]
        for name in ("checkpoints.sas", "checkpoints.url", "datasets.sas", "datasets.url")
    ], output
    assert f"url={standin_url(slurm)}/staitrainprodeus2a1/checkpoints\n" in output
    # The epilog has run once the job has left the queue: nothing of the job's tokens is left on the node.
    wait_until(lambda: not folder.exists(), "the epilog", timeout=60)
    # And the root-only record renew reads: slurmd 22.05 hands no SLURM_JOB_END_TIME (first in 23.02, SchedMD/slurm
    # commit 23c4516b7e), so the prolog recorded the 24-hour nominal end; the epilog took the record with the tokens.
    assert not (slurm.root / "run/hpclz/key/jobs" / f"{job}.json").exists()
    assert (slurm.root / "run/hpclz/key/jobs").is_dir()
    assert slurm.node_states() == {"s1": "idle"}


def test_a_failed_mint_leaves_the_job_running_without_tokens(
    cluster: tuple[LocalSlurm, type[DelegationStandIn]],
) -> None:
    slurm, standin = cluster
    standin.refuse = True
    (slurm.root / "run/hpclz/key/user-delegation-key.json").unlink(missing_ok=True)
    keys_before = len(standin.keys)
    try:
        job, output = _run_job(slurm, "refused")
    finally:
        standin.refuse = False
    # The job ran (its output is there), without a folder, and no key was handed out.
    assert "folder=none\n" in output, output
    assert not (slurm.root / "run/hpclz/jobs" / job).exists()
    assert keys_before == len(standin.keys)
    # The prolog succeeded: a failed Prolog drains the node (slurm.conf(5), Prolog); it is idle.
    assert slurm.node_states() == {"s1": "idle"}


def standin_url(slurm: LocalSlurm) -> str:
    return (slurm.root / "prolog.sh").read_text().split("HPCLZ_IMDS_URL=", 1)[1].split()[0]


# What a job sees of its secrets: the folder's owner and mode, each file's, and the licence's value.
SECRETS_JOB = """#!/bin/bash
dir=JOBS/$SLURM_JOB_ID/secrets
echo "folder=ran"
if [ -d "$dir" ]; then
  stat -c 'secrets %u %a' "$dir"
  for f in "$dir"/*; do stat -c "secret %n %u %a" "$f"; done
  echo "licence=$(cat "$dir/pricing-library-licence")"
else
  echo "secrets=none"
fi
"""
LICENCE = "PRICING-LICENCE-5e1c9d"


def test_a_job_reads_its_secret_as_its_user_and_without_the_grant_still_runs(
    cluster: tuple[LocalSlurm, type[DelegationStandIn]],
) -> None:
    slurm, standin = cluster
    # The installed settings, which the prolog reads at each job: <sched>/hpclz/job-storage.json beside prolog.d.
    prolog = Path((slurm.root / "prolog.sh").read_text().split("exec ", 1)[1].strip())
    settings_path = prolog.parents[1] / "hpclz/job-storage.json"
    before = settings_path.read_text()
    settings = json.loads(before) | {"vault_url": standin_url(slurm) + "/vault", "secrets": ["pricing-library-licence"]}
    settings_path.write_text(json.dumps(settings))
    standin.secrets, standin.forbidden = {"pricing-library-licence": LICENCE}, set()
    try:
        job, output = _run_job(slurm, "secrets", SECRETS_JOB)
        folder = slurm.root / "run/hpclz/jobs" / job / "secrets"
        assert f"secrets {NOBODY} 700\n" in output, output
        assert f"secret {folder / 'pricing-library-licence'} {NOBODY} 600\n" in output, output
        assert f"licence={LICENCE}\n" in output, output
        wait_until(lambda: not folder.exists(), "the epilog", timeout=60)
        # The grant removed: Key Vault's 403. The job runs without the file, the node stays idle.
        standin.forbidden = {"pricing-library-licence"}
        job, output = _run_job(slurm, "no-secret", SECRETS_JOB)
        assert "secrets=none\n" in output, output
        assert slurm.node_states() == {"s1": "idle"}
    finally:
        settings_path.write_text(before)
        standin.secrets, standin.forbidden = {}, set()
