"""Ctrl-C tests that hold whatever SIGINT disposition the test run inherited.

A shell without job control starts a background job with SIGINT ignored ("If job control is disabled ... the
commands in the list shall inherit from the shell a signal action of ignored (SIG_IGN) for the SIGINT and SIGQUIT
signals", POSIX.1-2017 Shell Command Language 2.11 Signals and Error Handling), children inherit an ignored signal
across exec, and Python turns SIGINT into KeyboardInterrupt only "if the parent process has not changed it"
(docs.python.org/3/library/signal.html). So `scripts/test &` from a script made the Ctrl-C tests' hpclz deaf to
SIGINT. Each such child gets SIGINT back at its default before exec.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


def interruptible() -> None:
    """`preexec_fn` (or the child's side of a fork): SIGINT at its default, as a terminal session has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def parent_ignoring_sigint() -> Iterator[None]:
    """Run the block as a background job of a non-interactive shell would: SIGINT ignored in this process."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
