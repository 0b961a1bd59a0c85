"""The node's Scheduled Events watcher against a local instance-metadata stand-in: with recording Slurm tools, and
with the real Slurm daemons (tests/support/slurm.py; the power-saving variant, tests/support/slurm_power.py, for an
evicted node), the boot tier of hpclz's gate reading the verify fixtures."""

from __future__ import annotations

import email.utils
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.support import slurm as harness
from tests.support import slurm_power, trixie_slurm
from tests.support.local_http import serve
from tests.support.remediation import FAULTS, GOOD
from tests.support.slurm import LocalSlurm
from tests.support.slurm_power import wait_until

slurm_cluster = harness.slurm_cluster
clean_slurm = harness.clean_slurm
power_cluster = slurm_power.power_cluster

WATCHER = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "scheduled_events.py"


class FakeImds(BaseHTTPRequestHandler):
    events: ClassVar[dict[str, Any]] = {}
    acknowledged: ClassVar[list[Any]] = []
    polls: ClassVar[int] = 0
    # Where an acknowledgement is also written, after the stand-in tools' calls, to show what came before it.
    log: ClassVar[Path | None] = None

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        if "/scheduledevents" in self.path:
            FakeImds.polls += 1
        body = "vm-node-1" if "/compute/name" in self.path else json.dumps(self.events)
        self._reply(body)

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        FakeImds.acknowledged.append(json.loads(self.rfile.read(length)))
        if FakeImds.log:
            with FakeImds.log.open("a", encoding="utf-8") as log:
                log.write(f"acknowledge {FakeImds.acknowledged[-1]['StartRequests'][0]['EventId']}\n")
        self._reply("")

    def _reply(self, body: str) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def imds() -> Iterator[str]:
    FakeImds.acknowledged = []
    FakeImds.log = None
    with serve(FakeImds) as url:
        yield url


def _slurm_tools(folder: Path, log: Path, node_line: str) -> None:
    """scontrol and squeue stand-ins that record their arguments (squeue reports two jobs; `scontrol show node`
    prints `node_line`, a real capture)."""
    (folder / "node.txt").write_text(node_line, encoding="utf-8")
    for tool, output in (("scontrol", f"cat {folder / 'node.txt'}"), ("squeue", "printf '101\\n102\\n'")):
        script = folder / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n{output}\n', encoding="utf-8")
        script.chmod(0o755)


# `scontrol show node -o` of an idle node, then of one a roll marked (Slurm 22.05.8, tests/fixtures/slurm/README.md).
ROLL_CAPTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "scontrol-show-node-roll.txt").read_text()
IDLE_LINE = ROLL_CAPTURE.splitlines()[0].replace("State=IDLE+DRAIN+POWER_DOWN", "State=IDLE").split(" Reason=")[0]


def _run(
    tmp_path: Path,
    imds: str,
    events: list[dict[str, Any]],
    drain_on: list[str],
    node_line: str = IDLE_LINE,
    extra: dict[str, Any] | None = None,
) -> list[str]:
    FakeImds.events = {"DocumentIncarnation": 1, "Events": events}
    settings = tmp_path / "settings.json"
    boot = tmp_path / "boot_id"
    boot.write_text("boot-1\n", encoding="utf-8")
    records = str(tmp_path / "records.json")
    watcher = {"drain_on": drain_on, "requeue_jobs": True, "records": records, "boot_id": str(boot), **(extra or {})}
    settings.write_text(json.dumps(watcher), encoding="utf-8")
    log = tmp_path / "calls.log"
    _slurm_tools(tmp_path, log, node_line)
    env = {**os.environ, "HPCLZ_IMDS_URL": imds, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, str(WATCHER), str(settings), "--once"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _event(kind: str, resources: list[str], not_before: str = "Mon, 19 Sep 2016 18:29:47 GMT") -> dict[str, Any]:
    return {
        "EventId": f"E-{kind}",
        "EventType": kind,
        "ResourceType": "VirtualMachine",
        "Resources": resources,
        "EventStatus": "Scheduled",
        "NotBefore": not_before,
    }


def _soon(seconds: int = 120) -> str:
    """A NotBefore `seconds` from now, as IMDS writes it (RFC 1123, "Mon, 19 Sep 2016 18:29:47 GMT")."""
    return email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=seconds), usegmt=True)


