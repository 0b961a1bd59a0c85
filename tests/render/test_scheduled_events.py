"""The node's Scheduled Events watcher against a local instance-metadata stand-in and recording Slurm tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.support.local_http import serve

WATCHER = Path(__file__).resolve().parents[2] / "templates" / "cloud-init" / "scheduled_events.py"


class FakeImds(BaseHTTPRequestHandler):
    events: ClassVar[dict[str, Any]] = {}
    acknowledged: ClassVar[list[Any]] = []

    def do_GET(self) -> None:
        assert self.headers["Metadata"] == "true"
        body = "vm-node-1" if "/compute/name" in self.path else json.dumps(self.events)
        self._reply(body)

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        FakeImds.acknowledged.append(json.loads(self.rfile.read(length)))
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
    tmp_path: Path, imds: str, events: list[dict[str, Any]], drain_on: list[str], node_line: str = IDLE_LINE
) -> list[str]:
    FakeImds.events = {"DocumentIncarnation": 1, "Events": events}
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"drain_on": drain_on, "requeue_jobs": True}), encoding="utf-8")
    log = tmp_path / "calls.log"
    _slurm_tools(tmp_path, log, node_line)
    env = {**os.environ, "HPCLZ_IMDS_URL": imds, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, str(WATCHER), str(settings), "--once"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _event(kind: str, resources: list[str]) -> dict[str, Any]:
    return {
        "EventId": f"E-{kind}",
        "EventType": kind,
        "ResourceType": "VirtualMachine",
        "Resources": resources,
        "EventStatus": "Scheduled",
        "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT",
    }


def test_drains_requeues_and_acknowledges_an_event_for_this_vm(tmp_path: Path, imds: str) -> None:
    calls = _run(tmp_path, imds, [_event("Reboot", ["vm-node-1"])], ["Reboot", "Preempt"])
    node = os.uname().nodename.split(".")[0]
    assert calls[0] == f"scontrol show node {node} -o"
    assert calls[1].startswith(f"scontrol update nodename={node} state=drain reason=hpclz: Reboot E-Reboot")
    assert calls[2:] == ["squeue -h -w " + node + " -o %i", "scontrol requeue 101", "scontrol requeue 102"]
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
    assert calls[0] == f"scontrol show node {node} -o"
    assert "scontrol requeue 101" in calls
    assert FakeImds.acknowledged == [{"StartRequests": [{"EventId": "E-Reboot"}]}]
