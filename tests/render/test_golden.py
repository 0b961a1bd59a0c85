"""Each preset's rendered output is pinned in tests/golden/<preset>/ (regenerate: scripts/regen-golden)."""

from __future__ import annotations

from pathlib import Path

from tests.render.golden import committed, diff, rendered


def test_rendered_output_matches_golden_files(preset_path: Path) -> None:
    expected, actual = committed(preset_path), rendered(preset_path)
    assert expected, f"no golden files for {preset_path.stem}; run scripts/regen-golden"
    if expected != actual:
        raise AssertionError(
            f"{preset_path.stem}: rendered output differs from tests/golden/{preset_path.stem} "
            f"(if the change is intended, run scripts/regen-golden and review the diff)\n{diff(expected, actual)}"
        )


def test_diff_is_readable_and_names_the_file() -> None:
    text = diff({"a.json": '{\n  "x": 1\n}\n'}, {"a.json": '{\n  "x": 2\n}\n', "b.json": "{}\n"})
    assert "--- golden/a.json" in text and "+++ rendered/a.json" in text
    assert '-  "x": 1' in text and '+  "x": 2' in text
    assert "+++ rendered/b.json" in text and "--- /dev/null" in text


def test_diff_cuts_long_lines_and_long_diffs() -> None:
    text = diff({"a": "x" * 1000 + "\n"}, {"a": "y" * 1000 + "\n"}, limit=3, width=50)
    assert all(len(line) < 90 for line in text.splitlines())
    assert text.splitlines()[-1].startswith("... ") and "more diff lines" in text
