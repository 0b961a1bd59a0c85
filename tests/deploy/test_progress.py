"""Progress output: a live table in a terminal, one plain line per event in a pipe or log."""

from __future__ import annotations

import io

from rich.console import Console

from hpclz.cli.progress import Progress
from hpclz.deploy.runner import Event, Step

EVENTS = [
    Event("net", Step.SUBMITTED, "network -> rg-net"),
    Event("net", Step.RESOURCE, "", "Microsoft.Network/virtualNetworks", "vnet1", "Running"),
    Event("net", Step.RESOURCE, "", "Microsoft.Network/virtualNetworks", "vnet1", "Succeeded"),
    Event("net", Step.SUCCEEDED, "1 resource operations"),
    Event("compute", Step.BLOCKED, "not started: storage did not succeed"),
]


def test_plain_lines_when_not_a_terminal() -> None:
    buffer = io.StringIO()
    with Progress(Console(file=buffer, width=200), ["net", "compute"], live=False) as progress:
        for event in EVENTS:
            progress(event)
    lines = buffer.getvalue().splitlines()
    assert len(lines) == len(EVENTS)
    assert lines[1].endswith("net: Microsoft.Network/virtualNetworks/vnet1 Running")
    assert lines[4].endswith("compute: blocked - not started: storage did not succeed")


def test_live_table_in_a_terminal_ends_with_every_deployment_state() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=True, color_system=None)
    with Progress(console, ["net", "compute"], live=True) as progress:
        for event in EVENTS:
            progress(event)
    final = buffer.getvalue().split("deployment")[-1]
    assert "net" in final and "succeeded" in final
    assert "compute" in final and "blocked" in final
