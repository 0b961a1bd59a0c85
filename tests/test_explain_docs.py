"""`hpclz explain docs/NAME.md` prints a document a message names, from the copy the package ships."""

from __future__ import annotations

import json

from tests.conftest import REPO, RunCli


def test_a_named_document_prints_from_the_package(run_cli: RunCli) -> None:
    result = run_cli("explain", "docs/patching.md")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("docs/patching.md (")
    assert (REPO / "docs" / "patching.md").read_text(encoding="utf-8").splitlines()[0] in result.stdout
    body = json.loads(run_cli("explain", "patching.md", "-o", "json").stdout)["result"]
    assert body["path"] == "docs/patching.md" and body["text"].startswith("# Patching")


def test_unknown_or_outside_documents_are_refused(run_cli: RunCli) -> None:
    typo = run_cli("explain", "docs/pathcing.md")
    assert typo.exit_code == 64 and "did you mean docs/patching.md?" in typo.stderr
    outside = run_cli("explain", "docs/../../pyproject.toml.md")
    assert outside.exit_code == 64 and "no document" in outside.stderr and "[project]" not in outside.stdout
