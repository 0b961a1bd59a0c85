"""checkov results cached per template: a hit starts no checkov, and anything that could change a verdict misses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hpclz.arm import checkov_gate, gate_cache
from hpclz.gates import Gate, check_plan
from tests.arm.support import FIXTURES, deployment, load, plan_of
from tests.conftest import require

# Prints checkov's JSON report shape (as parsed in test_checkov_gate) with one failure per scanned file, and
# counts its starts: the count is what a cache hit must leave unchanged.
FAKE = """#!/bin/sh
echo run >> "$(dirname "$0")/starts"
printf '{"check_type": "arm", "results": {"failed_checks": ['
sep=""
for f in "$2"/*.json; do
  printf '%s{"check_id": "CKV_AZURE_10", "check_name": "n", "file_abs_path": "%s", "resource": "T.r", "file_line_range": [3, 9]}' "$sep" "$f"
  sep=", "
done
printf ']}, "summary": {"resource_count": 1}}'
"""


def _checkov(folder: Path, version: str = "3.3.30") -> str:
    """A fake checkov inside a virtual-environment layout, so its version comes from dist-info metadata."""
    (folder / "bin").mkdir(parents=True)
    (folder / "lib" / "python3.11" / "site-packages" / f"checkov-{version}.dist-info").mkdir(parents=True)
    script = folder / "bin" / "checkov"
    script.write_text(FAKE)
    script.chmod(0o755)
    return str(script)


def _starts(checkov: str) -> int:
    counter = Path(checkov).parent / "starts"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _allowlist(tmp_path: Path, ids: tuple[str, ...] = ()) -> checkov_gate.Allowlist:
    path = tmp_path / f"allow-{len(ids)}.yaml"
    lines = "".join(f"  - id: {i}\n    reason: test\n    recheck: false\n" for i in ids)
    path.write_text("skips:\n" + lines if ids else "skips: []\n")
    return checkov_gate.load_allowlist(path)


TEMPLATES: dict[str, dict[str, Any]] = {"01-a.template.json": {"resources": []}, "02-b.template.json": {"n": 1}}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(gate_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(gate_cache.CACHE_SWITCH_ENV, raising=False)
    return tmp_path / "cache"


def _scan(templates: dict[str, dict[str, Any]], allowlist: checkov_gate.Allowlist, checkov: str) -> Any:
    return gate_cache.scan_with_cache(templates, allowlist, checkov, checkov_gate.run_checkov)


def test_a_hit_starts_no_checkov_and_gives_the_same_failures(tmp_path: Path) -> None:
    checkov, allowlist = _checkov(tmp_path / "venv"), _allowlist(tmp_path)
    first = _scan(TEMPLATES, allowlist, checkov)
    assert (first.scanned, first.from_cache, _starts(checkov)) == (list(TEMPLATES), [], 1)
    second = _scan(TEMPLATES, allowlist, checkov)
    assert (second.scanned, second.from_cache, _starts(checkov)) == ([], list(TEMPLATES), 1)
    assert sorted(second.run.failures, key=str) == sorted(first.run.failures, key=str)
    assert {(f.file, f.lines) for f in second.run.failures} == {(name, (3, 9)) for name in TEMPLATES}


def test_a_changed_template_is_scanned_alone(tmp_path: Path) -> None:
    checkov, allowlist = _checkov(tmp_path / "venv"), _allowlist(tmp_path)
    _scan(TEMPLATES, allowlist, checkov)
    changed = {**TEMPLATES, "02-b.template.json": {"n": 2}}
    again = _scan(changed, allowlist, checkov)
    assert (again.scanned, again.from_cache, _starts(checkov)) == (["02-b.template.json"], ["01-a.template.json"], 2)
    assert len(again.run.failures) == 2


def test_a_changed_allowlist_misses(tmp_path: Path) -> None:
    checkov = _checkov(tmp_path / "venv")
    _scan(TEMPLATES, _allowlist(tmp_path), checkov)
    again = _scan(TEMPLATES, _allowlist(tmp_path, ("CKV_AZURE_35",)), checkov)
    assert again.from_cache == [] and _starts(checkov) == 2


def test_another_checkov_version_misses(tmp_path: Path) -> None:
    old, new = _checkov(tmp_path / "old", "3.3.30"), _checkov(tmp_path / "new", "3.3.31")
    allowlist = _allowlist(tmp_path)
    _scan(TEMPLATES, allowlist, old)
    assert gate_cache.checkov_version(new) == "3.3.31"
    assert _scan(TEMPLATES, allowlist, new).from_cache == [] and _starts(new) == 1


def test_a_checkov_of_unknown_version_is_never_cached(tmp_path: Path) -> None:
    """No metadata beside it and no answer to --version: a cached verdict could outlive an upgrade."""
    script = tmp_path / "bare" / "checkov"
    script.parent.mkdir()
    script.write_text(FAKE.replace("#!/bin/sh\n", '#!/bin/sh\n[ "$1" = --version ] && exit 2\n', 1))
    script.chmod(0o755)
    allowlist = _allowlist(tmp_path)
    _scan(TEMPLATES, allowlist, str(script))
    assert _scan(TEMPLATES, allowlist, str(script)).from_cache == []
    assert _starts(str(script)) == 2  # both scans started checkov (the failed --version probe is not counted)


def test_an_unreadable_entry_is_a_miss_not_an_error(tmp_path: Path, own_cache: Path) -> None:
    checkov, allowlist = _checkov(tmp_path / "venv"), _allowlist(tmp_path)
    _scan(TEMPLATES, allowlist, checkov)
    for entry in own_cache.glob("*.json"):
        entry.write_text("{not json")
    assert _scan(TEMPLATES, allowlist, checkov).from_cache == [] and _starts(checkov) == 2


def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gate_cache.CACHE_SWITCH_ENV, "0")
    checkov, allowlist = _checkov(tmp_path / "venv"), _allowlist(tmp_path)
    _scan(TEMPLATES, allowlist, checkov)
    assert _scan(TEMPLATES, allowlist, checkov).from_cache == [] and _starts(checkov) == 2


def test_cache_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(gate_cache.CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert gate_cache.cache_dir() == tmp_path / "xdg" / "hpclz" / "gates"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert gate_cache.cache_dir() == tmp_path / "home" / ".cache" / "hpclz" / "gates"


@pytest.mark.checkov
@pytest.mark.slow
def test_real_checkov_findings_from_the_cache_equal_a_fresh_scan() -> None:
    """One real scan (the insecure fixture fails four checks), then the same plan again from the cache."""
    require(checkov_gate.find_checkov() is not None, "checkov")
    plan = plan_of(deployment("secure", load("good.json")), deployment("insecure", load("insecure.json")))
    allowlist = FIXTURES / "allowlist-test.yaml"
    fresh = check_plan(plan, schema=False, lint=False, allowlist=allowlist).results[Gate.CHECKOV]
    cached = check_plan(plan, schema=False, lint=False, allowlist=allowlist).results[Gate.CHECKOV]
    assert fresh.from_cache == [] and cached.from_cache == ["01-secure.template.json", "02-insecure.template.json"]
    assert [f.model_dump() for f in cached.findings] == [f.model_dump() for f in fresh.findings]
    assert {f.rule_id for f in fresh.findings} == {"HPCLZ-TPL-030", "HPCLZ-TPL-031"}
