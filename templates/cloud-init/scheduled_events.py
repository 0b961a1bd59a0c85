#!/usr/bin/env python3
"""hpclz Scheduled Events watcher: drain this Slurm node before Azure maintenance or eviction, then acknowledge;
give the node back to Slurm once the event is over.

Polls the instance metadata service; for an event of a configured type that names this VM, it drains the
node with a reason starting `hpclz: scheduled-event <EventType> <EventId>` (so `hpclz verify`, operators and this
watcher can tell its own drain from any other), requeues the jobs running on it when configured, and acknowledges
the event so Azure may start it. What comes after depends on whether the VM comes back
(learn.microsoft.com/azure/virtual-machines/linux/scheduled-events, "Event properties", EventType: Reboot "the
Virtual Machine is scheduled for reboot", Redeploy "scheduled to move to another node"; Preempt "the Spot Virtual
Machine is being deleted", Terminate "the virtual machine is scheduled to be deleted"):
- Reboot, Redeploy: the VM, its OS disk and this watcher (a systemd service) come back. Nothing in Slurm or
  CycleCloud lifts the drain then: ReturnToService=2 (cyclecloud-slurm's slurm.conf.template l.3 @50e6739) returns a
  DOWN node, not a DRAINED one (slurm.conf(5), ReturnToService), and cyclecloud-slurm's `azslurm return_to_idle`
  acts only on CLOUD nodes that are DOWN and POWERED_DOWN (Azure/cyclecloud-slurm@50e6739 azure-slurm/slurmcc/
  cli.py l.469-510). So the watcher keeps a record of each drain with the boot it was made in; once this VM runs
  a later boot, the event is no longer listed and slurmd has registered, it runs hpclz's boot health gate
  (`gate boot`, hpclz.verify.gate) and resumes the node only if the gate passed and the drain is still its own:
  a drain whose reason an admin, a health check or the gate has since replaced is never lifted. A Freeze (a pause
  of seconds, no reboot) is given back the same way once Azure no longer lists it.
- Preempt, Terminate: the VM goes away, so slurmd never registers again, ReturnToService never applies and the node
  stayed DOWN+DRAIN for good. Instead the watcher hands it to Slurm's power saving with
  `State=POWER_DOWN_FORCE` ("Will cancel all jobs on the node, power it down, and reset its state to IDLE",
  scontrol(1) of Slurm 22.05, NODE STATE): slurmctld runs the SuspendProgram, cyclecloud-slurm's
  suspend_program.sh, which removes the node in CycleCloud, and the node ends IDLE+POWERED_DOWN (`idle~`), which
  Slurm powers up again (ResumeProgram: CycleCloud creates a new VM) when a job needs it. Its jobs were requeued
  first, so the force cancels none. Then, while slurmd still kills the requeued jobs' processes, it unmounts the
  node's Lustre file systems (settings["unmount"]) before it acknowledges, within the event's NotBefore time (a
  Preempt gives 30 s, and the VM goes then, acknowledged or not): the power down comes first so that Slurm has the
  node whatever the unmount takes. A client that vanishes mounted is evicted by the servers,
  and its eviction pauses the other clients "for up to 15 minutes"; AMLFS says to unmount "(without the use of -f
  or -l) before stopping, deallocating, or rebooting Lustre client VMs" and to "use scheduled events to automate
  unmounting" (learn.microsoft.com/azure/azure-managed-lustre/troubleshoot-performance, Symptom 2; MicrosoftDocs/
  azure-stack-docs@2c9f8ee azure-managed-lustre/troubleshoot-performance.md). Not on a Reboot or Redeploy: the
  VM comes back and fstab mounts it again at boot.
"""

import email.utils
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

