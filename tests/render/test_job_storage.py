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
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from azure.core.credentials import AzureSasCredential
from azure.core.exceptions import HttpResponseError
from azure.storage.blob import BlobServiceClient, ContainerClient, UserDelegationKey, generate_container_sas

from hpclz.render.health_gate import HEALTH_PROGRAM
from hpclz.render.job_storage import ENROOT_MOUNTS, JOBS, RENEW, RENEW_UNIT, SCRIPT
from tests.conftest import REPO, require
from tests.render.conftest import preset_plan, variant
from tests.render.test_cloudinit import _node_scripts as _nodes_of
from tests.render.test_cloudinit import _scripts
from tests.render.test_health_gate import _cluster, _heredoc, _install, _installer
from tests.render.test_metadata_access import _jobs_use_the_identity
from tests.render.test_nccl import enroot_mounts
from tests.support.azurite import ACCOUNT as AZURITE_ACCOUNT
from tests.support.azurite import ACCOUNT_KEY, Azurite, azurite  # noqa: F401  (a fixture, used by name)
from tests.support.hpclz_wheel import build_wheel
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
    # Without SLURM_JOB_END_TIME (Slurm before 23.02): a day, and never past the key's own expiry.
    start = datetime.datetime.strptime(sas["st"].replace("%3A", ":"), "%Y-%m-%dT%H:%M:%SZ")
    expiry = datetime.datetime.strptime(sas["se"].replace("%3A", ":"), "%Y-%m-%dT%H:%M:%SZ")
    assert expiry - start == datetime.timedelta(hours=24, minutes=5)
    # The key is root's alone, in a folder of its own beside the jobs' folder, which every job's user must traverse.
    cache = tmp_path / "run/hpclz/key/user-delegation-key.json"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600 and cache.stat().st_uid == 0
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    for traversed in (tmp_path / "run/hpclz", tmp_path / "run/hpclz/jobs"):
        assert stat.S_IMODE(traversed.stat().st_mode) == 0o755, traversed
    # What renew needs, root's alone beside the key; the epilog takes it with the tokens.
    record = tmp_path / "run/hpclz/key/jobs/41.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600 and record.stat().st_uid == 0
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700 and record.parent.stat().st_uid == 0
    assert json.loads(record.read_text()) == {
        "uid": NOBODY,
        "gid": NOBODY,
        "end": f"{expiry:%Y-%m-%dT%H:%M:%SZ}",
        "expiry": f"{expiry:%Y-%m-%dT%H:%M:%SZ}",
    }
    assert _run("epilog", config, azure, "41").returncode == 0
    assert not folder.exists() and not record.exists()


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


