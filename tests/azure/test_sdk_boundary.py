"""Only hpclz.azure imports the Azure SDK (docs/CONTRIBUTING.md): every other package reaches Azure through it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

SRC = REPO / "src" / "hpclz"
ADAPTER = SRC / "azure"


def _sdk_imports(path: Path) -> list[str]:
    """`import azure...` / `from azure... import` anywhere in a module, function bodies included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        found += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in names if n.split(".")[0] == "azure"]
    return found


def test_no_module_outside_hpclz_azure_imports_the_sdk() -> None:
    outside = [p for p in sorted(SRC.rglob("*.py")) if ADAPTER not in p.parents]
    assert len(outside) > 50  # the scan did find the package
    assert [hit for p in outside for hit in _sdk_imports(p)] == []


def test_the_scan_sees_lazy_imports_inside_functions() -> None:
    module = REPO / "src" / "hpclz" / "azure" / "storage.py"
    assert any("azure.core.exceptions" in hit for hit in _sdk_imports(module))
    assert any(hit.endswith(": azure.storage.blob") for hit in _sdk_imports(module))  # inside break_lease
