"""What a collective run that wrote no result says: the rank's own error, read from the log its ranks share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hpclz.verify.collective_job import job_error


def _traceback() -> list[str]:
    """A real CPython traceback for the import the nodes' python3 fails on (no torch)."""
    run = subprocess.run(
        [sys.executable, "-c", "import hpclz_no_such_module_torch"], capture_output=True, text=True, check=False
    )
    return run.stderr.strip().splitlines()


def test_a_rank_cut_off_after_its_traceback_header_does_not_hide_the_error_another_rank_wrote(tmp_path: Path) -> None:
    # srun --kill-on-bad-exit=1 kills the second rank while it prints: its header is the log's last rank line.
    full = _traceback()
    log = tmp_path / "pair.out"
    log.write_text(
        "\n".join(
            [*full, full[0], "srun: error: node1: task 0: Exited with exit code 1", "slurmstepd: error: *** STEP ***"]
        )
        + "\n"
    )
    assert full[0] == "Traceback (most recent call last):"
    assert job_error(log) == "ModuleNotFoundError: No module named 'hpclz_no_such_module_torch'"


def test_a_chained_exception_answers_with_its_last_error_not_the_chaining_line(tmp_path: Path) -> None:
    code = "try:\n    import hpclz_no_such_module_torch\nexcept ImportError as e:\n    raise RuntimeError('rank: ' + str(e)) from e"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    log = tmp_path / "all.out"
    log.write_text(run.stderr)
    assert "The above exception was the direct cause" in run.stderr
    assert job_error(log) == "RuntimeError: rank: No module named 'hpclz_no_such_module_torch'"


def test_a_log_of_only_frames_still_says_something_and_a_missing_log_says_so(tmp_path: Path) -> None:
    log = tmp_path / "cut.out"
    log.write_text('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n')
    assert job_error(log) == 'File "<string>", line 1, in <module>'
    assert job_error(tmp_path / "none.out") == "no output"
