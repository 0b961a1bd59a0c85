"""The two confirmation points (deploy, destroy) on a real terminal: "no" cancels, Ctrl-C aborts.

docs/exit-codes.md: answering no exits 1 and prints `cancelled`; Ctrl-C (or end of input) at the prompt
exits 130. Both leave Azure and the state as they were. hpclz runs on a pseudo-terminal because without
one it refuses to prompt at all (tests/deploy/test_cycle.py covers that refusal).
"""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import RunCli
from tests.deploy.conftest import HPCLZ, state_of
from tests.support.arm_standin import ArmStandIn
from tests.support.signals import interruptible, parent_ignoring_sigint

PROMPT = b"[y/N]"


def _on_a_terminal(args: list[str], keys: bytes, timeout: float = 90) -> tuple[int, str]:
    """Run hpclz with a pty as its controlling terminal, type `keys` at its prompt; exit code and screen."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once, so nothing of pytest runs here
        interruptible()  # whatever SIGINT disposition the test run inherited (tests/support/signals.py)
        os.execv(HPCLZ[0], [HPCLZ[0], *args])
    screen = b""
    deadline = time.monotonic() + timeout
    typed = False
    while time.monotonic() < deadline:
        if not typed and PROMPT in screen:
            os.write(fd, keys)
            typed = True
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal on exit
            break
        if not chunk:
            break
        screen += chunk
    else:  # the deadline, the terminal still open: stop hpclz, so the test fails here with its screen, not at the timeout
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
        raise AssertionError(
            f"hpclz still running after {timeout:g} s (typed: {typed}): {screen.decode(errors='replace')}"
        )
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert typed, f"no prompt seen: {screen.decode(errors='replace')}"
    return os.waitstatus_to_exitcode(status), screen.decode(errors="replace")


def test_no_at_the_deploy_prompt_cancels_with_exit_1_and_deploys_nothing(arm: ArmStandIn, zone: Path) -> None:
    code, screen = _on_a_terminal(["deploy", str(zone)], b"n\r")
    assert code == 1, screen
    assert "cancelled: nothing deployed" in screen
    assert arm.world.deployments == {}
    assert not list((zone.parent / ".hpclz").rglob("state.json"))  # no state started either


def test_ctrl_c_at_the_deploy_prompt_exits_130_and_deploys_nothing(arm: ArmStandIn, zone: Path) -> None:
    with parent_ignoring_sigint():  # as under `scripts/test &` from a script: the child must not inherit it
        code, screen = _on_a_terminal(["deploy", str(zone)], b"\x03")  # the terminal turns ^C into SIGINT
    assert code == 130, screen
    assert "internal error" not in screen
    assert arm.world.deployments == {}


def test_no_at_the_destroy_prompt_cancels_with_exit_1_and_deletes_nothing(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    before = set(arm.world.resources)
    code, screen = _on_a_terminal(["destroy", str(zone)], b"n\r")
    assert code == 1, screen
    assert "cancelled: nothing deleted" in screen
    assert set(arm.world.resources) == before
    assert state_of(zone)["resources"]


def test_end_of_input_at_the_destroy_prompt_exits_130(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    before = set(arm.world.resources)
    code, screen = _on_a_terminal(["destroy", str(zone)], b"\x04")  # ^D: click aborts the prompt
    assert code == 130, screen
    assert "internal error" not in screen
    assert set(arm.world.resources) == before
