"""The single-file node agent: its module list is derived from the package, and it runs without pydantic or the
Azure SDK (an interpreter started with -I -S sees no site-packages, so neither can be imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hpclz.verify.bundle import PACKAGE, build, modules
from hpclz.verify.model import NodeReport, Status
from tests.render.test_install_wheel import _real_python
from tests.verify.helpers import FIXTURES, GOOD

BARE = [sys.executable, "-I", "-S"]  # isolated, and no site-packages: the standard library alone


def _bare(*args: str, cwd: Path = FIXTURES) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BARE, *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(["hpclz", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def test_the_bundle_holds_exactly_the_modules_the_agent_loads() -> None:
    """What importing the agent loads in a fresh interpreter is what the derived list packs: nothing the agent
    needs is left out, nothing it never loads (the pydantic-side rule wrappers) is packed."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, hpclz.verify.agent, hpclz.verify.gate, hpclz.verify.collective_job; "
            "print(sorted(m for m in sys.modules if m == 'hpclz' or m.startswith('hpclz.')))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    packed = sorted(_module_name(p) for p in modules())
    assert packed == json.loads(loaded.stdout.replace("'", '"'))
    assert "hpclz.verify.checks.rules" not in packed and "hpclz.rules.base" not in packed


def test_a_module_outside_the_standard_library_stops_the_build(tmp_path: Path) -> None:
    package = tmp_path / "hpclz"
    (package / "verify").mkdir(parents=True)
    for name in ("__init__.py", "verify/__init__.py", "verify/gate.py", "verify/collective_job.py"):
        (package / name).write_text("")
    (package / "verify" / "agent.py").write_text("import json\n\nimport pydantic\n")
    with pytest.raises(RuntimeError, match=r"hpclz\.verify\.agent imports pydantic: "):
        modules(package)


def test_the_bundle_imports_and_runs_without_pydantic_or_the_azure_sdk(tmp_path: Path) -> None:
    absent = _bare("-c", "import importlib.util as u; print([u.find_spec(m) is None for m in ('pydantic', 'azure')])")
    assert absent.stdout.strip() == "[True, True]", absent.stderr  # the interpreter really lacks both
    target = build(tmp_path / "agent.pyz")
    names = [_module_name(p) for p in modules()]
    probe = (
        f"import importlib, sys; sys.path.insert(0, {str(target)!r})\n"
        f"for name in {names!r}:\n"
        "    module = importlib.import_module(name)\n"
        f"    assert module.__file__.startswith({str(target)!r}), module.__file__\n"
        "assert not any(m.partition('.')[0] in ('pydantic', 'azure') for m in sys.modules)\n"
        f"print({len(names)})\n"
    )
    imported = _bare("-c", probe)
    assert imported.returncode == 0 and imported.stdout.strip() == str(len(names)), imported.stderr
    ran = _bare(str(target), "--fixtures", str(GOOD), "--node", "n7")
    assert ran.returncode == 0, ran.stderr
    report = NodeReport.model_validate_json(ran.stdout)
    assert report.node == "n7" and report.status is Status.PASS and report.checks


def test_the_bundle_runs_the_gate_which_runs_the_agent_from_the_same_file(tmp_path: Path) -> None:
    """What a node runs from the prolog the cluster installs: `python3 <bundle> gate prolog ...`, standard library
    only; a healthy node passes without a Slurm call (the gate drains only on a failure)."""
    target = build(tmp_path / "node.pyz")
    argv = [str(target), "gate", "prolog", "--budget", "30", "--prolog-timeout", "60", "--node", "n7"]
    ran = _bare(*argv, "--", "--fixtures", str(GOOD))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == "hpclz gate prolog: n7 healthy"


def test_the_bundle_starts_a_collective_rank_from_the_same_file(tmp_path: Path) -> None:
    """What `hpclz verify --nccl` runs on each node of a collective job: `python3 <bundle> collective ...`. Its
    rank imports torch only when it runs (hpclz.verify.nccl), so the bundle parses its arguments on the standard
    library alone and names the one thing it needs from the node's python3."""
    target = build(tmp_path / "node.pyz")
    usage = _bare(str(target), "collective", "--help")
    assert usage.returncode == 0 and "--backend {gloo,nccl}" in usage.stdout, usage.stderr
    out = tmp_path / "pair.json"
    ran = _bare(str(target), "collective", "--name", "pair-a-b", "--out", str(out))
    assert ran.returncode == 1 and not out.exists()
    assert ran.stderr.strip().splitlines()[-1] == "ModuleNotFoundError: No module named 'torch'"


# The nodes run the bundle with their image's python3 (hpclz.verify.dispatch: `python3 <bundle>`; the gate's scripts,
# hpclz.render.health_gate): Ubuntu 22.04's is 3.10 (3.10.6-1~22.04, packages.ubuntu.com/jammy/python3), 24.04's
# 3.12 (packages.ubuntu.com/noble/python3), and the presets' node images are Ubuntu-HPC 22.04 and 24.04. The wheel
# needs 3.11 (pyproject.toml), the bundle must not: a 3.11-only name in an agent module would stop every node's gate.
@pytest.mark.parametrize("version", ["3.10", "3.12"])
def test_the_bundle_runs_on_the_node_images_python3(tmp_path: Path, version: str) -> None:
    python = str(_real_python(version))
    target = build(tmp_path / "node.pyz")
    names = [_module_name(p) for p in modules()]
    imports = (
        f"import importlib, sys; sys.path.insert(0, {str(target)!r}); [importlib.import_module(n) for n in {names!r}]"
    )
    run = [python, "-I", "-S"]
    done = subprocess.run([*run, "-c", imports], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    agent = subprocess.run(
        [*run, str(target), "--fixtures", str(GOOD), "--node", "n7"], capture_output=True, text=True, timeout=120
    )
    assert agent.returncode == 0, agent.stderr
    assert NodeReport.model_validate_json(agent.stdout).status is Status.PASS
    gate = [str(target), "gate", "prolog", "--budget", "30", "--prolog-timeout", "60", "--node", "n7"]
    ran = subprocess.run([*run, *gate, "--", "--fixtures", str(GOOD)], capture_output=True, text=True, timeout=120)
    assert (ran.returncode, ran.stdout.strip()) == (0, "hpclz gate prolog: n7 healthy"), ran.stderr
    usage = subprocess.run([*run, str(target), "collective", "--help"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0 and "--backend {gloo,nccl}" in usage.stdout, usage.stderr