def test_drains_requeues_and_acknowledges_an_event_for_this_vm(tmp_path: Path, imds: str) -> None:
    calls = _run(tmp_path, imds, [_event("Reboot", ["vm-node-1"])], ["Reboot", "Preempt"])
    node = os.uname().nodename.split(".")[0]
    # Asked whether Slurm knows the host's name now, then the node's state, under the same name.
    assert calls[:2] == [f"scontrol show node {node} -o"] * 2
    reason = "reason=hpclz: scheduled-event Reboot E-Reboot not before Mon, 19 Sep 2016 18:29:47 GMT"
    assert calls[2] == f"scontrol update nodename={node} state=drain {reason}"
    assert calls[3:] == ["squeue -h -w " + node + " -o %i", "scontrol requeue 101", "scontrol requeue 102"]
    assert FakeImds.acknowledged == [{"StartRequests": [{"EventId": "E-Reboot"}]}]


def test_ignores_other_vms_and_event_types_not_configured(tmp_path: Path, imds: str) -> None:
    events = [_event("Reboot", ["vm-other"]), _event("Freeze", ["vm-node-1"])]
    assert _run(tmp_path, imds, events, ["Reboot"]) == []
    assert FakeImds.acknowledged == []


@pytest.mark.parametrize("line", ROLL_CAPTURE.splitlines(), ids=["marked", "powering-down", "powered-down"])
def test_a_node_hpclz_is_rolling_keeps_the_rolls_drain_and_reason(tmp_path: Path, imds: str, line: str) -> None:
    """`hpclz nodes roll` drained it already, for power down: the watcher must not drain it again (which would
    replace the roll's reason); it still requeues the jobs and lets Azure start the maintenance."""
    calls = _run(tmp_path, imds, [_event("Reboot", ["vm-node-1"])], ["Reboot"], node_line=line)
    node = os.uname().nodename.split(".")[0]
    assert not [c for c in calls if c.startswith("scontrol update")]
    assert calls[:2] == [f"scontrol show node {node} -o"] * 2
    assert "scontrol requeue 101" in calls
    assert FakeImds.acknowledged == [{"StartRequests": [{"EventId": "E-Reboot"}]}]


# A node's /proc/self/mounts with its Lustre client mount (the fstab line _mounts.sh.j2 writes; util-linux's mount
# lists a Lustre client by that device and type) and the root file system.
MOUNTS = "/dev/sda1 / ext4 rw,relatime 0 0\n10.0.0.4@tcp:/lustrefs /lustre lustre rw,flock,lazystatfs 0 0\n"


def _lustre(tmp_path: Path, umount: str, seconds: int = 20) -> dict[str, Any]:
    """The watcher's unmount settings for /lustre, and a `umount` stand-in that records its arguments in calls.log,
    then runs the shell text `umount` (its exit status is umount's)."""
    log = tmp_path / "calls.log"
    FakeImds.log = log
    script = tmp_path / "umount"
    script.write_text(f'#!/bin/sh\necho "umount $*" >> {log}\n{umount}\n', encoding="utf-8")
    script.chmod(0o755)
    (tmp_path / "mounts").write_text(MOUNTS, encoding="utf-8")
    return {"unmount": ["/lustre"], "mounts": str(tmp_path / "mounts"), "unmount_seconds": seconds}


@pytest.mark.parametrize("kind", ["Preempt", "Terminate"])
def test_an_evicted_node_unmounts_lustre_after_the_requeue_and_before_the_acknowledgement(
    tmp_path: Path, imds: str, kind: str
) -> None:
    """AMLFS: unmount "before stopping, deallocating, or rebooting Lustre client VMs", else the servers evict the
    client and the other clients pause "for up to 15 minutes" (MicrosoftDocs/azure-stack-docs@2c9f8ee
    azure-managed-lustre/troubleshoot-performance.md, Symptom 2). After the power down, so that Slurm has the node
    whatever the unmount takes (a Preempt's VM goes at NotBefore, acknowledged or not), before the acknowledgement."""
    settings = _lustre(tmp_path, "exit 0")
    calls = _run(tmp_path, imds, [_event(kind, ["vm-node-1"], _soon())], [kind], extra=settings)
    node = os.uname().nodename.split(".")[0]
    assert calls[-5:] == [
        "scontrol requeue 101",
        "scontrol requeue 102",
        f"scontrol update nodename={node} state=power_down_force",
        "umount /lustre",
        f"acknowledge E-{kind}",
    ]