# HPCLZ_IMDS_URL points the watcher at a local stand-in in tests; on Azure it is always the link-local address.
IMDS = os.environ.get("HPCLZ_IMDS_URL", "http://169.254.169.254")
EVENTS_URL = IMDS + "/metadata/scheduledevents?api-version=2020-07-01"
NAME_URL = IMDS + "/metadata/instance/compute/name?api-version=2021-02-01&format=text"
POLL_SECONDS = 10
TAG = "hpclz: scheduled-event"
COMES_BACK = ("Reboot", "Redeploy")
# Freeze: "the Virtual Machine is scheduled to pause for a few seconds" (the same page): no reboot, so the watcher
# itself sees the event end (Azure stops listing it) and gives the node back then, through the same gate.
PAUSES = ("Freeze",)
GOES_AWAY = ("Preempt", "Terminate")
# How long a plain `umount` may take, busy ones retried as the requeued jobs' processes exit, before a lazy one; each
# umount also bounded, so the event is acknowledged in time: "Preempt | 30 seconds" of minimum notice
# (learn.microsoft.com/azure/virtual-machines/linux/scheduled-events, "Event scheduling").
UNMOUNT_SECONDS = 20
LAZY_SECONDS = 5
# Kept back from the event's NotBefore for the lazy umount and the acknowledgement.
NOT_BEFORE_MARGIN = LAZY_SECONDS + 2
# Kept on the OS disk, which a reboot and a redeploy keep; the kernel's id of the running boot (proc(5), random).
DEFAULT_RECORDS = "/var/lib/hpclz/scheduled-events-drains.json"
DEFAULT_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def imds(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Metadata": "true"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


# Flags Slurm adds to a node on its way to power down (`scontrol show node` State=, e.g. IDLE+DRAIN+POWER_DOWN;
# SchedMD/slurm src/common/slurm_protocol_defs.c node_state_flag_string), as `hpclz nodes roll` leaves it.
POWER_FLAGS = ("POWER_DOWN", "POWERING_DOWN", "POWERED_DOWN")
# Flags of a node whose slurmd has not (yet) registered: not responding (`*` in sinfo), or down. With
# ReturnToService=2 "a DOWN node will become available for use upon registration with a valid configuration. The
# node could have been set DOWN for any reason" (slurm.conf(5), 22.05), an unexpected reboot included; its drain stays.
UNREGISTERED = ("NOT_RESPONDING", "DOWN")


def show_node(node):
    """(the node's state flags, its reason) from `scontrol show node -o` (Reason= runs to the end of its field)."""
    shown = subprocess.run(
        ["scontrol", "show", "node", node, "-o"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    ).stdout
    flags = []
    for token in shown.split():
        if token.startswith("State="):
            flags = token[len("State=") :].split("+")
    reason = ""
    if " Reason=" in shown:
        reason = shown.split(" Reason=", 1)[1]
        # `Reason=text [user@time]`: the text ends where scontrol appends who set it and when
        reason = reason.split(" [", 1)[0].strip()
    return flags, reason


def rolling(flags):
    """Is the node already drained for power down (a roll)? Its own drain, and its reason, are kept then: a
    second drain adds nothing and would replace the roll's reason."""
    return any(flag in POWER_FLAGS for flag in flags)


def scontrol_update(node, *settings):
    subprocess.run(["scontrol", "update", "nodename=" + node] + list(settings), check=True)


def reason_for(event):
    return ours(event) + " " + event.get("NotBefore", "")


def requeue(node):
    jobs = subprocess.run(
        ["squeue", "-h", "-w", node, "-o", "%i"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    )
    for job in jobs.stdout.split():
        subprocess.run(["scontrol", "requeue", job], check=False)


def bounded(command, seconds):
    """(exit status, stderr) of a command, or (None, why) once it ran `seconds`: then it is killed with its process
    group and not waited for, as a umount stuck in the kernel may never exit."""
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True, start_new_session=True
    )
    try:
        errors = child.communicate(timeout=seconds)[1]
        return child.returncode, errors.strip()
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        child.stderr.close()
        return None, "still running after %s s" % seconds


def mounted(settings):
    # /proc/self/mounts lists mount points without touching them (a stat of a hung Lustre blocks); "mounts" in tests.
    with open(settings.get("mounts", "/proc/self/mounts")) as handle:
        return set(line.split()[1] for line in handle if len(line.split()) > 1)


def seconds_left(event):
    """Seconds until the event's NotBefore (RFC 1123, "Mon, 19 Sep 2016 18:29:47 GMT"), 0 when it is past, empty
    (the event has started) or unreadable."""
    try:
        start = email.utils.parsedate_to_datetime(event.get("NotBefore", ""))
    except (TypeError, ValueError, IndexError):
        return 0.0
    return max(0.0, start.timestamp() - time.time())


def unmount(settings, event):
    """Unmount each of settings["unmount"] that is mounted: a plain umount, tried again while it fails (busy) for
    settings["unmount_seconds"], never past the event's NotBefore less a margin; then, as a last resort, a lazy one
    (umount(8), -l: "Detach the filesystem from the file hierarchy now, and clean up all references to this
    filesystem as soon as it is not busy anymore"). No time left before NotBefore: the lazy one alone."""
    budget = min(settings.get("unmount_seconds", UNMOUNT_SECONDS), seconds_left(event) - NOT_BEFORE_MARGIN)
    present = mounted(settings)
    for point in settings.get("unmount", []):
        if point not in present:
            print("hpclz-scheduled-events: " + point + " not mounted")
            continue
        end = time.monotonic() + budget
        status, why = bounded(["umount", point], budget) if budget >= 1 else (None, "no time left before NotBefore")
        while status not in (0, None) and time.monotonic() + 1 < end:
            time.sleep(1)
            status, why = bounded(["umount", point], end - time.monotonic())
        if status == 0:
            print("hpclz-scheduled-events: unmounted " + point)
            continue
        lazy = bounded(["umount", "-l", point], LAZY_SECONDS)
        print(
            "hpclz-scheduled-events: umount " + point + " failed (" + (why or "exit %s" % status) + "); lazy umount: "
            + ("done" if lazy[0] == 0 else lazy[1] or "exit %s" % lazy[0]),
            file=sys.stderr,
        )


def read_boot(settings):
    with open(settings.get("boot_id", DEFAULT_BOOT_ID)) as handle:
        return handle.read().strip()


def load_records(settings):
    try:
        with open(settings.get("records", DEFAULT_RECORDS)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def save_records(settings, records):
    path = settings.get("records", DEFAULT_RECORDS)
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        os.makedirs(folder)
    with open(path + ".tmp", "w") as handle:
        json.dump(records, handle)
    os.replace(path + ".tmp", path)


def ours(event):
    """The start of the reason the watcher drains with for this event, up to its NotBefore time."""
    return TAG + " " + event["EventType"] + " " + event["EventId"] + " not before"


def prepare(node, event, settings):
    """Drain, requeue, and for an event that removes the VM, power the node down. A node a roll holds (drained for
    power down) or one drained already by someone else (an admin, a health check) keeps its drain and reason: the
    watcher neither replaces that reason nor records the drain as its own, so it never lifts it either."""
    flags, reason = show_node(node)
    taken = "DRAIN" in flags and not reason.startswith(TAG)
    if not rolling(flags) and not taken:
        scontrol_update(node, "state=drain", "reason=" + reason_for(event))
        records = load_records(settings)
        # Once only: an event Azure still lists after the reboot (a watcher restarted with the VM handles it again)
        # keeps the boot of its first drain, so the reboot is still seen as one.
        if event["EventType"] in COMES_BACK + PAUSES and event["EventId"] not in records:
            records[event["EventId"]] = {"reason": ours(event), "boot": read_boot(settings), "type": event["EventType"]}
            save_records(settings, records)
    if settings["requeue_jobs"]:
        requeue(node)
    if event["EventType"] in GOES_AWAY and not ("POWERING_DOWN" in flags or "POWERED_DOWN" in flags):
        scontrol_update(node, "state=power_down_force")
    # Also on a node Slurm is already powering down (the Terminate CycleCloud's deletion of a suspended node sends):
    # AMLFS asks for the unmount before the VM stops, by scheduled events (the docstring), and nothing Azure documents
    # says a deletion shuts the guest down first. The drain that unmount once caused is hpclz-health's to leave: it
    # drains no node that is powering down (node.sh.j2).
    if event["EventType"] in GOES_AWAY:
        unmount(settings, event)


def return_node(node, document, settings):
    """Resume the node drained for a Reboot or Redeploy that is over: the VM runs a later boot than the drain's
    (for a Freeze, no reboot is awaited), Azure no longer lists the event, slurmd has registered, the drain is still
    the watcher's, and the boot gate passed. A record whose drain someone else has since taken over (or lifted) is
    dropped without a change."""
    records = load_records(settings)
    if not records:
        return
    boot = read_boot(settings)
    listed = set(e.get("EventId") for e in document.get("Events", []))
    for event_id, record in sorted(records.items()):
        back = record["boot"] != boot or record.get("type") in PAUSES
        if not back or event_id in listed:
            continue
        flags, reason = show_node(node)
        if "DRAIN" not in flags or not reason.startswith(record["reason"]):
            del records[event_id]
            continue
        if any(flag in UNREGISTERED for flag in flags):
            continue  # slurmd has not registered since the boot: ask again at the next poll
        if settings.get("gate_ready") and not os.path.exists(settings["gate_ready"]):
            continue  # the gate is not installed yet (/sched not mounted): ask again at the next poll
        # The gate names the node from SLURMD_NODENAME, as under slurmd (hpclz.verify.gate, --node).
        gate = subprocess.run(settings["gate"], env=dict(os.environ, SLURMD_NODENAME=node), check=False)
        flags, reason = show_node(node)
        if gate.returncode == 0 and "DRAIN" in flags and reason.startswith(record["reason"]):
            scontrol_update(node, "state=resume")
            print("hpclz-scheduled-events: " + node + " resumed after " + record["reason"])
        else:
            print("hpclz-scheduled-events: " + node + " kept drained: " + (reason or "gate failed"), file=sys.stderr)
        del records[event_id]
    save_records(settings, records)


def node_name(settings):
    """The Slurm node name this VM carries now: its short host name, read at each poll, never once at start.

    With slurm.use_nodename_as_hostname, cyclecloud-slurm renames the host to its Slurm node name while it installs
    Slurm (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py set_hostname l.1027-1049, called from main
    at l.1143), and that runs from jetpack, after the node's CloudInit has started this watcher: on a node's first
    boot the watcher starts under the VM's original host name. settings["hostname_file"] stands in for the host name
    in tests only (a file holding it, read the same way); a node's settings never carry it."""
    source = settings.get("hostname_file")
    if source:
        with open(source) as handle:
            name = handle.read().strip()
    else:
        name = socket.gethostname()
    return name.split(".")[0]


def slurm_knows(node):
    """Does slurmctld answer for this node name? Not while the host still carries its pre-rename name: `scontrol show
    node <name>` exits non-zero for a name that is none of Slurm's nodes (exit_code = 1, "Node %s not found",
    SchedMD/slurm src/scontrol/info_node.c; seen on Slurm 22.05 in tests/render/test_scheduled_events.py), and
    while slurmctld cannot be reached."""
    shown = subprocess.run(
        ["scontrol", "show", "node", node, "-o"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False
    )
    return shown.returncode == 0


def main(settings_file, once=False):
    with open(settings_file) as handle:
        settings = json.load(handle)
    drain_on = set(settings["drain_on"])
    # settings["poll_seconds"] only in tests, which run the watcher as a service for several polls.
    poll_seconds = settings.get("poll_seconds", POLL_SECONDS)
    vm_name = imds(NAME_URL).strip()
    handled = set()
    while True:
        try:
            node = node_name(settings)
            document = json.loads(imds(EVENTS_URL))
            for event in document.get("Events", []):
                mine = vm_name in event.get("Resources", [])
                if event["EventId"] in handled or not mine or event["EventType"] not in drain_on:
                    continue
                if not slurm_knows(node):
                    # Not acknowledged: asked again at the next poll, under the name the host carries then. An event
                    # left unacknowledged still starts once its NotBefore time passes ("Once an event is scheduled
                    # it will move into the started state after it is either approved or the not before time
                    # passes", learn.microsoft.com/azure/virtual-machines/linux/scheduled-events, "Event
                    # scheduling"), so the maintenance is never held up, only left undrained if Slurm never answers.
                    print(
                        "hpclz-scheduled-events: Slurm knows no node " + node + " (yet): " + event["EventId"] + " is "
                        "not acknowledged; asked again at the next poll",
                        file=sys.stderr,
                    )
                    break
                prepare(node, event, settings)
                imds(EVENTS_URL, {"StartRequests": [{"EventId": event["EventId"]}]})
                handled.add(event["EventId"])
            return_node(node, document, settings)
        except (OSError, ValueError, KeyError, IndexError, subprocess.CalledProcessError) as exc:
            print("hpclz-scheduled-events: " + str(exc), file=sys.stderr)
        if once:
            return
        time.sleep(poll_seconds)


if __name__ == "__main__":
    main(sys.argv[1], once="--once" in sys.argv[2:])
