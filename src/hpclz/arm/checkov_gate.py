"""Run checkov's ARM checks over rendered templates, with a reviewed allowlist of skipped checks.

checkov costs about 3 s per start, so a plan's templates go into one folder and one run. Skipped checks
vanish from checkov's output, so a second, narrow run (`--check <allowlisted ids>`) tells which allowlisted
checks still fail; one that no longer fails is a stale allowlist entry. The two runs go in parallel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from hpclz.arm.locator import pretty_json
from hpclz.config.source_map import SourceMap, build
from hpclz.errors import ExitCode, HpclzError

CHECKOV_ENV = "HPCLZ_CHECKOV"
REPO_ROOT = Path(__file__).resolve().parents[3]
ALLOWLIST_NAME = "checkov-allowlist.yaml"
CHECK_ID = re.compile(r"^CKV2?_[A-Z0-9]+_\d+$")
# checkov pins libraries hpclz must not share, so users install it on its own (pipx or a separate venv).
NOT_INSTALLED = f"checkov not installed: `pipx install checkov` (or set {CHECKOV_ENV} to its executable)"
TIMEOUT_S = 300  # a plan scans in 10-20 s; minutes mean a check is stuck (see CKV_AZURE_45 in the allowlist)


def find_checkov() -> str | None:
    """$HPCLZ_CHECKOV, the repo's .tools/checkov venv (scripts/install-test-deps), else checkov on PATH."""
    for candidate in (os.environ.get(CHECKOV_ENV), str(REPO_ROOT / ".tools" / "checkov" / "bin" / "checkov")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("checkov")


@dataclass(frozen=True)
class AllowEntry:
    id: str
    reason: str
    index: int  # position in the file's `skips` list, for locating findings
    recheck: bool = True  # False: never re-run to test staleness (a check that cannot run to completion)


@dataclass
class Allowlist:
    entries: list[AllowEntry]
    source: SourceMap

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.entries]

    @property
    def recheck_ids(self) -> list[str]:
        return [e.id for e in self.entries if e.recheck]


def default_allowlist() -> Path:
    """The wheel ships the allowlist under hpclz/_data (pyproject force-include); a checkout has it at its root."""
    packaged = Path(__file__).resolve().parents[1] / "_data" / ALLOWLIST_NAME
    return packaged if packaged.is_file() else REPO_ROOT / ALLOWLIST_NAME


def load_allowlist(path: Path | None = None) -> Allowlist:
    """The allowlist file: `skips: [{id: CKV_..., reason: ..., recheck: true}]`; every entry needs a reason."""
    path = path or default_allowlist()
    try:
        node = YAML(typ="rt").load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HpclzError(f"{path}: checkov allowlist not found", exit_code=ExitCode.FAILED) from None
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise HpclzError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    source = build(str(path), node)
    skips = source.data.get("skips") if isinstance(source.data, dict) else None
    if not isinstance(skips, list):
        raise HpclzError(f"{path}:1: skips: expected a list of {{id, reason}} entries")
    entries = []
    for index, item in enumerate(skips):
        line = source.locate(("skips", index)).line
        if not isinstance(item, dict) or not CHECK_ID.match(str(item.get("id", ""))):
            raise HpclzError(f"{path}:{line}: skips[{index}].id: expected a checkov check ID like CKV_AZURE_1")
        if not str(item.get("reason") or "").strip():
            raise HpclzError(f"{path}:{line}: skips[{index}].reason: every skipped check needs a reason")
        recheck = item.get("recheck", True)
        if not isinstance(recheck, bool):
            raise HpclzError(f"{path}:{line}: skips[{index}].recheck: expected true or false")
        entries.append(AllowEntry(str(item["id"]), str(item["reason"]).strip(), index, recheck))
    return Allowlist(entries, source)


@dataclass(frozen=True)
class CheckovFailure:
    check_id: str
    check_name: str
    file: str  # template file name, as written into the scan folder
    resource: str  # "<type>.<name>", checkov's label
    lines: tuple[int, int]
    guideline: str | None = None


@dataclass
class CheckovRun:
    failures: list[CheckovFailure] = field(default_factory=list)
    still_failing_allowlisted: set[str] = field(default_factory=set)
    still_failing_by_file: dict[str, set[str]] = field(default_factory=dict)  # per template, for the gate cache
    parsing_errors: list[str] = field(default_factory=list)
    resource_count: int = 0
    version: str | None = None


def run_checkov(templates: Mapping[str, dict[str, Any]], allowlist: Allowlist, checkov: str) -> CheckovRun:
    """Scan `templates` (file name -> template) in one folder: failures outside the allowlist, and which
    allowlisted checks still fail."""
    with tempfile.TemporaryDirectory(prefix="hpclz-checkov-") as folder:
        for name, template in templates.items():
            (Path(folder) / name).write_text(pretty_json(template) + "\n", encoding="utf-8")
        base = [checkov, "-d", folder, "--framework", "arm", "-o", "json", "--skip-download", "--quiet"]
        main = _start([*base, *(["--skip-check", ",".join(allowlist.ids)] if allowlist.ids else [])])
        probe = _start([*base, "--check", ",".join(allowlist.recheck_ids)]) if allowlist.recheck_ids else None
        try:
            run = parse_report(_finish(main))
            if probe is not None:
                for failure in parse_report(_finish(probe)).failures:
                    run.still_failing_allowlisted.add(failure.check_id)
                    run.still_failing_by_file.setdefault(failure.file, set()).add(failure.check_id)
        finally:
            for process in (main, probe):
                if process is not None and process.poll() is None:
                    _stop(process)
    return run


def _start(command: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE"}  # with --skip-download: nothing is fetched, offline is fine
    # Its own session, so a timeout can stop checkov together with any worker processes it started.
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )


def _stop(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _finish(process: subprocess.Popen[str]) -> Any:
    try:
        out, err = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _stop(process)
        raise HpclzError(f"checkov did not finish within {TIMEOUT_S} s") from None
    # Exit code 1 only means "some check failed"; any other failure, or output that is not JSON, is checkov's own.
    try:
        if process.returncode not in (0, 1):
            raise ValueError
        return json.loads(out)
    except ValueError:
        tail = (err or out).strip().splitlines()[-1:] or ["no output"]
        raise HpclzError(f"checkov failed (exit {process.returncode}): {tail[0]}") from None


def parse_report(output: Any) -> CheckovRun:
    """checkov prints one report (a dict) per framework, a list when several ran, and a bare summary when
    nothing was scanned."""
    reports = output if isinstance(output, list) else [output]
    run = CheckovRun()
    for report in reports:
        if not isinstance(report, dict):
            continue
        summary: dict[str, Any] = report["summary"] if isinstance(report.get("summary"), dict) else report
        run.resource_count += int(summary.get("resource_count") or 0)
        run.version = summary.get("checkov_version") or run.version
        results: dict[str, Any] = report["results"] if isinstance(report.get("results"), dict) else {}
        run.parsing_errors.extend(str(p) for p in results.get("parsing_errors") or [])
        run.failures.extend(_failure(item) for item in results.get("failed_checks") or [])
    return run


def _failure(item: dict[str, Any]) -> CheckovFailure:
    path = str(item.get("file_abs_path") or item.get("file_path") or "")
    name = Path(path).name if path else "?"
    line_range = item.get("file_line_range") or [0, 0]
    return CheckovFailure(
        check_id=str(item.get("check_id", "?")),
        check_name=str(item.get("check_name", "")),
        file=name,
        resource=str(item.get("resource", "")),
        lines=(int(line_range[0]), int(line_range[-1])),
        guideline=item.get("guideline"),
    )
