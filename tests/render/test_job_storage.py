"""hpclz-job-storage, the root-run prolog that gives each job one user delegation SAS per blob container.

The SAS is signed here by hand (the node program is standard-library Python, which runs on every image without
hpclz's venv): its token must be byte-identical to azure-storage-blob's `generate_container_sas(...,
user_delegation_key=...)` for the same inputs. The program's own HTTP calls run for real against a loopback stand-in
of the node's metadata service and of the Blob service's Get User Delegation Key (learn.microsoft.com/rest/api/
storageservices/get-user-delegation-key: POST /?restype=service&comp=userdelegationkey, KeyInfo Start/Expiry in,
UserDelegationKey out), both reached through HPCLZ_IMDS_URL and HPCLZ_BLOB_URL as hpclz-locker-get's are.
"""

from __future__ import annotations

import base64
import datetime
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from azure.storage.blob import UserDelegationKey, generate_container_sas

from hpclz.render.job_storage import SCRIPT, TASK_PROLOG, VARIABLE
from tests.conftest import REPO, require
from tests.render.test_cloudinit import _scripts
from tests.render.test_health_gate import _cluster, _heredoc, _install, _installer
from tests.render.test_metadata_access import _jobs_use_the_identity
from tests.support.local_http import serve
from tests.support.user_delegation import KEY, DelegationStandIn

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "job_storage.py"
NOBODY = 65534  # a job's user: anyone but root


def _program() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hpclz_job_storage", TEMPLATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sdk_key() -> UserDelegationKey:
    key = UserDelegationKey()  # type: ignore[no-untyped-call]  # the SDK leaves its __init__ unannotated
    key.signed_oid = KEY["SignedOid"]
    key.signed_tid = KEY["SignedTid"]
    key.signed_start = KEY["SignedStart"]
    key.signed_expiry = KEY["SignedExpiry"]
    key.signed_service = KEY["SignedService"]
    key.signed_version = KEY["SignedVersion"]
    key.value = KEY["Value"]
    return key


@pytest.mark.parametrize("permissions", ["rl", "racwl", "racwdl"])
@pytest.mark.parametrize("protocol", ["https", "https,http"])
def test_the_sas_is_byte_identical_to_the_sdks(permissions: str, protocol: str) -> None:
    program = _program()
    start, expiry = "2026-11-27T20:00:00Z", "2026-11-28T20:05:00Z"
    ours = program.container_sas("staitrainprodeus2a1", "checkpoints", permissions, start, expiry, KEY, protocol)
    sdk = generate_container_sas(
        "staitrainprodeus2a1",
        "checkpoints",
        user_delegation_key=_sdk_key(),
        permission=permissions,
        start=start,
        expiry=expiry,
        protocol=protocol,
    )
    assert ours == sdk
    assert f"sv={program.VERSION}" in ours and "sr=c" in ours


def test_another_key_signs_another_token() -> None:
    """The signature depends on the key: the equality above is not one of two constants."""
    program = _program()
    other = {**KEY, "Value": base64.b64encode(bytes(32)).decode()}
    args = ("acct", "datasets", "rl", "2026-11-27T20:00:00Z", "2026-11-28T20:00:00Z")
    assert program.container_sas(*args, KEY, "https") != program.container_sas(*args, other, "https")


@pytest.fixture
def azure() -> Iterator[str]:
    DelegationStandIn.keys = []
    DelegationStandIn.refuse = False
    with serve(DelegationStandIn) as url:
        yield url


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "job-storage.json"
    config = {
        "identity": "resourceGroups/rg-m/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-compute",
        "account": "staitrainprodeus2a1",
        "containers": [{"name": "datasets", "permissions": "rl"}, {"name": "checkpoints", "permissions": "racwdl"}],
        "jobs": str(tmp_path / "run/hpclz/jobs"),
        "key_cache": str(tmp_path / "run/hpclz/key/user-delegation-key.json"),
    }
    path.write_text(json.dumps(config))
    return path


