"""Generated docs must match the code: regenerate with `python -m hpclz.docsgen`."""

from __future__ import annotations

import pytest

from hpclz.docsgen import generated_files
from tests.conftest import REPO


@pytest.mark.parametrize(("relpath", "text"), sorted(generated_files().items()))
def test_generated_doc_is_fresh(relpath: str, text: str) -> None:
    committed = REPO / relpath
    assert committed.exists(), f"{relpath} missing: run python -m hpclz.docsgen"
    assert committed.read_text(encoding="utf-8") == text, f"{relpath} is stale: run python -m hpclz.docsgen"
