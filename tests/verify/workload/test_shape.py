"""The proof's arithmetic against published figures."""

from __future__ import annotations

import pytest

from hpclz.verify.workload.shape import GPTShape, mfu, model_tflops_per_gpu, tokens_per_s_per_gpu


def test_gpt2_small_has_the_published_parameter_count() -> None:
    # GPT-2 small: 12 layers, 768 wide, 12 heads, 1,024 positions, 50,257 tokens: 124,439,808 weights (the
    # count Hugging Face's gpt2 checkpoint has). Megatron pads the vocabulary to 50,304 (a multiple of 128),
    # which adds 47 rows of 768.
    gpt2 = GPTShape(layers=12, hidden=768, heads=12, seq_length=1024, vocab=50257)
    assert gpt2.padded_vocab == 50304
    assert gpt2.parameters() == 124_439_808 + 47 * 768


def test_the_trillion_parameter_row_of_narayanan_et_al() -> None:
    # Narayanan et al. 2021 (arXiv:2104.04473), abstract and Table 1: a 1-trillion-parameter GPT (128 layers,
    # hidden 25,600, 160 heads, sequence 2,048, vocabulary 51,200) trained at 502 petaFLOP/s on 3,072 A100s,
    # "52% of theoretical peak" (A100 BF16 peak 312 TFLOP/s, A100 datasheet).
    trillion = GPTShape(layers=128, hidden=25600, heads=160, seq_length=2048, vocab=51200, global_batch=3072)
    assert trillion.parameters() == pytest.approx(1.008e12, rel=0.002)
    per_gpu = 502e15 / 3072 / 1e12
    assert round(mfu(per_gpu, 312) * 100) == 52
    # Equation 3 against the same run: the step time those figures imply, fed back, gives 163 TFLOP/s per GPU.
    step_s = trillion.flops_per_iteration() / 502e15
    assert model_tflops_per_gpu(trillion, step_s, 3072) == pytest.approx(per_gpu, rel=1e-9)


def test_equation_3_is_six_flops_per_parameter_and_token_plus_attention_and_logits() -> None:
    shape = GPTShape(layers=12, hidden=768, heads=12, seq_length=2048, vocab=256, micro_batch=4, global_batch=4)
    h, s, layers, v = 768, 2048, 12, shape.padded_vocab
    per_token = shape.flops_per_iteration() / shape.tokens_per_iteration
    assert per_token == pytest.approx(72 * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h)))
    assert per_token > 6 * 12 * layers * h * h  # never less than the 6N of the weights alone


def test_throughput_per_gpu() -> None:
    shape = GPTShape(layers=2, hidden=64, heads=4, seq_length=128, vocab=256, micro_batch=2, global_batch=16)
    assert tokens_per_s_per_gpu(shape, 0.5, 8) == pytest.approx(16 * 128 / 0.5 / 8)
    with pytest.raises(ValueError):
        tokens_per_s_per_gpu(shape, 0.0, 8)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"hidden": 100, "heads": 12}, "not a multiple of 12 attention heads"),
        ({"micro_batch": 3, "global_batch": 8}, "not a multiple of micro batch"),
        ({"layers": 0}, "at least 1"),
    ],
)
def test_impossible_shapes_are_refused(kwargs: dict[str, int], words: str) -> None:
    base = {"layers": 2, "hidden": 64, "heads": 4, "seq_length": 128, "vocab": 256, "micro_batch": 1, "global_batch": 8}
    with pytest.raises(ValueError, match=words):
        GPTShape(**{**base, **kwargs})
