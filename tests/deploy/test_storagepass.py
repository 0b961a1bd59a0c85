"""A rotated Slurm accounting password reaches slurmdbd: the program deploy runs on the scheduler (real files, a
slurmdbd.conf filled from cyclecloud-slurm's own template, a recording `systemctl`), and deploy running it through
the ARM stand-in's managed Run Commands after a rotation, with `hpclz plan` saying so first.

No real slurmdbd here: Debian 12's slurm-wlm packages install slurmctld and slurmd on this machine, not slurmdbd, and
slurmdbd needs a MySQL server to start."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.deploy.storagepass import ENV, PENDING, program, script
from hpclz.errors import ExitCode
from hpclz.render.zone import Zone
from tests.conftest import RunCli
from tests.deploy.conftest import state_of
from tests.support.arm_standin import ArmStandIn

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "cyclecloud-slurm" / "slurmdbd.conf.template"
OLD, NEW = "slurmdb-Test-4b1d9e", "slurmdb-Rotated-7c2a51"  # made up
SLURM_ID = 11100  # slurm.user.uid and gid in the rendered cluster template


def conf_text(password: str) -> str:
    """slurmdbd.conf as install.py's `_accounting_primary` fills the template (Azure/cyclecloud-slurm@50e6739
    azure-slurm-install/install.py l.417-436), with a made-up host, server and cluster."""
    return FIXTURE.read_text(encoding="utf-8").format(
        auth_alt_type="",
        auth_alt_parameters="",
        dbdhost="scheduler-1",
        accountdb="mysql-riskgrid.mysql.database.azure.com",
        storageloc="riskgrid-prod_acct_db",
        storagepass=f"StoragePass={password}",
        dbuser="slurmadmin",
        storage_parameters="StorageParameters=SSL_CA=/etc/slurm/AzureCA.pem",
        slurmver="25.05.2",
    )


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Path]:
    """/sched/<cluster>/slurmdbd.conf (mode 600), /etc/slurm/slurmdbd.conf linking to it, and a `systemctl` that
    records its arguments and fails when told to."""
    sched = tmp_path / "sched" / "riskgrid-prod"
    sched.mkdir(parents=True)
    conf = sched / "slurmdbd.conf"
    conf.write_text(conf_text(OLD), encoding="utf-8")
    conf.chmod(0o600)
    if os.geteuid() == 0:  # as on the scheduler: owner slurm, cyclecloud-slurm's uid and gid (slurm.user.uid = 11100)
        os.chown(conf, SLURM_ID, SLURM_ID)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurmdbd.conf").symlink_to(conf)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "systemctl.calls"
    fake = bin_ / "systemctl"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n[ ! -e {tmp_path}/systemctl.fail ]\n', encoding="utf-8")
    fake.chmod(0o755)
    return {"root": tmp_path, "conf": conf, "link": etc / "slurmdbd.conf", "bin": bin_, "calls": calls}


def run(box: dict[str, Path], value: str, target: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{box['bin']}:{os.environ['PATH']}", ENV: value}
    command = [sys.executable, "-", str(target or box["link"])]
    return subprocess.run(command, input=program(), env=env, capture_output=True, text=True, timeout=60, check=False)


def restarts(box: dict[str, Path]) -> list[str]:
    return box["calls"].read_text(encoding="utf-8").splitlines() if box["calls"].exists() else []


def test_only_storagepass_changes_mode_and_owner_stay_and_slurmdbd_restarts_once(box: dict[str, Path]) -> None:
    before = box["conf"].stat()
    done = run(box, NEW)
    assert done.returncode == 0, done.stderr
    assert box["conf"].read_text(encoding="utf-8") == conf_text(NEW)  # every other byte as it was
    after = box["conf"].stat()
    assert stat.S_IMODE(after.st_mode) == 0o600 and (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    if os.geteuid() == 0:
        assert (after.st_uid, after.st_gid) == (SLURM_ID, SLURM_ID)  # not root's, who wrote the new file
    assert after.st_ino != before.st_ino  # a new file renamed over the old one, not rewritten in place
    assert box["link"].is_symlink() and box["link"].resolve() == box["conf"]  # the link stays a link
    assert restarts(box) == ["restart slurmdbd"]
    assert sorted(p.name for p in box["conf"].parent.iterdir()) == ["slurmdbd.conf"]  # no temporary file left
    assert NEW not in done.stdout + done.stderr and OLD not in done.stdout + done.stderr


def test_the_same_password_again_changes_nothing_and_restarts_nothing(box: dict[str, Path]) -> None:
    inode = box["conf"].stat().st_ino
    done = run(box, OLD)
    assert done.returncode == 0 and "unchanged" in done.stdout
    assert box["conf"].stat().st_ino == inode and restarts(box) == []


def test_a_kept_mode_other_than_600_stays(box: dict[str, Path]) -> None:
    box["conf"].chmod(0o640)
    assert run(box, NEW).returncode == 0
    assert stat.S_IMODE(box["conf"].stat().st_mode) == 0o640


@pytest.mark.parametrize("value", ["", "with space-9A", "hash#Tail-9A", "back\\slash-9A", "line\nStorageHost=evil"])
def test_a_password_slurmdbd_conf_cannot_carry_changes_nothing(box: dict[str, Path], value: str) -> None:
    done = run(box, value)
    assert done.returncode == 2
    assert box["conf"].read_text(encoding="utf-8") == conf_text(OLD) and restarts(box) == []
    assert (value or "\0") not in done.stdout + done.stderr


def test_a_file_without_storagepass_is_left_alone(box: dict[str, Path]) -> None:
    text = conf_text(OLD).replace(f"StoragePass={OLD}\n", "#StoragePass=\n")  # install.py's line without a password
    box["conf"].write_text(text, encoding="utf-8")
    done = run(box, NEW)
    assert done.returncode == 3 and "no StoragePass= line" in done.stderr
    assert box["conf"].read_text(encoding="utf-8") == text and restarts(box) == []


def test_a_failed_restart_is_an_error(box: dict[str, Path]) -> None:
    (box["root"] / "systemctl.fail").touch()
    done = run(box, NEW)
    assert done.returncode == 4 and "systemctl restart slurmdbd failed" in done.stderr
    assert box["conf"].read_text(encoding="utf-8") == conf_text(NEW)  # the next run finds it written: no restart then


def test_the_run_command_script_runs_the_program_on_the_cluster_folder(box: dict[str, Path]) -> None:
    """The script as a Run Command hands it to bash, in a bare environment plus the protected parameter."""
    env = {"PATH": f"{box['bin']}:/usr/bin:/bin", ENV: NEW, "HPCLZ_SCHED_DIR": str(box["root"] / "sched")}
    done = subprocess.run(
        ["bash", "-c", script("riskgrid-prod")], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert box["conf"].read_text(encoding="utf-8") == conf_text(NEW) and restarts(box) == ["restart slurmdbd"]
    assert NEW not in script("riskgrid-prod")


CLUSTER = "energy-prod"  # the energy preset's CycleCloud cluster: metadata name and environment


def _scheduler(arm: ArmStandIn, energy: Path, box: dict[str, Path]) -> None:
    """The VM CycleCloud would have made, tagged as the cluster's scheduler, its /sched a test folder."""
    compute = Zone(load_config(energy).config).rg["compute"]  # where CycleCloud creates the nodes
    arm.compute.add(compute, "scheduler-vm", {"ClusterName": CLUSTER, "Name": "scheduler"})
    arm.compute.vm_env.update({"PATH": f"{box['bin']}:/usr/bin:/bin", "HPCLZ_SCHED_DIR": str(box["root"] / "sched")})