# Each prolog waits for GO before it runs the program, so that all of them make /run/hpclz's folders at once.
RACER = """import os, runpy, sys, time
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_prologs_starting_together_on_a_fresh_node_each_give_their_job_its_tokens(tmp_path: Path, azure: str) -> None:
    """slurmd starts the prologs of jobs that start together at once, each its own process; on a fresh node none of
    /run/hpclz's folders exists yet and each prolog makes them."""
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    config = _config(tmp_path)
    sync = tmp_path / "sync"
    sync.mkdir()
    racer = tmp_path / "racer.py"
    racer.write_text(RACER)
    jobs = [str(n) for n in range(61, 69)]
    environment = {
        "PATH": os.environ["PATH"],
        "HPCLZ_IMDS_URL": azure,
        "HPCLZ_BLOB_URL": azure + "/{account}",
        "SLURM_JOB_UID": str(NOBODY),
        "SLURM_JOB_GID": str(NOBODY),
    }
    processes = [
        subprocess.Popen(
            [sys.executable, str(racer), str(sync / job), str(sync / "go"), str(TEMPLATE), "prolog", str(config)],
            env={**environment, "SLURM_JOB_ID": job},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for job in jobs
    ]
    try:
        while not all((sync / job).exists() for job in jobs):
            assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
            time.sleep(0.01)
        (sync / "go").touch()
        outputs = [p.communicate(timeout=120) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in processes] == [0] * len(jobs)
    assert [err for _, err in outputs] == [""] * len(jobs)
    for job in jobs:
        folder = tmp_path / "run/hpclz/jobs" / job
        assert sorted(f.name for f in folder.iterdir()) == [
            "checkpoints.sas",
            "checkpoints.url",
            "datasets.sas",
            "datasets.url",
        ], job
        assert (folder / "checkpoints.url").read_text() == f"{azure}/staitrainprodeus2a1/checkpoints\n"
        assert (tmp_path / "run/hpclz/key/jobs" / f"{job}.json").exists(), job
    for traversed, mode in (("run/hpclz", 0o755), ("run/hpclz/jobs", 0o755), ("run/hpclz/key", 0o700)):
        assert stat.S_IMODE((tmp_path / traversed).stat().st_mode) == mode, traversed


def test_a_folder_another_prolog_makes_meanwhile_is_taken_as_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving the test above may or may not hit, made certain: another prolog makes the folder just before
    this one's mkdir (the standard library's os.mkdir, made to lose that race; nothing of the program is replaced)."""
    program = _program()
    real_mkdir = os.mkdir

    def lose_the_race(path: str, mode: int = 0o777) -> None:
        real_mkdir(path, 0o700)  # the other prolog, under its own umask
        real_mkdir(path, mode)

    monkeypatch.setattr(os, "mkdir", lose_the_race)
    program.folder_(str(tmp_path / "run/hpclz/jobs"), 0o755)
    monkeypatch.undo()
    for made in ("run", "run/hpclz", "run/hpclz/jobs"):
        assert stat.S_IMODE((tmp_path / made).stat().st_mode) == 0o755, made
    # A file where the folder should be is still an error (the prolog logs it and leaves no token).
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError):
        program.folder_(str(tmp_path / "file"), 0o755)


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


def _sas(path: Path) -> dict[str, str]:
    return dict(part.split("=", 1) for part in path.read_text().strip().split("&"))


def _time(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text.replace("%3A", ":"), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def _end(moment: datetime.datetime) -> str:
    """SLURM_JOB_END_TIME as slurmd hands it to the Prolog: the UNIX time, `setenvf(&env, "SLURM_JOB_END_TIME", "%lu",
    cred_arg->job_end_time)` (SchedMD/slurm slurm-25-11-5-1 src/plugins/prep/script/prep_script_slurmd.c l.317-319).
    tests/slurm/test_job_storage_end_time.py takes it from a real slurmd 24.11."""
    return str(int(moment.timestamp()))


def test_the_sas_lasts_until_the_job_s_end_plus_the_grace(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    program = _program()
    config = _config(tmp_path)
    end = _now() + datetime.timedelta(hours=3)
    before = _now()
    assert _run("prolog", config, azure, "42", SLURM_JOB_END_TIME=_end(end)).returncode == 0
    for container in ("checkpoints", "datasets"):
        sas = _sas(tmp_path / f"run/hpclz/jobs/42/{container}.sas")
        assert _time(sas["se"]) == end + program.GRACE == end + datetime.timedelta(minutes=15)
        assert before - program.SKEW <= _time(sas["st"]) <= _now() - program.SKEW
    record = json.loads((tmp_path / "run/hpclz/key/jobs/42.json").read_text())
    assert record["end"] == f"{end:%Y-%m-%dT%H:%M:%SZ}"
    # A job that outlasts the key (a week at most, get-user-delegation-key): its SAS ends with the key.
    assert (
        _run("prolog", config, azure, "43", SLURM_JOB_END_TIME=_end(end + datetime.timedelta(days=30))).returncode == 0
    )
    [key] = DelegationStandIn.keys
    assert _sas(tmp_path / "run/hpclz/jobs/43/checkpoints.sas")["se"].replace("%3A", ":") == key["SignedExpiry"]


def _record(tmp_path: Path, job: str, **fields: datetime.datetime) -> Path:
    """Root's record of `job` with `fields` moved, as time would have moved them."""
    path = tmp_path / f"run/hpclz/key/jobs/{job}.json"
    record = json.loads(path.read_text())
    record.update({name: f"{moment:%Y-%m-%dT%H:%M:%SZ}" for name, moment in fields.items()})
    path.write_text(json.dumps(record))
    return path


