"""`hpclz render` end to end: files, manifest, JSON envelope, gates, diagrams, errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hpclz.arm.checkov_gate import find_checkov
from hpclz.gates import check_plan
from hpclz.render.model import DeploymentPlan
from tests.conftest import REPO, RunCli, require

ENERGY = str(REPO / "configs" / "energy.yaml")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_render_writes_templates_parameters_and_manifest(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("render", ENERGY, "--out", str(out), "--no-gates")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    names = [d["component"] for d in manifest["deployments"]]
    assert names[0] == "organization" and manifest["deployments"][0]["scope"] == "subscription"
    for entry in manifest["deployments"]:
        template = json.loads((out / entry["template"]).read_text(encoding="utf-8"))
        assert len(entry["template_hash"]) == 64 and template["resources"] is not None
        assert (out / entry["parameters"]).is_file()
    assert manifest["waves"][0] == ["hpclz-energy-prod-organization"]
    assert "hpclz-energy-prod-compute" in result.stdout


def test_output_is_byte_identical_across_runs(run_cli: RunCli, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert run_cli("render", ENERGY, "--out", str(tmp_path / name), "--no-gates").exit_code == 0
    first, second = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert first == second and "07-compute.template.json" in first  # after 05-accounting (energy runs mode new)
    assert run_cli("render", ENERGY, "--out", str(tmp_path / "a"), "--no-gates").exit_code == 0
    assert _tree(tmp_path / "a") == first


def test_json_envelope(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("render", ENERGY, "--out", str(tmp_path / "o"), "--no-gates", "-o", "json")
    envelope = json.loads(result.stdout)
    assert envelope["command"] == "render" and envelope["ok"] is True and envelope["exit_code"] == 0
    assert envelope["result"]["deployments"][0]["component"] == "organization"
    assert envelope["result"]["gates_not_run"] == {"all": "--no-gates"}


def test_diagram_writes_mermaid_and_dot(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "d"
    assert run_cli("render", ENERGY, "--out", str(out), "--no-gates", "--diagram").exit_code == 0
    mermaid = (out / "diagram.mmd").read_text(encoding="utf-8")
    assert mermaid.startswith("flowchart TB") and "hpclz_energy_prod_network --> hpclz_energy_prod_compute" in mermaid
    dot = (out / "diagram.dot").read_text(encoding="utf-8")
    assert dot.startswith('digraph "energy"') and "virtualMachines: vm-energy-cc-prod-scus" in dot


def test_diagram_says_when_it_cannot_draw_an_image(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # no Graphviz `dot` on PATH
    out = tmp_path / "d"
    result = run_cli("render", ENERGY, "--out", str(out), "--no-gates", "--diagram")
    assert result.exit_code == 0, result.stderr
    assert "SVG and PNG not drawn: Graphviz `dot` is not on PATH" in result.stdout
    assert (out / "diagram.dot").exists() and not (out / "diagram.svg").exists()
    assert (out / "network.dot").exists() and not (out / "network.svg").exists()
    plain = run_cli("render", ENERGY, "--out", str(tmp_path / "e"), "--no-gates")
    assert "Graphviz" not in plain.stdout  # no diagram asked, nothing to say


def test_refuses_a_folder_it_did_not_write(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me", encoding="utf-8")
    result = run_cli("render", ENERGY, "--out", str(tmp_path), "--no-gates")
    assert result.exit_code == 64
    assert "refusing to write over it" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "precious.txt").read_text(encoding="utf-8") == "keep me"


def test_a_rerender_removes_only_what_its_manifest_lists(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("render", ENERGY, "--out", str(out), "--no-gates", "--diagram").exit_code == 0
    (out / "notes.md").write_text("mine", encoding="utf-8")
    (out / "artifacts" / "mine.sh").write_text("mine", encoding="utf-8")
    assert run_cli("render", ENERGY, "--out", str(out), "--no-gates").exit_code == 0
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine"
    assert (out / "artifacts" / "mine.sh").read_text(encoding="utf-8") == "mine"
    assert not (out / "diagram.mmd").exists()  # the earlier manifest listed it: hpclz's to remove


def test_a_manifest_naming_an_input_or_outside_file_deletes_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    config = tmp_path / "lz.yaml"
    shutil.copy(ENERGY, config)
    assert run_cli("render", str(config), "--out", str(tmp_path), "--no-gates").exit_code == 64  # not empty
    out = tmp_path / "out"
    assert run_cli("render", str(config), "--out", str(out), "--no-gates").exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for planted in ("../lz.yaml", str(config)):
        manifest["deployments"][0]["template"] = planted
        (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        result = run_cli("render", str(config), "--out", str(out), "--no-gates")
        assert result.exit_code == 64 and "refusing to delete it" in result.stderr, result.stderr
        assert config.is_file()


def test_writes_never_follow_a_planted_link(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("render", ENERGY, "--out", str(out), "--no-gates").exit_code == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched", encoding="utf-8")
    first = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["deployments"][0]["template"]
    (out / first).unlink()
    (out / first).symlink_to(victim)  # a link where a template goes: replaced, not written through
    assert run_cli("render", ENERGY, "--out", str(out), "--no-gates").exit_code == 0
    assert victim.read_text(encoding="utf-8") == "untouched" and not (out / first).is_symlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(out / "artifacts")
    (out / "artifacts").symlink_to(elsewhere)
    result = run_cli("render", ENERGY, "--out", str(out), "--no-gates")
    assert result.exit_code == 64 and "symbolic link" in result.stderr and "Traceback" not in result.stderr
    assert not list(elsewhere.iterdir())


def test_invalid_config_is_one_located_line(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(ENERGY).read_text(encoding="utf-8").replace("max_nodes: 100", "max_nodes: lots"))
    result = run_cli("render", str(bad), "--out", str(tmp_path / "o"), "--no-gates")
    assert result.exit_code == 3
    assert f"{bad}:" in result.stderr and "max_nodes" in result.stderr
    assert not (tmp_path / "o").exists()


def test_presets_pass_the_schema_and_lint_gates(plan: DeploymentPlan) -> None:
    report = check_plan(plan, checkov=False)
    assert report.passed(), [f"{f.rule_id} {f.path} {f.message}" for f in report.findings]
    assert {g.value for g in report.ran} == {"schema", "lint"}


@pytest.mark.checkov
@pytest.mark.slow
def test_render_runs_all_gates_including_checkov(run_cli: RunCli, tmp_path: Path) -> None:
    require(find_checkov() is not None, "checkov")
    result = run_cli("render", str(REPO / "configs" / "ai-training.yaml"), "--out", str(tmp_path / "o"), "-o", "json")
    envelope = json.loads(result.stdout)
    assert envelope["result"]["gates"] == ["schema", "lint", "checkov"], envelope["result"]["gates_not_run"]
    assert envelope["ok"] is True, [f["message"] for f in envelope["findings"]]
    # The same templates again: checkov's verdict comes from the gate cache, and the user is told so.
    again = run_cli("render", str(REPO / "configs" / "ai-training.yaml"), "--out", str(tmp_path / "p"))
    assert again.exit_code == 0 and "gates passed: schema, lint, checkov (cached)" in again.stdout


def test_config_rule_errors_render_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "no-lustre-subnet.yaml"
    bad.write_text(Path(ENERGY).read_text(encoding="utf-8").replace("      lustre: {cidr: 10.20.2.0/24}\n", ""))
    result = run_cli("render", str(bad), "--out", str(tmp_path / "o"), "--no-gates")
    assert result.exit_code == 1
    assert "HPCLZ-STO-007" in result.stdout and "nothing was rendered" in result.stdout
    assert not (tmp_path / "o").exists()


def test_settings_outside_the_schema_subset_are_reported_not_dropped(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("render", ENERGY, "--out", str(tmp_path / "o"), "--no-gates", "-o", "json")
    notes = json.loads(result.stdout)["result"]["notes"]
    # The agent and the DCR association are rendered for the VMs hpclz creates; CycleCloud's nodes are the gap.
    assert any(n.startswith("monitoring.agent covers the VMs hpclz creates") for n in notes)
    assert not any("without an association" in n for n in notes)
    assert not any("Microsoft.Insights/diagnosticSettings" in n for n in notes)
    # organization.policies is rendered now (policy assignments at each group), so it is no longer a note.
    assert not any(n.startswith("organization.policies") for n in notes)


def test_agent_off_says_the_rule_collects_nothing(run_cli: RunCli, tmp_path: Path) -> None:
    cfg = tmp_path / "no-agent.yaml"
    text = Path(ENERGY).read_text(encoding="utf-8")
    assert "\nmonitoring:\n" in text
    cfg.write_text(text.replace("\nmonitoring:\n", "\nmonitoring:\n  agent: false\n", 1))
    result = run_cli("render", str(cfg), "--out", str(tmp_path / "o"), "--no-gates", "-o", "json")
    notes = json.loads(result.stdout)["result"]["notes"]
    assert any(n.startswith("monitoring.agent is off") for n in notes)


def test_diagram_images_where_graphviz_is_installed(run_cli: RunCli, tmp_path: Path) -> None:
    require(shutil.which("dot") is not None, "Graphviz dot")
    out = tmp_path / "d"
    assert run_cli("render", ENERGY, "--out", str(out), "--no-gates", "--diagram").exit_code == 0
    for stem in ("diagram", "network"):  # the deployments, and the network with the cluster
        assert (out / f"{stem}.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "partition gpu: 0&#45;4 x Standard_ND96isr_H100_v5" in (out / "network.svg").read_text(encoding="utf-8")
