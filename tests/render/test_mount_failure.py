"""A shared file system that does not mount at a node's first boot: the node's CloudInit script tries again a bounded
number of times, then goes on with the rest of its setup under `set -euo pipefail`, and the node's HealthCheckProgram
drains the node, naming the mount, while the mount is missing, and resumes it from that drain alone once it is back
(templates/cloud-init/_mounts.sh.j2, node.sh.j2)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hpclz.render.health_gate import HEALTH_PROGRAM
from hpclz.slurm.client import DRAIN_PREFIX
from tests.render.test_cloudinit import _artifacts, _node_scripts
from tests.render.test_health_gate import _heredoc
from tests.render.test_scheduled_events import ROLL_CAPTURE, _node
from tests.support import slurm as harness
from tests.support.slurm import LocalSlurm

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm

# The mount part of every role's script: its helpers, each shared mount, and the line naming those left unmounted.
SECTION = re.compile(r"^# hpclz_fstab DEVICE .*?^if \[ -n \"\$unmounted\" \]; then\n.*?^fi\n", re.S | re.M)
MGS = "10.9.0.4"
# Not hpclz.slurm.client.DRAIN_PREFIX's "hpclz:": `hpclz verify --drain`, the gate and the remediator take over drains
# of that prefix, and only the health program sees the mount come back.
REASON = "hpclz-health: mount missing: /lustre"


@pytest.fixture(scope="module")
def lustre(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """energy with an existing Lustre (its MGS address in the config, so no ARM lookup) mounted on a folder of the
    test's own, so that the section's `mkdir -p` stays there: (mount point, the partition's node script)."""
    point = tmp_path_factory.mktemp("mnt") / "lustre"

    def existing(data: dict[str, Any]) -> None:
        data["storage"]["lustre"] = {
            "mode": "existing",
            "resource_id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-fs/providers/"
            "Microsoft.StorageCache/amlFilesystems/shared",
            "mgs_address": MGS,
            "mount_point": str(point),
        }

    from tests.render.conftest import variant

    compute = next(d for d in variant("energy", existing).deployments if d.component == "compute")
    yield point, _node_scripts(compute.artifacts["cyclecloud/slurm-cluster.txt"])[0]


def _stand_ins(folder: Path, fail_first: int) -> Path:
    """`mount` that fails (exit 32, "mount failure", mount(8)) its first `fail_first` calls, recording each, and
    `mountpoint` that answers from what the stand-in mounted."""
    bin_ = folder / "bin"
    bin_.mkdir()
    calls, mounted = folder / "mount.calls", folder / "mounted"
    (bin_ / "mount").write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {calls}\n'
        f'if [ "$(wc -l < {calls})" -le {fail_first} ]; then\n'
        '  echo "mount.lustre: mount failed: Input/output error" >&2; exit 32\n'
        "fi\n"
        f'echo "$1" >> {mounted}\n'
    )
    (bin_ / "mountpoint").write_text(f'#!/bin/bash\ngrep -qxF "${{@: -1}}" {mounted} 2>/dev/null\n')
    for tool in ("mount", "mountpoint"):
        (bin_ / tool).chmod(0o755)
    return bin_


def _run_section(tmp_path: Path, script: str, fail_first: int, tries: int) -> subprocess.CompletedProcess[str]:
    """The script's mount section under the script's own `set -euo pipefail`, then a step standing for the rest of the
    script: it runs only if the section let the script go on."""
    [section] = SECTION.findall(script)
    part = tmp_path / "mounts.sh"
    part.write_text(f'set -euo pipefail\n{section}echo "next step ran; unmounted=[${{unmounted}}]"\n')
    (tmp_path / "fstab").write_text("")
    env = {
        **os.environ,
        "PATH": f"{_stand_ins(tmp_path, fail_first)}:{os.environ['PATH']}",
        "HPCLZ_FSTAB": str(tmp_path / "fstab"),
        "HPCLZ_MOUNT_TRIES": str(tries),
        "HPCLZ_MOUNT_DELAY": "0",
    }
    return subprocess.run(["bash", str(part)], env=env, capture_output=True, text=True, timeout=60, check=False)


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "mount.calls").read_text().splitlines()