def test_deploy_with_a_rotated_password_rewrites_the_schedulers_slurmdbd_conf(
    arm: ArmStandIn,
    energy: Path,
    run_cli: RunCli,
    box: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    predeployed: Callable[[Path], None],
) -> None:
    predeployed(energy)
    slurm_folder = box["root"] / "sched" / CLUSTER
    box["conf"].parent.rename(slurm_folder)
    box["conf"] = slurm_folder / "slurmdbd.conf"
    _scheduler(arm, energy, box)

    monkeypatch.setenv("SLURMDB_PASSWORD", NEW)
    plan = run_cli("plan", str(energy))
    assert "(sensitive, rotated)" in plan.stdout
    assert "rewrites StoragePass in the scheduler's slurmdbd.conf" in " ".join(plan.stdout.split())

    deployed = run_cli("deploy", str(energy), "--yes")
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    assert "slurmdbd password: succeeded - slurmdbd restarted" in deployed.stdout + deployed.stderr
    assert box["conf"].read_text(encoding="utf-8") == conf_text(NEW) and restarts(box) == ["restart slurmdbd"]
    assert stat.S_IMODE(box["conf"].stat().st_mode) == 0o600
    assert PENDING not in state_of(energy)["outputs"]
    (sent,) = [s for s in arm.compute.scripts if "slurmdbd_storagepass" in s or "StoragePass" in s]
    assert NEW not in sent and OLD not in sent
    for text in (deployed.stdout, deployed.stderr, plan.stdout, plan.stderr):
        assert NEW not in text and OLD not in text
    files = [p for p in energy.parent.rglob("*") if p.is_file() and p != energy]
    assert not any(NEW.encode() in p.read_bytes() for p in files)

    again = run_cli("deploy", str(energy), "--yes")  # nothing rotated, nothing pending: no run command
    assert again.exit_code == 0 and restarts(box) == ["restart slurmdbd"] and len(arm.compute.scripts) == 1


