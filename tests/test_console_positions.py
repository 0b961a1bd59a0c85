"""File positions print as written: rich would read ':100:' in 'lz.yaml:100:9' as an emoji code (💯)."""

from __future__ import annotations

from hpclz.cli.common import console


def test_a_line_number_that_is_an_emoji_code_prints_as_a_number() -> None:
    out = console()
    with out.capture() as captured:
        out.print("configs/ai-training.yaml:100:9: error HPCLZ-STO-056 :smile:")
    assert captured.get().strip() == "configs/ai-training.yaml:100:9: error HPCLZ-STO-056 :smile:"
