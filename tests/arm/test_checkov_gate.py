"""The checkov gate: one real scan of a plan (secure + insecure template) and its allowlist handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpclz.arm import checkov_gate
from hpclz.errors import HpclzError
from hpclz.gates import Gate, GateReport, check_plan
from tests.arm.support import FIXTURES, deployment, load, plan_of
from tests.conftest import require


@pytest.fixture(scope="module")
def scanned() -> GateReport:
    """One scan (two parallel checkov runs: main and allowlist probe) shared by the assertions below."""
    require(checkov_gate.find_checkov() is not None, "checkov")
    plan = plan_of(deployment("secure", load("good.json")), deployment("insecure", load("insecure.json")))
    return check_plan(plan, schema=False, lint=False, allowlist=FIXTURES / "allowlist-test.yaml")


@pytest.mark.slow  # the module's one real scan runs here first
def test_insecure_template_fails_checkov(scanned: GateReport) -> None:
    assert scanned.ran == [Gate.CHECKOV]
    failed = [f for f in scanned.results[Gate.CHECKOV].findings if f.rule_id == "HPCLZ-TPL-030"]
    checks = sorted(f.message.split(": ")[1].split()[0] for f in failed)
    assert checks == ["CKV_AZURE_10", "CKV_AZURE_3", "CKV_AZURE_36", "CKV_AZURE_44"]
    ssh = next(f for f in failed if "CKV_AZURE_10" in f.message)
    assert ssh.file == "02-insecure.template.json"
    assert ssh.path == "resources[nsg-open]"
    assert "Microsoft.Network/networkSecurityGroups.nsg-open" in ssh.message


def test_secure_template_has_no_failures(scanned: GateReport) -> None:
    findings = scanned.results[Gate.CHECKOV].findings
    assert not [f for f in findings if f.file == "01-secure.template.json"]


def test_allowlisted_check_is_skipped_and_stale_entry_reported(scanned: GateReport) -> None:
    findings = scanned.results[Gate.CHECKOV].findings
    assert not any("CKV_AZURE_35" in f.message for f in findings)
    (stale,) = [f for f in findings if f.rule_id == "HPCLZ-TPL-031"]  # CKV_AZURE_45 has recheck: false
    assert stale.message == "CKV_AZURE_1 is skipped but no template fails it"
    assert stale.file is not None and stale.file.endswith("allowlist-test.yaml")
    assert stale.line == 6


def test_checkov_missing_reports_not_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(checkov_gate.CHECKOV_ENV, raising=False)
    monkeypatch.setattr(checkov_gate, "REPO_ROOT", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    report = check_plan(plan_of(deployment("secure", load("good.json"))), schema=False, lint=False)
    assert report.ran == []
    assert "checkov not installed" in report.not_run[Gate.CHECKOV]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("skips:\n  - id: CKV_AZURE_1\n", ":2: skips[0].reason: every skipped check needs a reason"),
        ("skips:\n  - id: nope\n    reason: x\n", ":2: skips[0].id: expected a checkov check ID"),
        ("skips: {a: 1}\n", ":1: skips: expected a list"),
        (
            "skips:\n  - id: CKV_AZURE_1\n    reason: x\n    recheck: maybe\n",
            ":2: skips[0].recheck: expected true or false",
        ),
        ("skips: [\n", ":2: not valid YAML"),
    ],
)
def test_bad_allowlist_is_a_located_error(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "allow.yaml"
    path.write_text(text)
    with pytest.raises(HpclzError) as raised:
        checkov_gate.load_allowlist(path)
    assert str(raised.value).startswith(f"{path}{expected}")


def test_repository_allowlist_loads_and_every_entry_has_a_reason() -> None:
    allowlist = checkov_gate.load_allowlist()
    assert all(entry.reason for entry in allowlist.entries)
    assert len(set(allowlist.ids)) == len(allowlist.ids)


FAILED = {"check_id": "CKV_AZURE_10", "check_name": "n", "file_abs_path": "/x/a.json", "resource": "T.r"}


@pytest.mark.parametrize(
    "output",
    [
        {"check_type": "arm", "results": {"failed_checks": [FAILED]}, "summary": {"resource_count": 1}},
        [
            {"check_type": "arm", "results": {"failed_checks": [FAILED]}, "summary": {"resource_count": 1}},
            {"check_type": "secrets", "results": {"failed_checks": []}, "summary": {"resource_count": 0}},
        ],
    ],
)
def test_report_parsing_accepts_a_dict_or_a_list(output: object) -> None:
    run = checkov_gate.parse_report(output)
    assert [(f.check_id, f.file, f.resource) for f in run.failures] == [("CKV_AZURE_10", "a.json", "T.r")]
    assert run.resource_count == 1


def test_report_parsing_of_an_empty_scan() -> None:
    run = checkov_gate.parse_report({"passed": 0, "failed": 0, "resource_count": 0, "checkov_version": "3.3.30"})
    assert run.failures == [] and run.version == "3.3.30"


def _fake_checkov(tmp_path: Path, body: str) -> str:
    """A stand-in executable for checkov's failure modes, which the real one shows only by chance."""
    script = tmp_path / "checkov"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def _allowlist(tmp_path: Path) -> checkov_gate.Allowlist:
    path = tmp_path / "allow.yaml"
    path.write_text("skips: []\n")
    return checkov_gate.load_allowlist(path)


def test_checkov_crash_is_a_clear_error(tmp_path: Path) -> None:
    checkov = _fake_checkov(tmp_path, "echo 'Traceback: boom' >&2; exit 2")
    with pytest.raises(HpclzError, match=r"checkov failed \(exit 2\): Traceback: boom"):
        checkov_gate.run_checkov({"a.json": {}}, _allowlist(tmp_path), checkov)


def test_stuck_checkov_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkov_gate, "TIMEOUT_S", 1)
    checkov = _fake_checkov(tmp_path, "sleep 30")
    with pytest.raises(HpclzError, match="did not finish within 1 s"):
        checkov_gate.run_checkov({"a.json": {}}, _allowlist(tmp_path), checkov)


def test_scan_folder_holds_the_templates_as_render_writes_them(tmp_path: Path) -> None:
    checkov = _fake_checkov(tmp_path, 'cat "$2/a.json" > "$(dirname "$0")/seen.json"; echo "[]"')
    run = checkov_gate.run_checkov({"a.json": load("good.json")}, _allowlist(tmp_path), checkov)
    assert run.failures == []
    assert (tmp_path / "seen.json").read_text() == json.dumps(load("good.json"), indent=2, sort_keys=True) + "\n"