def test_a_mount_that_keeps_failing_is_tried_a_bounded_number_of_times_and_the_setup_goes_on(
    tmp_path: Path, lustre: tuple[Path, str]
) -> None:
    point, script = lustre
    ran = _run_section(tmp_path, script, fail_first=99, tries=3)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"next step ran; unmounted=[ {point}]"
    assert _calls(tmp_path) == [str(point)] * 3
    assert f"hpclz: mounting {point} failed (try 2 of 3)" in ran.stderr
    assert f"hpclz: {point} not mounted after 3 tries" in ran.stderr
    assert f"hpclz: shared file systems not mounted: {point}; the rest of the setup goes on" in ran.stderr
    # The fstab line is written before the tries, so the next boot mounts it again (test_mounts_survive_reboot.py).
    assert (tmp_path / "fstab").read_text() == f"{MGS}@tcp:/lustrefs {point} lustre noatime,flock,_netdev,nofail 0 0\n"


def test_a_mount_that_fails_then_succeeds_leaves_nothing_unmounted(tmp_path: Path, lustre: tuple[Path, str]) -> None:
    point, script = lustre
    ran = _run_section(tmp_path, script, fail_first=2, tries=5)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "next step ran; unmounted=[]"
    assert _calls(tmp_path) == [str(point)] * 3
    assert "not mounted" not in ran.stderr


@pytest.mark.parametrize("stem", ["ai-training", "energy"])
def test_what_follows_the_mounts_is_the_rest_of_the_node_setup(stem: str) -> None:
    """The steps a failed `mount` used to skip all come after the mount section, which now always lets the script go
    on: metrics, the scratch link, the topology link, the containers' NCCL settings, and the last line, which names
    what is missing. The default tries are bounded: 5, 30 s apart."""
    nccl = []
    for script in _node_scripts(_artifacts(stem)["cyclecloud/slurm-cluster.txt"]):
        [section] = SECTION.findall(script)
        after = script[script.index(section) + len(section) :]
        for step in ("hpclz-prometheus", "ln -s /mnt/nvme/scratch /scratch", "/etc/slurm/topology.yaml"):
            assert step in after, step
        nccl.append("/etc/enroot/environ.d" in after)
        assert 'without:$unmounted (the node is drained while missing)"' in after
        assert "local tries=${HPCLZ_MOUNT_TRIES:-5} delay=${HPCLZ_MOUNT_DELAY:-30}" in section
        # A failed ARM lookup of the address leaves the mount missing too, never the script stopped.
        assert re.search(r"^  addr=\$\(/opt/hpclz/bin/hpclz-arm-get .*\) \|\| addr=\"\"$", section, re.M)
        assert not re.search(r"^\s*mount /", section, re.M)
    assert any(nccl)  # the GPU partitions' NCCL settings for containers


# -- the HealthCheckProgram, with the real Slurm daemons ----------------------------------------------------------


def _health(tmp_path: Path, cluster: LocalSlurm, node: str, mounted: bool) -> None:
    """One run of ai-training's HealthCheckProgram as slurmd runs it on `node`, with /proc/self/mounts standing for the
    node's and no gate under /sched (test_health_gate.py runs the two together)."""
    [program] = {
        _heredoc(s, HEALTH_PROGRAM) for s in _node_scripts(_artifacts("ai-training")["cyclecloud/slurm-cluster.txt"])
    }
    path = tmp_path / "hpclz-health"
    path.write_text(program)
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\n" + (f"{MGS}@tcp:/lustrefs /lustre lustre rw 0 0\n" if mounted else ""))
    env = {
        **cluster.env,
        "SLURMD_NODENAME": node,
        "HPCLZ_MOUNTS": str(mounts),
        "HPCLZ_SCHED": str(tmp_path / "no"),
        "HPCLZ_MOUNT_MARK": str(tmp_path / "mark"),
        "HPCLZ_BOOT_MARK": str(tmp_path / "boot"),  # absent until the first run: a fresh boot
    }
    ran = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert (ran.returncode, ran.stderr) == (0, "")


