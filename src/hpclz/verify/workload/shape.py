"""The GPT the proof trains, and the arithmetic of its work: parameters, FLOPs per iteration, MFU.

Standard library only: the judge and the node-side stand-in both use it.

FLOPs: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
(SC21, arXiv:2104.04473), section 5.1, equation 3: a forward and backward pass of a GPT with L layers, hidden
size h, sequence length s, vocabulary V and batch B costs 72·B·s·L·h²·(1 + s/(6h) + V/(12·L·h)) floating-point
operations (no activation recomputation), counting the whole s x s attention. Megatron-LM's own "throughput
per GPU (TFLOP/s/GPU)" under --log-throughput was the same expression at NVIDIA/Megatron-LM@86df799
(megatron/training/training.py num_floating_point_operations: 12·B·s·L·h²·(1 + 4 + 1 + s/h + V/(2Lh)) for a
model without grouped-query attention, SwiGLU or experts, ffn_hidden_size = 4h); at f2619067, the commit the proof
pins, it halves the core-attention term for the causal mask (the same function, "causal mask (only half of the
mask is non-zero)"), so Megatron prints less: 45.0 against this module's 53.1 TFLOP/s for the same H100 steps
(tests/fixtures/megatron/h100-proof-run*.log). hpclz keeps equation 3, as PaLM's MFU counts the full attention.
MFU is that figure over the GPUs' dense peak (PaLM, Chowdhery et al. 2022, appendix B, defines model FLOPs
utilisation as achieved model FLOPs over peak FLOPs, counting no recomputation).
"""

from __future__ import annotations

from dataclasses import dataclass

# Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by (128 by default) times the tensor
# parallel size (megatron/training/tokenizer: _vocab_size_with_padding); the padded size is what it computes on.
VOCAB_DIVISOR = 128


@dataclass(frozen=True)
class GPTShape:
    layers: int
    hidden: int
    heads: int
    seq_length: int
    vocab: int  # the tokenizer's vocabulary, before Megatron pads it
    micro_batch: int = 1
    global_batch: int = 8

    def __post_init__(self) -> None:
        if min(self.layers, self.hidden, self.heads, self.seq_length, self.vocab, self.micro_batch) < 1:
            raise ValueError("every dimension of the model must be at least 1")
        if self.hidden % self.heads:
            raise ValueError(f"hidden size {self.hidden} is not a multiple of {self.heads} attention heads")
        if self.global_batch % self.micro_batch:
            raise ValueError(f"global batch {self.global_batch} is not a multiple of micro batch {self.micro_batch}")

    @property
    def padded_vocab(self) -> int:
        return -(-self.vocab // VOCAB_DIVISOR) * VOCAB_DIVISOR

    @property
    def tokens_per_iteration(self) -> int:
        return self.global_batch * self.seq_length

    def flops_per_iteration(self) -> float:
        """Model FLOPs of one iteration (forward and backward over the global batch), equation 3 above."""
        b, s, layers, h, v = self.global_batch, self.seq_length, self.layers, self.hidden, self.padded_vocab
        return 72.0 * b * s * layers * h * h * (1 + s / (6 * h) + v / (12 * layers * h))

    def parameters(self) -> int:
        """Weights of a GPT with learned position embeddings and tied output embedding, as Megatron builds it:
        per layer 12h² + 13h (QKV, projection, two MLP matrices with biases, two layer norms), plus the word
        and position embeddings and the final layer norm (Narayanan et al. section 5.1 counts 12·L·h² +
        V·h for the dominant terms)."""
        h = self.hidden
        return self.layers * (12 * h * h + 13 * h) + (self.padded_vocab + self.seq_length) * h + 2 * h


def model_tflops_per_gpu(shape: GPTShape, step_s: float, gpus: int) -> float:
    """Equation 3's model TFLOP/s per GPU for one iteration of `step_s` seconds (Megatron prints its own figure,
    which counts causal attention as half: see the module's docstring)."""
    if step_s <= 0 or gpus < 1:
        raise ValueError("step time must be positive and the run must have a GPU")
    return shape.flops_per_iteration() / (step_s * gpus * 1e12)


def mfu(achieved_tflops_per_gpu: float, peak_tflops_per_gpu: float) -> float:
    if peak_tflops_per_gpu <= 0:
        raise ValueError("peak must be positive")
    return achieved_tflops_per_gpu / peak_tflops_per_gpu


def tokens_per_s_per_gpu(shape: GPTShape, step_s: float, gpus: int) -> float:
    if step_s <= 0 or gpus < 1:
        raise ValueError("step time must be positive and the run must have a GPU")
    return shape.tokens_per_iteration / (step_s * gpus)


# The proof's model: GPT-2 small's shape (12 layers, 768 wide, 12 heads; Radford et al. 2019), a byte vocabulary,
# 2,048 tokens of context: small enough to train a few hundred steps in minutes on one GPU, large enough that
# its GEMMs keep a GPU busy.
PROOF_MODEL = GPTShape(layers=12, hidden=768, heads=12, seq_length=2048, vocab=256, micro_batch=4, global_batch=4)
# The CPU stand-in proves the scheduler, the shared folder and the job chain, not a CPU's speed: a model small
# enough that a step takes milliseconds on one core.
STANDIN_MODEL = GPTShape(layers=2, hidden=64, heads=4, seq_length=64, vocab=256, micro_batch=4, global_batch=4)
