"""checkov results cached per template, so an unchanged template is not scanned again.

checkov's start-up is most of a gated render (about 3 s idle, 10 s on a loaded machine), and its verdict on
a template depends only on the template's bytes, the checks it runs (the allowlist, and checkov's version)
and how hpclz reads the result. The key hashes exactly those; anything else changing means a miss. Schema
and lint gates are not cached: they take tens of milliseconds and their rules change with hpclz itself.

Entries are small JSON files under $HPCLZ_CACHE_DIR, else $XDG_CACHE_HOME/hpclz/gates, else
~/.cache/hpclz/gates (the XDG base directory default). HPCLZ_GATE_CACHE=0 turns the cache off. A
missing or unreadable entry is a miss, never an error: the cache can only save time, not change a verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hpclz import __version__
from hpclz.arm.checkov_gate import Allowlist, CheckovFailure, CheckovRun
from hpclz.arm.locator import pretty_json

CACHE_DIR_ENV = "HPCLZ_CACHE_DIR"
CACHE_SWITCH_ENV = "HPCLZ_GATE_CACHE"
# Bump when what an entry holds, or how checkov's report is read into it, changes.
FORMAT = 1

Scan = Callable[[Mapping[str, dict[str, Any]], Allowlist, str], CheckovRun]


def cache_dir() -> Path:
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpclz" / "gates"


def enabled() -> bool:
    return os.environ.get(CACHE_SWITCH_ENV, "1").strip().lower() not in ("0", "false", "off", "no")


# Where an installed checkov keeps its metadata, from the folder above its bin/: a virtual environment or
# pipx (lib/...), Homebrew's formula (libexec/lib/...).
_DIST_INFO = ("lib/python*/site-packages/checkov-*.dist-info", "libexec/lib/python*/site-packages/checkov-*.dist-info")


@cache
def checkov_version(executable: str) -> str | None:
    """checkov's version from its installed metadata, which costs nothing; asking `checkov --version` costs a
    full start-up (about 4 s), so it is the fallback. None when neither says: then nothing is cached."""
    home = Path(executable).resolve().parent.parent
    found = sorted(p for pattern in _DIST_INFO for p in home.glob(pattern))
    if found:
        return found[-1].name.removeprefix("checkov-").removesuffix(".dist-info")
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip()
    return version if done.returncode == 0 and version else None


def allowlist_digest(allowlist: Allowlist) -> str:
    """What the allowlist changes in a scan: the skipped checks and which of them are re-checked."""
    return _digest({"skip": sorted(allowlist.ids), "recheck": sorted(allowlist.recheck_ids)})


def template_key(template: dict[str, Any], allowlist: str, checkov: str) -> str:
    # The scan writes pretty_json(template); those bytes are what checkov judges.
    return _digest({"format": FORMAT, "hpclz": __version__, "checkov": checkov, "allowlist": allowlist,
                    "template": pretty_json(template)})  # fmt: skip


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


@dataclass
class CachedScan:
    """A checkov run assembled from cache entries and a scan of the rest; `scanned` lists what checkov saw."""

    run: CheckovRun
    scanned: list[str] = field(default_factory=list)
    from_cache: list[str] = field(default_factory=list)


def scan_with_cache(
    templates: Mapping[str, dict[str, Any]], allowlist: Allowlist, checkov: str, scan: Scan
) -> CachedScan:
    """`scan` only the templates without a cache entry, then store an entry for each of them."""
    version = checkov_version(checkov) if enabled() else None
    if version is None:
        return CachedScan(scan(templates, allowlist, checkov), scanned=list(templates))
    context = (allowlist_digest(allowlist), version)
    keys = {name: template_key(template, *context) for name, template in templates.items()}
    found = {name: _read(key) for name, key in keys.items()}
    entries = {name: entry for name, entry in found.items() if entry is not None}
    missing = {name: templates[name] for name in templates if name not in entries}
    result = CachedScan(CheckovRun(), scanned=list(missing), from_cache=list(entries))
    if missing:
        fresh = scan(missing, allowlist, checkov)
        result.run.version = fresh.version
        for name in missing:
            entries[name] = _entry_for(name, fresh)
            _write(keys[name], entries[name])
    for name in templates:
        _merge(result.run, name, entries[name])
    return result


def _entry_for(name: str, run: CheckovRun) -> dict[str, Any]:
    return {
        "failures": [asdict(f) for f in run.failures if f.file == name],
        "still_failing": sorted(run.still_failing_by_file.get(name, set())),
        "unparsed": any(Path(p).name == name for p in run.parsing_errors),
    }


def _merge(run: CheckovRun, name: str, entry: dict[str, Any]) -> None:
    for failure in entry["failures"]:
        run.failures.append(CheckovFailure(**{**failure, "file": name, "lines": tuple(failure["lines"])}))
    run.still_failing_by_file[name] = set(entry["still_failing"])
    run.still_failing_allowlisted |= set(entry["still_failing"])
    if entry["unparsed"]:
        run.parsing_errors.append(name)


def _read(key: str) -> dict[str, Any] | None:
    try:
        entry = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and {"failures", "still_failing", "unparsed"} <= entry.keys() else None


def _write(key: str, entry: dict[str, Any]) -> None:
    """Atomically (rename), so a concurrent hpclz never reads half an entry; a read-only cache is skipped."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(entry, out)
        Path(temp).replace(folder / f"{key}.json")
    except OSError:
        Path(temp).unlink(missing_ok=True)