def test_the_health_program_drains_a_node_while_its_lustre_is_missing_and_resumes_it_after(
    clean_slurm: LocalSlurm, tmp_path: Path
) -> None:
    _health(tmp_path, clean_slurm, "node1", mounted=True)
    assert "DRAIN" not in _node(clean_slurm, "node1")[0]
    assert not (tmp_path / "mark").exists()
    _health(tmp_path, clean_slurm, "node1", mounted=False)
    state, reason = _node(clean_slurm, "node1")
    assert ("DRAIN" in state, reason) == (True, REASON)
    assert not reason.startswith(DRAIN_PREFIX)
    _health(tmp_path, clean_slurm, "node1", mounted=False)
    assert _node(clean_slurm, "node1")[1] == REASON
    _health(tmp_path, clean_slurm, "node1", mounted=True)
    assert "DRAIN" not in _node(clean_slurm, "node1")[0]
    assert not (tmp_path / "mark").exists()


def _recording_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str) -> Path:
    """An `scontrol` stand-in that records its arguments and shows node1 in `state`, as a real capture's line (Slurm
    22.05.8, tests/fixtures/slurm/README.md) with that State=; returns the file of its calls."""
    line = ROLL_CAPTURE.splitlines()[0].split(" Reason=")[0].replace("State=IDLE+DRAIN+POWER_DOWN", f"State={state}")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (tmp_path / "node.txt").write_text(line.replace("NodeName=cc1", "NodeName=node1") + "\n")
    calls = tmp_path / "scontrol.calls"
    (bin_ / "scontrol").write_text(
        f'#!/bin/bash\necho "$*" >> {calls}\nif [ "$1" = show ]; then cat {tmp_path / "node.txt"}; fi\n'
    )
    (bin_ / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    return calls


def test_a_node_with_its_mounts_asks_slurm_once_a_boot_then_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every shared mount there and no drain of this program's standing: one look at the node's state in a boot (for a
    drain of this program's from an earlier VM), then no scontrol call at all (a stand-in records any), so the check
    costs slurmctld nothing on a healthy node, every minute, on every node."""
    calls = _recording_scontrol(tmp_path, monkeypatch, "IDLE")
    cluster = LocalSlurm(root=tmp_path, nodes=[])
    _health(tmp_path, cluster, "node1", mounted=True)
    assert calls.read_text().splitlines() == ["show node node1 -o"]
    _health(tmp_path, cluster, "node1", mounted=True)
    _health(tmp_path, cluster, "node1", mounted=True)
    assert calls.read_text().splitlines() == ["show node node1 -o"]
    _health(tmp_path, cluster, "node1", mounted=False)  # and the stand-in is reached when a mount is missing
    assert calls.read_text().splitlines()[1:] == [
        "show node node1 -o",
        "update nodename=node1 state=drain reason=" + REASON,
    ]


# scontrol's State= of a node Slurm powers down: marked (scontrol update State=POWER_DOWN, as `hpclz nodes roll` but
# without its DRAIN), the suspend program run, then SuspendTimeout over (the capture's second and third lines).
POWERING = ["IDLE+POWER_DOWN", "IDLE+POWERING_DOWN", "IDLE+POWERED_DOWN"]


@pytest.mark.parametrize("state", POWERING)
def test_a_node_slurm_is_powering_down_is_never_drained_for_a_missing_mount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str
) -> None:
    """The Scheduled Events watcher unmounts Lustre on the Terminate CycleCloud's deletion of a suspended node sends,
    while slurmd still runs this program: a drain then would outlive the suspend that cleared any earlier one
    (idle_on_node_suspend), and a drained powered-down node never gets a job again (test_power_save_drains.py)."""
    assert f"State={state} " in ROLL_CAPTURE or state == POWERING[0]
    calls = _recording_scontrol(tmp_path, monkeypatch, state)
    cluster = LocalSlurm(root=tmp_path, nodes=[])
    _health(tmp_path, cluster, "node1", mounted=False)
    _health(tmp_path, cluster, "node1", mounted=False)
    assert calls.read_text().splitlines() == ["show node node1 -o"] * 2


def test_its_own_drain_left_from_an_earlier_vm_is_resumed_at_the_next_boot(
    clean_slurm: LocalSlurm, tmp_path: Path
) -> None:
    """The mark that says this program drained the node lives on the VM's disk, gone with a VM power saving deleted;
    the first run of a boot looks once, and resumes the node from this program's drain when the mounts are there."""
    clean_slurm.client("scontrol", "update", "NodeName=node3", "State=DRAIN", f"Reason={REASON}")
    assert not (tmp_path / "mark").exists()
    _health(tmp_path, clean_slurm, "node3", mounted=True)
    assert "DRAIN" not in _node(clean_slurm, "node3")[0]
    assert not (tmp_path / "mark").exists()


def test_a_boot_run_before_slurmctld_answers_leaves_the_look_to_the_next_run(
    clean_slurm: LocalSlurm, tmp_path: Path
) -> None:
    """slurmd runs HealthCheckProgram once as it starts, which can be before slurmctld answers, and after that only when
    slurmctld asks it to (REQUEST_HEALTH_CHECK every HealthCheckInterval), killing it after 60 s (SchedMD/slurm
    slurm-25-11-5-1 src/slurmd/slurmd/slurmd.c l.543-544 and l.3318, src/slurmd/slurmd/req.c l.2665-2679,
    src/slurmctld/controller.c l.2785-2801; slurm-22-05-8-1 slurmd.c l.395 and l.2870). So the boot pass asks once per
    slurmctld's own request, never in a loop of its own: here the start-up run finds no slurmctld (its scontrol bounded
    by `timeout 5`), exits 0 and keeps the mark, and the next run, with slurmctld there, resumes the drain this
    program left on an earlier VM."""
    clean_slurm.client("scontrol", "update", "NodeName=node3", "State=DRAIN", f"Reason={REASON}")
    with socket.socket() as s:  # a loopback port nothing listens on: no slurmctld answers there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    away = tmp_path / "away"
    away.mkdir()
    conf = clean_slurm.conf.read_text()
    (away / "slurm.conf").write_text(re.sub(r"^SlurmctldPort=\d+$", f"SlurmctldPort={port}", conf, flags=re.M))
    assert (away / "slurm.conf").read_text() != conf
    _health(tmp_path, LocalSlurm(root=away, nodes=[]), "node3", mounted=True)
    assert (tmp_path / "boot").exists() and (tmp_path / "mark").exists()
    assert _node(clean_slurm, "node3")[1] == REASON
    _health(tmp_path, clean_slurm, "node3", mounted=True)
    assert "DRAIN" not in _node(clean_slurm, "node3")[0]
    assert not (tmp_path / "mark").exists()


@pytest.mark.parametrize("reason", ["admin: reseat the DIMM", "hpclz: gate passive failed: HPCLZ-VFY-001"])
def test_a_drain_of_another_owner_is_neither_replaced_nor_lifted(
    clean_slurm: LocalSlurm, tmp_path: Path, reason: str
) -> None:
    """An admin's drain, or the gate's."""
    clean_slurm.client("scontrol", "update", "NodeName=node2", "State=DRAIN", f"Reason={reason}")
    _health(tmp_path, clean_slurm, "node2", mounted=False)
    assert _node(clean_slurm, "node2")[1] == reason
    _health(tmp_path, clean_slurm, "node2", mounted=True)
    state, kept = _node(clean_slurm, "node2")
    assert ("DRAIN" in state, kept) == (True, reason)
