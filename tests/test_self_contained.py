"""Nothing in the repository reads the sibling research folder: a fresh clone must test and run alone.

The folder's name is assembled here rather than written out, so this file does not match its own patterns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

SIBLING = "sha" + "red"
SCANNED = ("src", "tests", "scripts", "benchmarks")
PATTERNS = [
    re.compile(r"\.\.[/\\]+" + SIBLING + r"\b"),  # the parent folder, either slash
    re.compile(r"/\s*[\"']" + SIBLING + r"[\"']"),  # a pathlib join
    re.compile(r"join\([^)]*[\"']" + SIBLING + r"[\"']"),  # an os.path join
    re.compile(r"\b" + SIBLING + r"/(?:fixtures|armschemas|docs|seeds|hooks)\b"),  # its sub-folders by name
]


def offending_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if any(p.search(line) for p in PATTERNS)]


def _text_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".whl"):
                files.append(path)
    return files


def test_no_file_names_the_sibling_folder() -> None:
    found = []
    for path in _text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{path.relative_to(REPO)}: {line}" for line in offending_lines(text)]
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        "SHARED = REPO.parent / 'X'",
        'base = json.loads(Path("../X/fixtures/gpu/h200/baseline-bench.json").read_text())',
        'return Path(__file__).resolve().parents[3].parent / "X" / "armschemas"',
        'os.path.join(root, "..", "X")',
        "# see X/docs/local-services.md",
    ],
)
def test_the_check_catches_each_way_of_naming_it(line: str) -> None:
    """Lines this repository once held that read the folder, so the scan is known to fail on them."""
    assert offending_lines(line.replace("X", SIBLING)) == [line.replace("X", SIBLING).strip()]


@pytest.mark.parametrize("line", ["mkdir -p /shared/home", "mode: shared", "# the shared file systems"])
def test_cluster_paths_named_shared_are_not_the_sibling_folder(line: str) -> None:
    """Rendered cloud-init mounts /shared/... on the nodes; that is the cluster's path, not ours."""
    assert offending_lines(line) == []