def test_renew_re_signs_a_sas_near_its_expiry_whole_and_leaves_fresh_ones_alone(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    config = _config(tmp_path)
    end = _now() + datetime.timedelta(days=3)
    for job in ("51", "52"):
        assert _run("prolog", config, azure, job, SLURM_JOB_END_TIME=_end(end)).returncode == 0
    jobs = tmp_path / "run/hpclz/jobs"
    fresh = {p.name: (p.stat().st_ino, p.read_text()) for p in (jobs / "52").iterdir()}
    # Job 51's SAS was cut short by its key, which ends within the hour: renew asks a new key and signs to the job's end.
    soon = _now() + datetime.timedelta(minutes=40)
    cache = tmp_path / "run/hpclz/key/user-delegation-key.json"
    cache.write_text(json.dumps({**json.loads(cache.read_text()), "SignedExpiry": f"{soon:%Y-%m-%dT%H:%M:%SZ}"}))
    record = _record(tmp_path, "51", expiry=soon)
    old = {p.name: p.stat().st_ino for p in (jobs / "51").iterdir()}
    done = _run("renew", config, azure, "")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert len(DelegationStandIn.keys) == 2
    for container in ("checkpoints", "datasets"):
        path = jobs / "51" / f"{container}.sas"
        info = path.stat()
        # A new file renamed over the old one (another inode): a reader opens the old token or the new, whole.
        assert info.st_ino != old[path.name]
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o600)
        sas = _sas(path)
        assert _time(sas["se"]) == end + datetime.timedelta(minutes=15)
        assert sas["ske"].replace("%3A", ":") == DelegationStandIn.keys[1]["SignedExpiry"]
    assert json.loads(record.read_text())["expiry"] == f"{end + datetime.timedelta(minutes=15):%Y-%m-%dT%H:%M:%SZ}"
    assert sorted(p.name for p in (jobs / "51").iterdir()) == sorted(old)  # nothing left beside
    # Job 52's SAS lasts days yet: untouched.
    assert {p.name: (p.stat().st_ino, p.read_text()) for p in (jobs / "52").iterdir()} == fresh