def _run(phase: str, config: Path, url: str, job: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        "PATH": os.environ["PATH"],
        "HPCLZ_IMDS_URL": url,
        "HPCLZ_BLOB_URL": url + "/{account}",
        "SLURM_JOB_ID": job,
        "SLURM_JOB_UID": str(NOBODY),
        "SLURM_JOB_GID": str(NOBODY),
        **env,
    }
    return subprocess.run(
        [sys.executable, str(TEMPLATE), phase, str(config)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_prolog_gives_the_job_its_user_s_own_tokens_and_the_epilog_takes_them(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    config = _config(tmp_path)
    done = _run("prolog", config, azure, "41")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    folder = tmp_path / "run/hpclz/jobs/41"
    assert sorted(p.name for p in folder.iterdir()) == [
        "checkpoints.sas",
        "checkpoints.url",
        "datasets.sas",
        "datasets.url",
    ]
    for path in (folder, *folder.iterdir()):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (NOBODY, NOBODY), path
        assert stat.S_IMODE(info.st_mode) == (0o700 if path == folder else 0o600), path
    assert (folder / "checkpoints.url").read_text() == f"{azure}/staitrainprodeus2a1/checkpoints\n"
    sas = dict(part.split("=", 1) for part in (folder / "checkpoints.sas").read_text().strip().split("&"))
    assert sas["sp"] == "racwdl" and sas["sr"] == "c" and sas["spr"] == "https%2Chttp"
    assert dict(part.split("=", 1) for part in (folder / "datasets.sas").read_text().strip().split("&"))["sp"] == "rl"
    # A day at most, and never past the key's own expiry.
    start = datetime.datetime.strptime(sas["st"].replace("%3A", ":"), "%Y-%m-%dT%H:%M:%SZ")
    expiry = datetime.datetime.strptime(sas["se"].replace("%3A", ":"), "%Y-%m-%dT%H:%M:%SZ")
    assert expiry - start == datetime.timedelta(hours=24, minutes=5)
    # The key is root's alone, in a folder of its own beside the jobs' folder, which every job's user must traverse.
    cache = tmp_path / "run/hpclz/key/user-delegation-key.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600 and cache.stat().st_uid == 0
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    for traversed in (tmp_path / "run/hpclz", tmp_path / "run/hpclz/jobs"):
        assert stat.S_IMODE(traversed.stat().st_mode) == 0o755, traversed
    assert _run("epilog", config, azure, "41").returncode == 0
    assert not folder.exists()


def test_a_busy_node_reuses_its_key_while_it_outlives_the_sas(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    config = _config(tmp_path)
    for job in ("1", "2", "3"):
        assert _run("prolog", config, azure, job).returncode == 0
    assert len(DelegationStandIn.keys) == 1
    # A cached key that ends before a new SAS would: a new key is asked for.
    cache = tmp_path / "run/hpclz/key/user-delegation-key.json"
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=2)
    cache.write_text(
        json.dumps({**KEY, "SignedStart": "2026-01-01T00:00:00Z", "SignedExpiry": f"{soon:%Y-%m-%dT%H:%M:%SZ}"})
    )
    assert _run("prolog", config, azure, "4").returncode == 0
    assert len(DelegationStandIn.keys) == 2
    assert json.loads(cache.read_text())["SignedExpiry"] == DelegationStandIn.keys[1]["SignedExpiry"]


def test_a_failed_mint_leaves_no_token_and_never_fails_the_prolog(tmp_path: Path, azure: str) -> None:
    config = _config(tmp_path)
    DelegationStandIn.refuse = True
    done = _run("prolog", config, azure, "7")
    assert done.returncode == 0
    assert re.search(r"hpclz-job-storage: job 7: prolog: no storage credential: HTTPError", done.stderr), done.stderr
    assert not (tmp_path / "run/hpclz/jobs/7").exists()
    # Nor does a config it cannot read, or a prolog run without a job.
    assert _run("prolog", tmp_path / "missing.json", azure, "8").returncode == 0
    assert _run("prolog", config, azure, "").returncode == 0


def test_the_epilog_of_a_job_without_tokens_does_nothing(tmp_path: Path, azure: str) -> None:
    done = _run("epilog", _config(tmp_path), azure, "9")
    assert (done.returncode, done.stderr) == (0, "")


# What the cluster renders: only where the compute identity holds blob data roles.
STEMS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def _nodes(stem: str) -> list[str]:
    return [s for s in _scripts(_cluster(stem)[0]) if "hpclz node setup for Slurm partition" in s]


@pytest.mark.parametrize("stem", STEMS)
def test_only_zones_whose_jobs_get_containers_render_the_credential(stem: str) -> None:
    wanted = _jobs_use_the_identity(stem)
    _, parameters = _cluster(stem)
    assert ("TaskProlog=" in parameters["HpclzSlurmConfig"]) == wanted
    assert {f"cat > {TASK_PROLOG} <<" in node for node in _nodes(stem)} == {wanted}
    assert (SCRIPT in _installer(stem)) == wanted


def test_the_presets_cover_zones_with_and_without_containers() -> None:
    assert {_jobs_use_the_identity(stem) for stem in STEMS} == {True, False}


def test_the_installer_puts_the_program_its_settings_and_the_prolog_and_epilog_under_sched(tmp_path: Path) -> None:
    (tmp_path / "sched/prolog.d").mkdir(parents=True)
    sched, done = _install(tmp_path, "ai-training")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (sched / "hpclz/job_storage.py").read_text() == TEMPLATE.read_text()
    assert json.loads((sched / "hpclz/job-storage.json").read_text()) == {
        "account": "staitrainprodeus2a1",
        # datasets: read and list only (Storage Blob Data Reader's share); checkpoints keeps versions, so delete too.
        "containers": [{"name": "checkpoints", "permissions": "racwdl"}, {"name": "datasets", "permissions": "rl"}],
        "identity": "resourceGroups/rg-aitrain-management-prod-eus2/providers/Microsoft.ManagedIdentity/"
        "userAssignedIdentities/id-aitrain-compute-prod-eus2",
        "jobs": "/run/hpclz/jobs",
        "key_cache": "/run/hpclz/key/user-delegation-key.json",
    }
    for phase in ("prolog", "epilog"):
        script = sched / f"{phase}.d" / SCRIPT
        assert os.access(script, os.X_OK), script
        assert f'"{sched}/hpclz/job_storage.py" {phase} "{sched}/hpclz/job-storage.json" || true' in script.read_text()
    assert not list(sched.rglob("*.new"))


def _task_prolog(stem: str) -> str:
    return _heredoc(_nodes(stem)[0], TASK_PROLOG)


def test_the_task_prolog_names_the_job_s_folder_only_where_the_prolog_left_one(tmp_path: Path) -> None:
    script = tmp_path / "task-prolog"
    script.write_text(_task_prolog("energy"))
    (tmp_path / "jobs/12").mkdir(parents=True)

    def run(job: str) -> str:
        env = {"PATH": os.environ["PATH"], "HPCLZ_JOBS": str(tmp_path / "jobs"), "SLURM_JOB_ID": job}
        done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30, check=True)
        return done.stdout

    assert run("12") == f"export {VARIABLE}={tmp_path / 'jobs/12'}\n"
    assert run("13") == ""
