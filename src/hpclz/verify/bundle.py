"""Pack the node agent into one file: `python -m hpclz.verify.bundle agent.pyz`, then `python3 agent.pyz --nhc`.

The same file runs the health gate: `python3 agent.pyz gate prolog --budget 10 ...` (hpclz.verify.gate), which
then runs the agent from the same file, and a rank of `hpclz verify --nccl`'s all-reduce jobs:
`python3 agent.pyz collective --name ... --out ...` (hpclz.verify.collective_job; torch must be on the node's python3).
On the rendered cluster the scheduler installs it at /sched/<cluster>/hpclz/hpclz-node.pyz
(hpclz.render.health_gate.HealthGate.bundle), and `hpclz verify` starts its node code on the nodes from there.

The bundle is a zipapp of the agent's standard-library modules and its data files, so a node needs only python3
(3.10+, the Ubuntu 22.04 node images' own: tests/verify/test_bundle.py runs it on 3.10 and 3.12): copy the
file, no venv, no pip. Its module list is derived, not kept by hand: every hpclz module that
hpclz.verify.agent and hpclz.verify.gate import at module level, followed transitively, with the packages that hold them. Imports
inside functions (torch in hpclz.verify.nccl, the pydantic-side rule wrappers behind hpclz.verify.checks'
VERIFY_RULES) and under `if TYPE_CHECKING:` are not followed: the agent never needs them, and a module the agent
does import that reaches outside the standard library stops the build.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # src/hpclz
ENTRIES = ("hpclz.verify.agent", "hpclz.verify.gate", "hpclz.verify.collective_job")
DATA = ("verify/thresholds.json", "verify/topology/*.xml")  # read through importlib.resources, also from the zip
GATE_COMMAND = "gate"
COLLECTIVE_COMMAND = "collective"
MAIN = (
    "import sys\n\n"
    f"if sys.argv[1:2] == [{GATE_COMMAND!r}]:\n"
    "    from hpclz.verify.gate import main\n\n"
    "    sys.exit(main(sys.argv[2:]))\n"
    f"if sys.argv[1:2] == [{COLLECTIVE_COMMAND!r}]:\n"
    "    from hpclz.verify.collective_job import rank_main\n\n"
    "    sys.exit(rank_main(sys.argv[2:]))\n"
    "from hpclz.verify.agent import main\n\n"
    "sys.exit(main())\n"
)


def _path(module: str, package: Path) -> Path | None:
    """The source file of an hpclz module or package, or None when `module` names neither."""
    parts = module.split(".")[1:]
    base = package.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported(module: str, path: Path, root: Path) -> list[str]:
    """The modules `module` imports at module level (an `if` block, TYPE_CHECKING's included, is not followed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from hpclz.verify import nccl` imports the submodule when there is one, else a name of the package.
            found += [f"{base}.{a.name}" if _path(f"{base}.{a.name}", root) else base for a in node.names]
    return found


def modules(package: Path = PACKAGE) -> list[Path]:
    """The agent's modules and the packages holding them, as files under `package` (hpclz's folder), sorted."""
    seen: dict[str, Path] = {}
    todo = list(ENTRIES)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = _path(module, package)
        if path is None:
            raise RuntimeError(f"{module}: not a module of hpclz")
        seen[module] = path
        parent = module.rpartition(".")[0]
        todo += [parent] if parent else []
        for name in _imported(module, path, package):
            top = name.partition(".")[0]
            if top == "hpclz":
                todo.append(name)
            elif top != "__future__" and top not in sys.stdlib_module_names:
                raise RuntimeError(f"{module} imports {name}: the node agent must run on the standard library alone")
    return sorted(set(seen.values()))


def build(target: Path) -> Path:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("__main__.py", MAIN)
        files = [*modules(), *(p for pattern in DATA for p in sorted(PACKAGE.glob(pattern)))]
        for path in files:
            archive.write(path, f"hpclz/{path.relative_to(PACKAGE).as_posix()}")
    # A zipapp may start with a shebang line; zipfile readers find the archive from its end, so prepend it.
    data = target.read_bytes()
    target.write_bytes(b"#!/usr/bin/env python3\n" + data)
    target.chmod(0o755)
    return target


if __name__ == "__main__":
    out = build(Path(sys.argv[1] if len(sys.argv) > 1 else "hpclz-verify-agent.pyz"))
    print(f"wrote {out}")
