"""Live progress for deploy and destroy: a rich table in a terminal, one plain line per event otherwise."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

STYLE = {
    "succeeded": "green",
    "skipped": "dim",
    "failed": "bold red",
    "blocked": "yellow",
    "interrupted": "yellow",
    "attached": "cyan",
    "submitted": "cyan",
}


class Progress:
    """Feed it runner events (`hpclz.deploy.runner.Event`); use as a context manager around the run."""

    def __init__(self, out: Console, names: list[str], live: bool | None = None):
        self.out = out
        self.live_mode = sys.stderr.isatty() if live is None else live
        self.rows: dict[str, list[str]] = {n: ["waiting", ""] for n in names}
        self._lock = threading.Lock()
        self._live: Any = None
        self._start = time.monotonic()

    def __enter__(self) -> Progress:
        if self.live_mode:
            from rich.live import Live

            self._live = Live(self._table(), console=self.out, refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.__exit__(None, None, None)

    def _table(self) -> Any:
        from rich.table import Table

        table = Table(box=None, show_header=True, header_style="bold")
        table.add_column("deployment")
        table.add_column("status")
        table.add_column("last resource operation", overflow="fold")
        for name, (status, detail) in self.rows.items():
            style = STYLE.get(status, "")
            table.add_row(name, f"[{style}]{status}[/]" if style else status, detail)
        return table

    def __call__(self, event: Any) -> None:
        step = str(event.step)
        with self._lock:
            row = self.rows.setdefault(event.deployment, ["waiting", ""])
            if step == "resource":
                row[0] = "running"
                row[1] = f"{event.resource_type}/{event.resource_name}: {event.state}"
            else:
                row[0] = step
                if event.message:
                    row[1] = event.message
            if self._live is not None:
                self._live.update(self._table())
                return
        elapsed = time.monotonic() - self._start
        if step == "resource":
            text = f"{event.deployment}: {event.resource_type}/{event.resource_name} {event.state}"
        else:
            text = f"{event.deployment}: {step}" + (f" - {event.message}" if event.message else "")
        self.out.print(f"[dim]{elapsed:6.1f}s[/] {text}", markup=True, highlight=False)
