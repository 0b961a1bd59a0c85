"""Which heavy modules each command imports, recorded: a command that starts importing one it did not need
before fails here. Speed itself is measured in benchmarks/cli_startup.py, never asserted in a test; what
makes a command slow to start is what it imports, and that this test can check exactly.

Every command of the command table (hpclz.cli.table) runs in a fresh interpreter, offline: validate, plan,
render --no-gates, explain, schema and init for real, the commands that need Azure or Slurm as far as a config
that does not exist (the path a mistake takes, which must not load the Azure SDK either). The set of modules
it loaded is read from sys.modules at exit.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hpclz.cli.table import COMMANDS
from tests.conftest import REPO

ENERGY = str(REPO / "configs" / "energy.yaml")

# Packages and modules whose import costs a command measurable time (each one tens to hundreds of ms on the
# 2-core development machine, python -X importtime), or that only some commands need.
HEAVY = (
    "azure", "jinja2", "jsonschema", "referencing", "torch", "numpy", "checkov", "pydantic", "ruamel", "filelock",
    "rich.console", "rich.table", "rich.progress", "rich.live", "rich.syntax",
    "hpclz.arm", "hpclz.azure", "hpclz.catalog", "hpclz.config", "hpclz.cost", "hpclz.deploy", "hpclz.gates",
    "hpclz.plan", "hpclz.registry", "hpclz.render", "hpclz.rules.config", "hpclz.rules.template",
    "hpclz.services.deploy", "hpclz.slurm", "hpclz.state", "hpclz.verify", "hpclz.remediate",
)  # fmt: skip

CONFIG = frozenset({"pydantic", "ruamel", "hpclz.config"})  # reading a config: the model and the YAML loader
# Validating it, and printing findings. HPCLZ-IDN-011 follows the role assignments render would write
# (hpclz.render.roles), which needs render's and arm's names but never Jinja: no template is rendered.
RULES = CONFIG | {"hpclz.rules.config", "hpclz.catalog", "rich.console", "hpclz.render", "hpclz.arm"}
RENDER = RULES | {"jinja2", "hpclz.render", "hpclz.arm", "hpclz.deploy"}  # the render engine: hpclz.deploy.rendering

# Opening the state backend: hpclz.azure.backends (the adapter package; the Azure SDK itself, "azure", stays out
# until a Blob backend is really opened).
BACKENDS = frozenset({"hpclz.azure"})

MISSING = "missing.yaml"
# command -> (arguments after the command, the heavy modules it may import)
RECORDED: dict[str, tuple[list[str], frozenset[str]]] = {
    "validate": ([ENERGY], RULES),
    "schema": ([], CONFIG),
    "init": (["--out", "{tmp}/zone.yaml"], CONFIG),
    "render": ([ENERGY, "--no-gates", "--out", "{tmp}/rendered"], RENDER),
    "plan": (
        [ENERGY],
        RENDER | {"hpclz.cost", "hpclz.plan", "hpclz.state", "hpclz.deploy", "filelock"} | BACKENDS,
    ),
    "explain": (["HPCLZ-CMP-010"], RULES | {"hpclz.registry", "hpclz.rules.template", "hpclz.verify"}),
    "deploy": (
        [MISSING, "-o", "json"],
        RULES - {"hpclz.arm"} | {"hpclz.plan", "hpclz.state", "hpclz.services.deploy", "hpclz.deploy"},
    ),
    "destroy": (
        [MISSING, "-o", "json"],
        CONFIG
        | {"rich.console", "hpclz.render", "hpclz.arm", "hpclz.deploy", "hpclz.azure", "hpclz.plan", "hpclz.state"},
    ),
    "verify": (
        [MISSING, "-o", "json"],
        RULES - {"rich.console", "hpclz.render", "hpclz.arm"} | {"hpclz.verify", "hpclz.slurm"},
    ),
    "state show": ([MISSING, "-o", "json"], CONFIG | {"hpclz.state", "hpclz.deploy"} | BACKENDS),
    "state unlock": ([MISSING, "--force", "-o", "json"], CONFIG | {"hpclz.state", "hpclz.deploy"} | BACKENDS),
    "state forget": ([MISSING, "vnet-x", "-o", "json"], CONFIG | {"hpclz.state", "hpclz.deploy"} | BACKENDS),
    "state adopt": ([MISSING, "vnet-x", "-o", "json"], CONFIG | {"hpclz.state", "hpclz.deploy"} | BACKENDS),
    "checkpoints manifest": ([MISSING, "-o", "json"], CONFIG | {"hpclz.render", "hpclz.arm", "hpclz.azure"}),
    "checkpoints verify": ([MISSING, "-o", "json"], CONFIG | {"hpclz.render", "hpclz.arm", "hpclz.azure"}),
    "prices refresh": ([MISSING, "-o", "json"], CONFIG | {"hpclz.cost"}),
    "nodes roll": ([MISSING, "--all", "-o", "json"], CONFIG | {"hpclz.slurm"}),
    "nodes status": ([MISSING, "-o", "json"], CONFIG | {"hpclz.slurm"}),
    "nodes repair": (
        [MISSING, "--state-dir", "{tmp}/state", "-o", "json"],
        CONFIG | {"hpclz.verify", "hpclz.remediate"},
    ),
    "nodes incidents": (["--state-dir", "{tmp}/state", "-o", "json"], CONFIG | {"hpclz.verify", "hpclz.remediate"}),
}

# Runs hpclz as the console script does, then prints every module loaded, after a marker.
PROBE = (
    "import json, sys; from hpclz.cli import main; main(sys.argv[1:]); print('\\n@@' + json.dumps(sorted(sys.modules)))"
)


def heavy_imports(*args: str, cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True, timeout=120, cwd=cwd
    )
    return _heavy(done.stdout)


def import_chain(heavy: str, *args: str, cwd: Path) -> list[str]:
    """The modules through which a command first imported `heavy`, outermost first: what to make lazy. Read from
    `python -X importtime`, which prints each module after the ones it imported, indented one step deeper than its
    importer (docs.python.org/3/using/cmdline.html#cmdoption-X, importtime)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PROBE, *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    rows = [line.split("|")[-1] for line in done.stderr.splitlines() if line.startswith("import time:")][1:]
    depth = [len(row) - len(row.lstrip()) for row in rows]
    names = [row.strip() for row in rows]
    first = next(i for i, n in enumerate(names) if n == heavy or n.startswith(heavy + "."))
    chain, level = [names[first]], depth[first]
    for name, indent in zip(names[first + 1 :], depth[first + 1 :], strict=True):
        if indent < level:  # the first shallower row after a module is the module that imported it
            chain.append(name)
            level = indent
    return list(reversed(chain))


def _heavy(stdout: str) -> set[str]:
    loaded = json.loads(stdout.rsplit("@@", 1)[1])
    return {h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in loaded)}


