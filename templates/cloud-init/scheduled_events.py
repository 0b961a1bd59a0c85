#!/usr/bin/env python3
"""hpclz Scheduled Events watcher: drain this Slurm node before Azure maintenance or eviction, then acknowledge.

Polls the instance metadata service; for an event of a configured type that names this VM, it drains the
node with a reason starting `hpclz:` (so `hpclz verify` and operators can tell it apart), requeues the jobs
running on it when configured, and acknowledges the event so Azure may start it.
"""

import json
import os
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


def imds(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Metadata": "true"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


# Flags Slurm adds to a node on its way to power down (`scontrol show node` State=, e.g. IDLE+DRAIN+POWER_DOWN;
# SchedMD/slurm src/common/slurm_protocol_defs.c node_state_flag_string), as `hpclz nodes roll` leaves it.
POWER_FLAGS = ("POWER_DOWN", "POWERING_DOWN", "POWERED_DOWN")


def rolling(node):
    """Is the node already drained for power down (a roll)? Its own drain, and its reason, are kept then: a
    second drain adds nothing and would replace the roll's reason."""
    shown = subprocess.run(
        ["scontrol", "show", "node", node, "-o"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        check=True,
    ).stdout
    for token in shown.split():
        if token.startswith("State="):
            return any(flag in POWER_FLAGS for flag in token[len("State=") :].split("+"))
    return False


def drain(node, event):
    if rolling(node):
        return
    reason = "hpclz: " + event["EventType"] + " " + event["EventId"] + " not before " + event.get("NotBefore", "")
    subprocess.run(["scontrol", "update", "nodename=" + node, "state=drain", "reason=" + reason], check=True)


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


def main(settings_file, once=False):
    with open(settings_file) as handle:
        settings = json.load(handle)
    drain_on = set(settings["drain_on"])
    node = socket.gethostname().split(".")[0]
    vm_name = imds(NAME_URL).strip()
    handled = set()
    while True:
        try:
            document = json.loads(imds(EVENTS_URL))
            for event in document.get("Events", []):
                mine = vm_name in event.get("Resources", [])
                if event["EventId"] in handled or not mine or event["EventType"] not in drain_on:
                    continue
                drain(node, event)
                if settings["requeue_jobs"]:
                    requeue(node)
                imds(EVENTS_URL, {"StartRequests": [{"EventId": event["EventId"]}]})
                handled.add(event["EventId"])
        except (OSError, ValueError, KeyError, subprocess.CalledProcessError) as exc:
            print("hpclz-scheduled-events: " + str(exc), file=sys.stderr)
        if once:
            return
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    main(sys.argv[1], once="--once" in sys.argv[2:])
