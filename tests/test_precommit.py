"""The pre-commit hooks run exactly the static checks CI runs (scripts/test), so neither drifts alone."""

from __future__ import annotations

from ruamel.yaml import YAML

from tests.conftest import REPO


def _ci_checks() -> set[str]:
    lines = (REPO / "scripts" / "test").read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.startswith(".venv/bin/") and "pytest" not in line}


def _hooks() -> set[str]:
    config = YAML(typ="safe").load((REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    return {hook["entry"] for repo in config["repos"] for hook in repo["hooks"]}


def test_pre_commit_runs_the_same_checks_as_ci() -> None:
    checks = _ci_checks()
    for tool in (".venv/bin/ruff check", ".venv/bin/ruff format --check", ".venv/bin/mypy", ".venv/bin/lint-imports"):
        assert any(c.startswith(tool) for c in checks), f"scripts/test no longer runs {tool}"
    assert _hooks() == checks