def test_every_command_of_the_table_is_recorded() -> None:
    assert set(RECORDED) == {c.name for c in COMMANDS}


def test_heavy_lists_name_modules_that_exist() -> None:
    """A misspelt entry would guard nothing."""
    for name in HEAVY:
        optional = name in ("torch", "numpy", "checkov")  # not installed everywhere (checkov has its own venv)
        assert optional or importlib.util.find_spec(name) is not None, name


@pytest.mark.parametrize("command", sorted(RECORDED))
def test_a_command_imports_no_heavy_module_it_did_not_need_before(command: str, tmp_path: Path) -> None:
    args, allowed = RECORDED[command]
    found = heavy_imports(*command.split(), *(a.replace("{tmp}", str(tmp_path)) for a in args), cwd=tmp_path)
    extra = sorted(found - allowed)
    assert not extra, f"hpclz {command} now imports {extra}: " + "; ".join(
        import_chain(extra[0], *command.split(), *(a.replace("{tmp}", str(tmp_path)) for a in args), cwd=tmp_path)
    )


def test_help_imports_nothing_heavy(tmp_path: Path) -> None:
    """`hpclz --help` loads typer and hpclz's parsers only. A command's --help also loads pydantic, in typer:
    the root's --install-completion defaults to None, not a bool, so typer coerces it through a pydantic
    TypeAdapter (typer 0.29.2, typer/core.py _TyperParameter.process_value -> typer/_coercion.py
    build_runtime_param -> typer/_adapters.py, which imports pydantic); no model or SDK of hpclz's."""
    assert heavy_imports("--help", cwd=tmp_path) == set()
    helps = "; ".join(f"main({[*c.words, '--help']!r})" for c in COMMANDS)
    probe = PROBE.replace("main(sys.argv[1:])", helps)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert _heavy(done.stdout) <= {"pydantic"}