def test_a_failed_rewrite_fails_deploy_and_the_next_deploy_repeats_it(
    arm: ArmStandIn,
    energy: Path,
    run_cli: RunCli,
    box: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    predeployed: Callable[[Path], None],
) -> None:
    predeployed(energy)
    _scheduler(arm, energy, box)  # no slurmdbd.conf under /sched/<cluster> yet: the program cannot read it
    monkeypatch.setenv("SLURMDB_PASSWORD", NEW)
    failed = run_cli("deploy", str(energy), "--yes")
    assert failed.exit_code == ExitCode.AZURE_ERROR
    assert "still has the old accounting password" in failed.stdout + failed.stderr
    assert NEW not in failed.stdout + failed.stderr
    # The rest of the deploy still happened and was shown: the outputs and the next steps, then the failure.
    assert "Next steps" in failed.stdout and "deploy did not finish" not in failed.stdout
    assert state_of(energy)["outputs"].get(PENDING) == "pending"

    slurm_folder = box["root"] / "sched" / CLUSTER
    box["conf"].parent.rename(slurm_folder)
    box["conf"] = slurm_folder / "slurmdbd.conf"
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0  # the secret's fingerprint is current: pending
    assert box["conf"].read_text(encoding="utf-8") == conf_text(NEW) and restarts(box) == ["restart slurmdbd"]
    assert PENDING not in state_of(energy)["outputs"]
    assert NEW not in json.dumps(state_of(energy))


def test_the_program_runs_on_the_schedulers_python_and_the_script_passes_shellcheck(tmp_path: Path) -> None:
    """The scheduler's /usr/bin/python3 may be 3.6 (AlmaLinux 8, test_node_portability.py); the script is bash."""
    from tests.render.test_node_portability import _shellcheck, _vermin

    source = tmp_path / "slurmdbd_storagepass.py"
    source.write_text(program(), encoding="utf-8")
    checked = _vermin(source)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    shell = tmp_path / "script.sh"
    shell.write_text("#!/bin/bash\n" + script("energy-prod"), encoding="utf-8")
    linted = _shellcheck(shell)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_without_a_scheduler_vm_there_is_nothing_to_rewrite(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, predeployed: Callable[[Path], None]
) -> None:
    """The cluster not started: no slurmdbd runs; the scheduler CycleCloud starts later takes the re-imported value."""
    predeployed(energy)
    monkeypatch.setenv("SLURMDB_PASSWORD", NEW)
    deployed = run_cli("deploy", str(energy), "--yes")
    assert deployed.exit_code == 0, deployed.stdout + deployed.stderr
    assert "slurmdbd password: skipped - no scheduler VM" in deployed.stdout + deployed.stderr
    assert arm.compute.scripts == [] and PENDING not in state_of(energy)["outputs"]