def test_an_eviction_at_its_notbefore_gets_only_the_lazy_unmount(tmp_path: Path, imds: str) -> None:
    """Azure "Preempt | 30 seconds" of notice (learn.microsoft.com/azure/virtual-machines/linux/scheduled-events,
    "Event scheduling"): with no time left before NotBefore the watcher does not wait on a plain umount; it detaches
    the mount lazily and acknowledges at once."""
    settings = _lustre(tmp_path, 'case "$1" in -l) exit 0 ;; *) exec sleep 600 ;; esac')
    calls = _run(tmp_path, imds, [_event("Preempt", ["vm-node-1"], _soon(3))], ["Preempt"], extra=settings)
    assert [c for c in calls if c.startswith("umount")] == ["umount -l /lustre"]
    assert calls[-1] == "acknowledge E-Preempt"


def test_a_busy_lustre_is_unmounted_once_the_requeued_jobs_let_go(tmp_path: Path, imds: str) -> None:
    """umount(8) fails on a file system in use ("target is busy") while slurmd still kills the requeued jobs'
    processes: tried again, and no lazy unmount once it succeeds."""
    first = tmp_path / "busy-once"
    busy = f'if [ ! -e {first} ]; then touch {first}; echo "umount: /lustre: target is busy." >&2; exit 32; fi'
    calls = _run(
        tmp_path, imds, [_event("Terminate", ["vm-node-1"], _soon())], ["Terminate"], extra=_lustre(tmp_path, busy)
    )
    assert [c for c in calls if c.startswith("umount")] == ["umount /lustre", "umount /lustre"]
    assert calls[-1] == "acknowledge E-Terminate"


def test_a_hanging_umount_is_cut_short_lazily_unmounted_and_the_event_still_acknowledged(
    tmp_path: Path, imds: str
) -> None:
    """A plain umount that never returns (a Lustre server out of reach) is killed once its time is up; a lazy one
    follows and the watcher acknowledges, instead of hanging until the eviction (_run's own timeout would fail)."""
    hang = 'case "$1" in -l) exit 0 ;; *) exec sleep 600 ;; esac'
    settings = _lustre(tmp_path, hang, seconds=1)
    calls = _run(tmp_path, imds, [_event("Preempt", ["vm-node-1"], _soon())], ["Preempt"], extra=settings)
    assert [c for c in calls if c.startswith("umount")] == ["umount /lustre", "umount -l /lustre"]
    assert calls[-1] == "acknowledge E-Preempt"


def test_a_terminate_for_a_node_slurm_is_powering_down_still_unmounts_lustre_and_changes_no_state(
    tmp_path: Path, imds: str
) -> None:
    """The Terminate CycleCloud's deletion of a node Slurm suspended sends (EnableTerminateNotification): the node is
    IDLE+POWERING_DOWN (the capture's second line), so no drain and no second power down, but the unmount AMLFS asks
    for before the VM goes is kept; hpclz-health drains no such node (tests/render/test_mount_failure.py)."""
    line = ROLL_CAPTURE.splitlines()[1]
    assert "State=IDLE+POWERING_DOWN " in line
    settings = _lustre(tmp_path, "exit 0")
    calls = _run(tmp_path, imds, [_event("Terminate", ["vm-node-1"], _soon())], ["Terminate"], line, settings)
    assert not [c for c in calls if c.startswith("scontrol update")]
    assert calls[-2:] == ["umount /lustre", "acknowledge E-Terminate"]


@pytest.mark.parametrize("kind", ["Reboot", "Redeploy", "Freeze"])
def test_a_vm_that_comes_back_keeps_its_lustre_mounted(tmp_path: Path, imds: str, kind: str) -> None:
    calls = _run(tmp_path, imds, [_event(kind, ["vm-node-1"])], [kind], extra=_lustre(tmp_path, "exit 0"))
    assert not [c for c in calls if c.startswith("umount")]
    assert calls[-1] == f"acknowledge E-{kind}"


def test_a_lustre_not_mounted_is_left_alone(tmp_path: Path, imds: str) -> None:
    settings = _lustre(tmp_path, "exit 0")
    (tmp_path / "mounts").write_text(MOUNTS.splitlines()[0] + "\n", encoding="utf-8")
    calls = _run(tmp_path, imds, [_event("Terminate", ["vm-node-1"], _soon())], ["Terminate"], extra=settings)
    assert not [c for c in calls if c.startswith("umount")]
    assert calls[-1] == "acknowledge E-Terminate"


