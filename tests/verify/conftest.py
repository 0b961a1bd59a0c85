"""Verify tests run in their own folder: `hpclz verify` keeps job scripts and node results under
./.hpclz/verify by default, which must never land in the checkout."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _in_own_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Not monkeypatch.chdir: requesting monkeypatch here would make it outlive fixtures such as clean_slurm,
    # whose teardown needs the PATH a test may have patched back.
    previous = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(previous)