def test_renew_carries_a_job_past_its_recorded_end_for_a_while_then_removes_it(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    program = _program()
    config = _config(tmp_path)
    for job in ("61", "62", "63"):
        assert _run("prolog", config, azure, job).returncode == 0
    jobs = tmp_path / "run/hpclz/jobs"
    # 61: an hour past its recorded end and still here (its time limit raised): two more hours at a time.
    _record(tmp_path, "61", end=_now() - datetime.timedelta(hours=1), expiry=_now() + datetime.timedelta(minutes=10))
    # 62: ended more than a day ago and its epilog never ran: its tokens and record go, nothing is signed.
    stale = _record(
        tmp_path, "62", end=_now() - datetime.timedelta(hours=25), expiry=_now() - datetime.timedelta(hours=24)
    )
    # 63: its epilog ran, which took the folder: the record goes too.
    shutil.rmtree(jobs / "63")
    before = _now()
    done = _run("renew", config, azure, "")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    se = _time(_sas(jobs / "61/checkpoints.sas")["se"])
    assert before + program.OVERTIME <= se <= _now() + program.OVERTIME
    assert not (jobs / "62").exists() and not stale.exists()
    assert not (tmp_path / "run/hpclz/key/jobs/63.json").exists()
    assert sorted(p.name for p in (tmp_path / "run/hpclz/key/jobs").iterdir()) == ["61.json"]


def test_renew_never_follows_what_the_job_s_user_put_in_its_folder(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    config = _config(tmp_path)
    assert _run("prolog", config, azure, "71").returncode == 0
    folder = tmp_path / "run/hpclz/jobs/71"
    victim = tmp_path / "victim"
    victim.write_text("root's own\n")
    victim.chmod(0o644)
    # The job's user may replace its token by a link to a file of root's (the folder is its own, 0700; pytest's own
    # folders above it are root's 0700, so the link is made here and handed to that user, as if it had made it).
    (folder / "checkpoints.sas").unlink()
    (folder / "checkpoints.sas").symlink_to(victim)
    os.lchown(folder / "checkpoints.sas", NOBODY, NOBODY)
    _record(tmp_path, "71", expiry=_now() + datetime.timedelta(minutes=5))
    done = _run("renew", config, azure, "")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert victim.read_text() == "root's own\n" and victim.stat().st_uid == 0
    token = folder / "checkpoints.sas"
    assert not token.is_symlink() and token.stat().st_uid == NOBODY and "sig=" in token.read_text()
    # A job folder that is a link (only root can make one in the jobs' folder): never written through.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chown(elsewhere, NOBODY, NOBODY)
    assert _run("prolog", config, azure, "72").returncode == 0
    shutil.rmtree(folder.parent / "72")
    (folder.parent / "72").symlink_to(elsewhere)
    _record(tmp_path, "72", expiry=_now() + datetime.timedelta(minutes=5))
    done = _run("renew", config, azure, "")
    assert "job 72: renew: no new storage credential: NotADirectoryError" in done.stderr, done.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_client_that_reads_the_sas_file_before_each_write_outlives_its_first_token(
    tmp_path: Path,
    azurite: Azurite,  # noqa: F811
) -> None:
    """docs/checkpoints.md's example: one long-lived client, its AzureSasCredential updated from the file before each
    write, keeps writing once renew has replaced an expired token (Azurite checks a SAS's expiry as Storage does)."""
    program = _program()
    BlobServiceClient.from_connection_string(azurite.connection_string).create_container("renewed")
    folder = tmp_path / "job"
    folder.mkdir(mode=0o700)

    def token(expiry: datetime.datetime) -> str:
        start = _now() - datetime.timedelta(minutes=5)
        sas = generate_container_sas(
            AZURITE_ACCOUNT, "renewed", account_key=ACCOUNT_KEY, permission="racwl", start=start, expiry=expiry
        )
        return str(sas)

    def sas() -> str:
        return (folder / "checkpoints.sas").read_text().strip()

    # renew's own writer puts each token in place.
    program.replace_sas(
        str(folder), os.getuid(), os.getgid(), {"checkpoints.sas": token(_now() - datetime.timedelta(minutes=1))}
    )
    credential = AzureSasCredential(sas())
    container = ContainerClient.from_container_url(f"{azurite.account_url}/renewed", credential=credential)
    with pytest.raises(HttpResponseError) as refused:
        container.upload_blob("run1/step-1/model.pt", b"step 1", overwrite=True)
    assert refused.value.status_code == 403
    program.replace_sas(
        str(folder), os.getuid(), os.getgid(), {"checkpoints.sas": token(_now() + datetime.timedelta(hours=1))}
    )
    credential.update(sas())
    container.upload_blob("run1/step-2/model.pt", b"step 2", overwrite=True)
    assert container.download_blob("run1/step-2/model.pt").readall() == b"step 2"


# What the cluster renders: only where the compute identity holds blob data roles.
STEMS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml"))


def _nodes(stem: str) -> list[str]:
    return [s for s in _scripts(_cluster(stem)[0]) if "hpclz node setup for Slurm partition" in s]


@pytest.mark.parametrize("stem", STEMS)
def test_only_zones_whose_jobs_get_containers_render_the_credential(stem: str) -> None:
    wanted = _jobs_use_the_identity(stem)
    assert {f"cat > {ENROOT_MOUNTS} <<" in node for node in _nodes(stem)} == {wanted}
    assert (SCRIPT in _installer(stem)) == wanted
    assert {f"systemctl enable --now {RENEW_UNIT}.timer\n" in node for node in _nodes(stem)} == {wanted}


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


def test_before_hpclzs_venv_is_there_the_installer_waits_and_writes_nothing(tmp_path: Path) -> None:
    """The program comes from the venv's hpclz: until hpclz-install-wheel has made the venv, the timer's run does
    nothing and succeeds (it runs again a minute later)."""
    (tmp_path / "sched/prolog.d").mkdir(parents=True)
    script = tmp_path / "hpclz-gate-install"
    script.write_text(_installer("ai-training"))
    venv = tmp_path / "opt/hpclz/venv"
    env = {**os.environ, "HPCLZ_SCHED": str(tmp_path / "sched"), "HPCLZ_VENV": str(venv)}
    env["HPCLZ_STAMP"] = str(tmp_path / "stamp/gate-installed")
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (
        0,
        f"hpclz-gate-install: waiting for hpclz's venv {venv} (hpclz-install-wheel)\n",
    )
    assert [p.name for p in (tmp_path / "sched").iterdir()] == ["prolog.d"] and not (tmp_path / "stamp").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_installed_program_is_the_one_the_venvs_wheel_ships(tmp_path: Path) -> None:
    """This checkout's wheel, built as `hpclz deploy` builds it, installed in a venv as hpclz-install-wheel installs
    it (pip's dependencies left out: the program and the node bundle need none, and the test reaches no index); the
    rendered installer, given only that venv, puts the wheel's own job_storage.py under /sched, byte for byte."""
    wheel = build_wheel(tmp_path / "wheel")
    venv = tmp_path / "opt/hpclz/venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin/python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True, timeout=300)
    shipped = subprocess.run(
        [str(python), "-c", "import hpclz.package_data as p; print(p.templates_dir() / 'cloud-init/job_storage.py')"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    # The wheel's copy, inside the venv (hpclz/_data/templates), not this checkout's templates folder.
    assert Path(shipped).is_relative_to(venv) and Path(shipped).read_bytes() == TEMPLATE.read_bytes()
    sched = tmp_path / "sched"
    (sched / "prolog.d").mkdir(parents=True)
    script = tmp_path / "hpclz-gate-install"
    script.write_text(_installer("ai-training"))
    env = {**os.environ, "HPCLZ_SCHED": str(sched), "HPCLZ_VENV": str(venv)}
    env["HPCLZ_STAMP"] = str(tmp_path / "stamp/gate-installed")
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    program = sched / "hpclz/job_storage.py"
    assert program.read_bytes() == Path(shipped).read_bytes() and os.access(program, os.X_OK)
    assert not list(sched.rglob("*.new"))


# slurm.conf keys naming a program that slurmstepd runs in a task's own process or that srun runs (slurm.conf(5)):
# slurmstepd runs the SPANK plugins' task_init hook first and ends the task when the TaskProlog fails (SchedMD/slurm
# slurm-25-11-5-1 src/slurmd/slurmstepd/task.c l.437-441, then l.456-462 "TaskProlog failed status=%d", _exit);
# pyxis enters the job's container in that hook (NVIDIA/pyxis v0.21.0 pyxis_slurmstepd.c slurm_spank_task_init
# l.1308, setns into its mount namespace l.1372; NVIDIA/pyxis issues #83 and #163), so such a program is looked up
# in the image and every --container-image task fails; on a node that lacks it (made before it was added) every task
# fails.
TASK_PROGRAMS = ("TaskProlog", "TaskEpilog", "SrunProlog", "SrunEpilog")
# Where a program named in slurm.conf is on every node at once: the scheduler's /sched, which every node mounts, and
# /etc/slurm, cyclecloud-slurm's links into it (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py
# l.506-507, 706-707).
SHARED = ("/sched/", "/etc/slurm/")


def _misplaced(slurm_lines: str) -> list[str]:
    """The keys of `slurm_lines` (slurm.conf lines) that name a task's program, or a program on a node's own disk
    other than the health check: slurmd runs HealthCheckProgram itself, as root, never in a job or its container
    (slurm.conf(5), HealthCheckProgram), and every execute node's script writes it before slurmd starts."""
    settings = [
        line.split("=", 1) for line in slurm_lines.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    return [
        key
        for key, value in settings
        if key in TASK_PROGRAMS
        or (
            value.startswith("/")
            and not value.startswith(SHARED)
            and (key, value) != ("HealthCheckProgram", HEALTH_PROGRAM)
        )
    ]


@pytest.mark.parametrize("stem", STEMS)
def test_slurm_conf_names_no_task_program_and_no_path_only_some_nodes_have(stem: str) -> None:
    _, parameters = _cluster(stem)
    assert _misplaced(parameters["HpclzSlurmConfig"]) == []
    nodes = _nodes(stem)
    assert nodes and all(f"cat > {HEALTH_PROGRAM} <<" in node for node in nodes)


def test_a_task_prolog_or_a_node_local_program_fails_the_check() -> None:
    _, parameters = _cluster("ai-training")
    lines = parameters["HpclzSlurmConfig"]
    assert _misplaced(lines + "TaskProlog=/opt/hpclz/bin/hpclz-job-storage-env\n") == ["TaskProlog"]
    assert _misplaced(lines + "TaskEpilog=/sched/hpclz/task-epilog\n") == ["TaskEpilog"]
    assert _misplaced(lines + "Epilog=/opt/hpclz/bin/epilog\n") == ["Epilog"]
    assert _misplaced(lines + "Epilog=/etc/slurm/epilog.d/*\n") == []


def test_containers_see_the_jobs_folder_read_only_as_enroot_reads_its_mounts(tmp_path: Path) -> None:
    """The node's enroot mount file, read as enroot 4.0.1's enroot-mount reads it (tests/render/test_nccl.py,
    enroot_mounts: getmntent fields, every option in enroot-mount's own table) and as util-linux's libmount reads an
    fstab(5) file (findmnt --tab-file): one bind of the jobs' folder onto the same path, read-only, that cannot stop a
    container from starting (nofail)."""
    text = _heredoc(_nodes("ai-training")[0], ENROOT_MOUNTS)
    entry = (JOBS, JOBS, "none", ["x-create=dir", "bind", "ro", "nosuid", "nodev", "noexec", "private", "nofail"], -1)
    assert enroot_mounts(text) == [entry]
    require(shutil.which("findmnt") is not None, "findmnt (util-linux)")
    fstab = tmp_path / "50-hpclz-jobs.fstab"
    fstab.write_text(text)
    fields = "SOURCE,TARGET,FSTYPE,OPTIONS,PASSNO"
    done = subprocess.run(
        ["findmnt", "--tab-file", str(fstab), "-n", "-o", fields, "-P"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert done.stdout == (
        f'SOURCE="{JOBS}" TARGET="{JOBS}" FSTYPE="none" '
        'OPTIONS="x-create=dir,bind,ro,nosuid,nodev,noexec,private,nofail" PASSNO="-1"\n'
    )
    # After enroot's own mounts (10-system.fstab's tmpfs on /var/run) in name order, with hpclz's other file.
    assert Path(ENROOT_MOUNTS).parent == Path("/etc/enroot/mounts.d")
    assert sorted([Path(ENROOT_MOUNTS).name, "10-system.fstab", "20-config.fstab"])[-1] == Path(ENROOT_MOUNTS).name


# Through enroot's own enroot-mount, in a mount namespace of its own: scripts/check-enroot-mount, run by hand where an
# enroot-mount built from NVIDIA/enroot v4.0.1 is at hand (enroot is packaged in none of Debian, PyPI or npm, so the
# suite cannot have it); docs/checkpoints.md records its run.


def test_the_renew_timer_runs_the_scheduler_s_program_as_root_every_ten_minutes(tmp_path: Path, azure: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's folder to its user)")
    node = _nodes("ai-training")[0]
    timer = _heredoc(node, f"/etc/systemd/system/{RENEW_UNIT}.timer")
    assert "OnBootSec=10min\nOnUnitActiveSec=10min\n" in timer and "WantedBy=timers.target" in timer
    # No User=: the service runs as root (systemd.exec(5), User=), which renew needs to read root's records.
    service = _heredoc(node, f"/etc/systemd/system/{RENEW_UNIT}.service")
    assert f"ExecStart={RENEW}\n" in service and "User=" not in service
    # The rendered program, run against what the scheduler's installer put under a scratch /sched.
    (tmp_path / "sched/prolog.d").mkdir(parents=True)
    sched, installed = _install(tmp_path, "ai-training")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    settings = json.loads((sched / "hpclz/job-storage.json").read_text())
    settings.update(json.loads(_config(tmp_path).read_text()) | {"containers": settings["containers"]})
    (sched / "hpclz/job-storage.json").write_text(json.dumps(settings))
    script = tmp_path / "renew"
    script.write_text(_heredoc(node, RENEW))
    assert _run("prolog", sched / "hpclz/job-storage.json", azure, "81").returncode == 0
    _record(tmp_path, "81", expiry=_now() + datetime.timedelta(minutes=5))
    token = tmp_path / "run/hpclz/jobs/81/checkpoints.sas"
    before = token.stat().st_ino
    env = {
        "PATH": os.environ["PATH"],
        "HPCLZ_SCHED": str(sched),
        "HPCLZ_IMDS_URL": azure,
        "HPCLZ_BLOB_URL": azure + "/{account}",
    }
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert token.stat().st_ino != before
    # Before the scheduler has installed the program, it does nothing.
    env["HPCLZ_SCHED"] = str(tmp_path / "nothing")
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# ----- the job's Key Vault secrets -----
LICENCE = "line one\nPRICING-LICENCE-7f3c2a91\n"  # a value with newlines: written exactly, never logged


def _secrets_config(tmp_path: Path, url: str, containers: bool = True, **extra: object) -> Path:
    path = _config(tmp_path)
    config = json.loads(path.read_text())
    if not containers:
        config["containers"] = []
        del config["account"]
    config |= {"vault_url": url + "/vault", "secrets": ["other-licence", "pricing-library-licence", "unset"]}
    config |= extra
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def vault(azure: str) -> Iterator[str]:
    DelegationStandIn.secrets = {"pricing-library-licence": LICENCE, "other-licence": "OTHER-VALUE-1b2d"}
    DelegationStandIn.forbidden = {"other-licence"}  # its grant removed: Key Vault answers 403
    DelegationStandIn.vault_calls = []
    yield azure
    DelegationStandIn.secrets, DelegationStandIn.forbidden = {}, set()


def test_the_prolog_gives_the_job_each_secret_it_may_read_its_user_s_alone_and_logs_no_value(
    tmp_path: Path, vault: str
) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's secrets to its user)")
    config = _secrets_config(tmp_path, vault)
    done = _run("prolog", config, vault, "51")
    assert done.returncode == 0
    folder = tmp_path / "run/hpclz/jobs/51"
    secrets = folder / "secrets"
    # The readable one, exactly; the refused (403) and the missing (404) ones named in the log and absent.
    assert sorted(p.name for p in secrets.iterdir()) == ["pricing-library-licence"]
    assert (secrets / "pricing-library-licence").read_bytes() == LICENCE.encode()
    for path in (secrets, secrets / "pricing-library-licence"):
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (NOBODY, NOBODY), path
        assert stat.S_IMODE(info.st_mode) == (0o700 if path == secrets else 0o600), path
    assert "hpclz-job-storage: job 51: prolog: no secret other-licence: HTTPError 403" in done.stderr, done.stderr
    assert "hpclz-job-storage: job 51: prolog: no secret unset: HTTPError 404" in done.stderr, done.stderr
    assert "PRICING-LICENCE" not in done.stderr + done.stdout and "OTHER-VALUE" not in done.stderr + done.stdout
    assert DelegationStandIn.vault_calls == [
        f"/vault/secrets/{name}?api-version=2025-07-01"
        for name in ("other-licence", "pricing-library-licence", "unset")
    ]
    # The job's SAS beside them, as before.
    assert {"checkpoints.sas", "datasets.sas", "secrets"} <= {p.name for p in folder.iterdir()}
    assert _run("epilog", config, vault, "51").returncode == 0
    assert not folder.exists()


def test_a_zone_with_secrets_and_no_containers_gets_its_secrets_and_no_key(tmp_path: Path, vault: str) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's secrets to its user)")
    config = _secrets_config(tmp_path, vault, containers=False, secrets=["pricing-library-licence"])
    done = _run("prolog", config, vault, "52")
    assert (done.returncode, done.stderr) == (0, "")
    folder = tmp_path / "run/hpclz/jobs/52"
    assert sorted(p.name for p in folder.iterdir()) == ["secrets"]
    assert (folder / "secrets/pricing-library-licence").read_text() == LICENCE
    assert DelegationStandIn.keys == [] and not (tmp_path / "run/hpclz/key/jobs/52.json").exists()
    assert _run("renew", config, vault, "").returncode == 0 and folder.exists()  # renew has nothing of it to sign


def test_a_failed_mint_still_gives_the_secrets_and_a_failed_read_never_fails_the_job(
    tmp_path: Path, vault: str
) -> None:
    require(os.geteuid() == 0, "root (the prolog hands the job's secrets to its user)")
    config = _secrets_config(tmp_path, vault, account="no-such-account")  # Get User Delegation Key answers 404
    done = _run("prolog", config, vault, "53")
    assert done.returncode == 0 and "job 53: prolog: no storage credential: HTTPError" in done.stderr
    folder = tmp_path / "run/hpclz/jobs/53"
    assert sorted(p.name for p in folder.iterdir()) == ["secrets"]
    assert not (tmp_path / "run/hpclz/key/jobs/53.json").exists()
    # Nothing readable at all (no Key Vault token from the metadata service): no folder, and the prolog still ends 0.
    DelegationStandIn.refuse = True
    done = _run("prolog", config, vault, "54")
    assert done.returncode == 0 and "job 54: prolog: no Key Vault token, no secrets: HTTPError 404" in done.stderr
    assert not (tmp_path / "run/hpclz/jobs/54").exists()


def test_a_secret_is_renamed_into_place_whole_and_never_through_a_link(tmp_path: Path) -> None:
    program = _program()
    folder = tmp_path / "secrets"
    folder.mkdir(mode=0o700)
    program.write_secret(str(folder), "licence", "v1", os.getuid(), os.getgid())
    assert (folder / "licence").read_text() == "v1" and sorted(p.name for p in folder.iterdir()) == ["licence"]
    # A part left where the program writes (a link to a file elsewhere) is never opened: the write fails, the target
    # stays as it was, and the prolog (main) logs it.
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    (folder / ".other.part").symlink_to(target)
    with pytest.raises(FileExistsError):
        program.write_secret(str(folder), "other", "v2", os.getuid(), os.getgid())
    assert target.read_text() == "untouched" and not (folder / "other").exists()


DELEGATOR = "db58b8e5-c6ad-4a2a-8342-4190687cbf4a"  # Storage Blob Delegator (built-in-roles/storage.md)


def test_a_zone_with_secrets_and_no_containers_renders_the_prolog_without_the_delegation_key() -> None:
    plan = variant("finance", lambda data: data["storage"].pop("blob"))
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    cluster = compute.artifacts["cyclecloud/slurm-cluster.txt"]
    (scheduler,) = [s for s in _scripts(cluster) if "hpclz on the Slurm scheduler node" in s]
    installer = _heredoc(scheduler, "/opt/hpclz/bin/hpclz-gate-install")
    assert 'python3 "$SCHED/hpclz/job_storage.py" prolog' in installer and SCRIPT in installer
    [settings] = re.findall(r"<<'JOB_STORAGE_EOF'\n(.*?)^JOB_STORAGE_EOF", installer, re.S | re.M)
    config = json.loads(settings)
    # Only the secret the compute identity is granted (not the accounting password), by name, and the vault's URL.
    assert config["containers"] == [] and "account" not in config
    assert config["secrets"] == ["pricing-library-licence"]
    assert re.fullmatch(r"https://kv-[a-z0-9-]+\.vault\.azure\.net", config["vault_url"]), config["vault_url"]
    # No user delegation key: no Storage Blob Delegator anywhere (the role's ID, built-in-roles/storage.md).
    assert not any(DELEGATOR in str(d.template) for d in plan.deployments)
    assert any(DELEGATOR in str(d.template) for d in preset_plan("finance").deployments)  # where containers exist
    # Each execute node binds the jobs' folder into its containers, where the job reads its secrets too.
    assert all(f"cat > {ENROOT_MOUNTS} <<" in node for node in _nodes_of(cluster))