# -- with the real Slurm daemons -------------------------------------------------------------------------------------


def _settings(tmp_path: Path, node: str, fixtures: Path | None = None) -> Path:
    """The watcher's settings as the node script renders them, but with a host name file (the watcher's test-only
    stand-in for the host name) naming `node` of the test cluster, a boot id file the test rewrites to stand for a
    reboot, and the boot gate run from this checkout against verify fixtures."""
    boot = tmp_path / "boot_id"
    if not boot.exists():
        boot.write_text("boot-1\n", encoding="utf-8")
    hostname = tmp_path / "hostname"
    hostname.write_text(node + "\n", encoding="utf-8")
    state = tmp_path / "gate-state"
    gate = [sys.executable, "-m", "hpclz.verify.gate", "boot", "--budget", "30", "--state", str(state)]
    gate += ["--", "--fixtures", str(fixtures or GOOD)]
    settings = {
        "drain_on": ["Freeze", "Reboot", "Redeploy", "Preempt", "Terminate"],
        "requeue_jobs": True,
        "hostname_file": str(hostname),
        "records": str(tmp_path / "records.json"),
        "boot_id": str(boot),
        "gate": gate,
    }
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


def _watch(cluster: LocalSlurm, imds: str, settings: Path, events: list[dict[str, Any]]) -> None:
    """One poll of the watcher (its `--once`) with Azure listing `events` for vm-node-1."""
    _watch_with(cluster.env, imds, settings, events)


def _watch_with(env: dict[str, str], imds: str, settings: Path, events: list[dict[str, Any]]) -> None:
    FakeImds.events = {"DocumentIncarnation": 1, "Events": events}
    env = {**env, "HPCLZ_IMDS_URL": imds}
    done = subprocess.run(
        [sys.executable, str(WATCHER), str(settings), "--once"], env=env, capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, done.stderr
    # The watcher reports a failed Slurm or metadata call on stderr and carries on: none may happen here.
    errors = [line for line in done.stderr.splitlines() if line.startswith("hpclz-scheduled-events: ")]
    assert all("kept drained" in line for line in errors), done.stderr


def _reboot(tmp_path: Path) -> None:
    (tmp_path / "boot_id").write_text("boot-2\n", encoding="utf-8")


def _node(cluster: LocalSlurm, node: str) -> tuple[list[str], str]:
    shown = cluster.client("scontrol", "show", "node", node, "-o")
    state = next(t for t in shown.split() if t.startswith("State=")).removeprefix("State=").split("+")
    reason = shown.split(" Reason=", 1)[1].split(" [", 1)[0] if " Reason=" in shown else ""
    return state, reason


def test_a_watcher_drain_is_lifted_once_the_rebooted_node_passes_its_boot_gate(
    clean_slurm: LocalSlurm, imds: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, "node1")
    _watch(clean_slurm, imds, settings, [_event("Reboot", ["vm-node-1"])])
    state, reason = _node(clean_slurm, "node1")
    assert "DRAIN" in state and reason.startswith("hpclz: scheduled-event Reboot E-Reboot not before")
    # Azure still lists the event, or the VM has not rebooted yet: the drain stays.
    _watch(clean_slurm, imds, settings, [_event("Reboot", ["vm-node-1"])])
    _watch(clean_slurm, imds, settings, [])
    assert "DRAIN" in _node(clean_slurm, "node1")[0]
    _reboot(tmp_path)
    # The watcher starts again with the VM and may see the event once more before Azure stops listing it.
    _watch(clean_slurm, imds, settings, [_event("Reboot", ["vm-node-1"])])
    assert "DRAIN" in _node(clean_slurm, "node1")[0]
    _watch(clean_slurm, imds, settings, [])
    state, reason = _node(clean_slurm, "node1")
    assert "DRAIN" not in state and reason == ""
    clean_slurm.wait_idle(["node1"])  # back in service (sinfo `idle`, not `drained`)
    assert json.loads((tmp_path / "records.json").read_text()) == {}


def test_a_freeze_drain_is_lifted_once_azure_no_longer_lists_the_event(
    clean_slurm: LocalSlurm, imds: str, tmp_path: Path
) -> None:
    """A Freeze pauses the VM without a reboot: the watcher, still running, gives the node back when the event ends."""
    settings = _settings(tmp_path, "node2")
    _watch(clean_slurm, imds, settings, [_event("Freeze", ["vm-node-1"])])
    _watch(clean_slurm, imds, settings, [_event("Freeze", ["vm-node-1"])])
    assert _node(clean_slurm, "node2")[1].startswith("hpclz: scheduled-event Freeze E-Freeze not before")
    _watch(clean_slurm, imds, settings, [])
    assert "DRAIN" not in _node(clean_slurm, "node2")[0]
    clean_slurm.wait_idle(["node2"])


def test_an_admins_drain_is_never_lifted(clean_slurm: LocalSlurm, imds: str, tmp_path: Path) -> None:
    """node2: an admin drains it after the watcher did; node3: an admin drained it before the event came."""
    (tmp_path / "n2").mkdir()
    settings2 = _settings(tmp_path / "n2", "node2")
    _watch(clean_slurm, imds, settings2, [_event("Redeploy", ["vm-node-1"])])
    clean_slurm.client("scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=admin: reseat the DIMM")
    (tmp_path / "n3").mkdir()
    settings3 = _settings(tmp_path / "n3", "node3")
    clean_slurm.client("scontrol", "update", "NodeName=node3", "State=DRAIN", "Reason=admin: firmware update")
    _watch(clean_slurm, imds, settings3, [_event("Reboot", ["vm-node-1"])])
    assert _node(clean_slurm, "node3")[1] == "admin: firmware update"  # not replaced by the watcher's
    for folder, settings in ((tmp_path / "n2", settings2), (tmp_path / "n3", settings3)):
        _reboot(folder)
        _watch(clean_slurm, imds, settings, [])
    assert _node(clean_slurm, "node2") == (["IDLE", "DRAIN"], "admin: reseat the DIMM")
    assert _node(clean_slurm, "node3") == (["IDLE", "DRAIN"], "admin: firmware update")


def test_a_failed_boot_gate_keeps_the_node_drained_with_the_gates_reason(
    clean_slurm: LocalSlurm, imds: str, tmp_path: Path
) -> None:
    settings = _settings(tmp_path, "node4", fixtures=FAULTS / "xid79")
    _watch(clean_slurm, imds, settings, [_event("Reboot", ["vm-node-1"])])
    _reboot(tmp_path)
    _watch(clean_slurm, imds, settings, [])
    state, reason = _node(clean_slurm, "node4")
    assert "DRAIN" in state and reason.startswith("hpclz: gate boot failed: HPCLZ-VFY-006")
    _watch(clean_slurm, imds, settings, [])  # and a later poll does not resume it either
    assert "DRAIN" in _node(clean_slurm, "node4")[0]


@pytest.mark.parametrize("kind", ["Preempt", "Terminate"])
def test_an_evicted_node_is_handed_to_power_saving_not_left_down_and_drained(
    power_cluster: LocalSlurm, imds: str, tmp_path: Path, kind: str
) -> None:
    node = "cc1" if kind == "Preempt" else "cc2"
    job = power_cluster.client(
        "sbatch", "--parsable", "-p", "hpc", "-w", node, "-o", str(tmp_path / "job.out"), "--wrap", "sleep 600"
    ).strip()
    wait_until(lambda: power_cluster.client("squeue", "-h", "-j", job, "-o", "%T").strip() == "RUNNING", "job runs")
    _watch(power_cluster, imds, _settings(tmp_path, node), [_event(kind, ["vm-node-1"])])
    wait_until(lambda: "POWERED_DOWN" in _node(power_cluster, node)[0], f"{node} powered down")
    state = _node(power_cluster, node)[0]
    assert "DRAIN" not in state and "DOWN" not in state and state[0] == "IDLE"
    # The job was requeued, not cancelled: it waits to run again.
    assert power_cluster.client("squeue", "-h", "-j", job, "-o", "%T").strip() == "PENDING"
    power_cluster.client("scancel", job)


def test_a_watcher_started_before_the_host_takes_its_slurm_name_acts_under_that_name(
    power_cluster: LocalSlurm, imds: str, tmp_path: Path
) -> None:
    """CloudInit starts the watcher before cyclecloud-slurm renames the host to its Slurm node name
    (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py set_hostname l.1027-1049, called at l.1143, under
    jetpack, which runs after CloudInit). The watcher runs here as the service does, polling, with the host name file
    first naming the VM (no Slurm node): the event waits unacknowledged; once the host carries cc3's name (an FQDN,
    as `hostname` may print), the next poll requeues cc3's job and powers cc3 down as for a node started under it."""
    job = power_cluster.client(
        "sbatch", "--parsable", "-p", "hpc", "-w", "cc3", "-o", str(tmp_path / "job.out"), "--wrap", "sleep 600"
    ).strip()
    wait_until(lambda: power_cluster.client("squeue", "-h", "-j", job, "-o", "%T").strip() == "RUNNING", "job runs")
    settings = _settings(tmp_path, "vm-node-1")  # the host name before the rename: Slurm knows no such node
    watcher = {**json.loads(settings.read_text(encoding="utf-8")), "poll_seconds": 0.2}
    settings.write_text(json.dumps(watcher), encoding="utf-8")
    FakeImds.events = {"DocumentIncarnation": 1, "Events": [_event("Preempt", ["vm-node-1"])]}
    FakeImds.polls = 0
    log = tmp_path / "watcher.log"
    env = {**power_cluster.env, "HPCLZ_IMDS_URL": imds}
    with log.open("w", encoding="utf-8") as out:
        service = subprocess.Popen([sys.executable, str(WATCHER), str(settings)], env=env, stdout=out, stderr=out)
        try:
            wait_until(lambda: FakeImds.polls >= 3, "three polls under the pre-rename name")
            assert FakeImds.acknowledged == []
            assert power_cluster.client("squeue", "-h", "-j", job, "-o", "%T").strip() == "RUNNING"
            (tmp_path / "hostname").write_text("cc3.cluster.internal\n", encoding="utf-8")
            wait_until(lambda: FakeImds.acknowledged != [], "the event acknowledged under the node's name")
            wait_until(lambda: "POWERED_DOWN" in _node(power_cluster, "cc3")[0], "cc3 powered down")
        finally:
            service.terminate()
            service.wait(timeout=30)
    assert FakeImds.acknowledged == [{"StartRequests": [{"EventId": "E-Preempt"}]}]
    state = _node(power_cluster, "cc3")[0]
    assert "DRAIN" not in state and "DOWN" not in state and state[0] == "IDLE"
    assert power_cluster.client("squeue", "-h", "-j", job, "-o", "%T").strip() == "PENDING"  # requeued
    assert "Slurm knows no node vm-node-1 (yet): E-Preempt is not acknowledged" in log.read_text(encoding="utf-8")
    power_cluster.client("scancel", job)


@pytest.mark.slurm
def test_an_evicted_node_is_powered_down_on_slurm_24_11_too(imds: str, tmp_path: Path) -> None:
    """The same eviction on Debian trixie's Slurm 24.11 (tests/support/trixie_slurm.py, power saving as CycleCloud
    sets it), nearer the Slurm the cluster runs: POWER_DOWN_FORCE there too ends IDLE+POWERED_DOWN, not drained."""
    trixie_slurm.require_trixie()
    with trixie_slurm.running(["t1", "t2"], "hpc", "", site_specific=True) as cluster:
        job = cluster.client.run("sbatch", "--parsable", "-w", "t1", "-o", "/dev/null", "--wrap", "sleep 600").strip()

        def job_state() -> str:
            return cluster.client.run("squeue", "-h", "-j", job, "-o", "%T").strip()

        cluster.wait_for(lambda: job_state() == "RUNNING", "the job runs")
        settings = _settings(tmp_path, "t1")
        env = {**os.environ, "PATH": f"{cluster.folder / 'bin'}:{os.environ['PATH']}"}
        _watch_with(env, imds, settings, [_event("Preempt", ["vm-node-1"])])

        def state() -> list[str]:
            shown = cluster.scontrol("show", "node", "t1", "-o")
            return next(t for t in shown.split() if t.startswith("State=")).removeprefix("State=").split("+")

        cluster.wait_for(lambda: "POWERED_DOWN" in state(), "t1 powered down")
        assert "DRAIN" not in state() and "DOWN" not in state() and state()[0] == "IDLE"
        assert job_state() == "PENDING"  # requeued, not cancelled
        cluster.client.run("scancel", job)
