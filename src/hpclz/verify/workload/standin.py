"""The CPU stand-in for Megatron-LM: the same chain steps, a small GPT trained with torch's gloo backend.

No GPU and no container exist where hpclz's own tests run, yet the harness (the Slurm job chain, the logs, the
parser, the judge, the report) must run end to end. This module plays the two Megatron steps:

- `preprocess`: corpus_ids.jsonl (from prepare.py) -> one flat token file with an end-of-document id after each
  document, as preprocess_data.py --append-eod does (the id is the vocabulary size, as NullTokenizer's eod);
- `train`: a decoder-only GPT of the requested shape, data parallel over every task of the Slurm step (one rank
  per task, rank = SLURM_PROCID), printing Megatron's own iteration line (hpclz.verify.workload.megatron_log).

Fault injection for tests, not product behaviour: HPCLZ_VERIFY_THROTTLE_NODE names a node whose rank sleeps
HPCLZ_VERIFY_THROTTLE_S per iteration (as hpclz.verify.collective_job does), because a process cannot make its
own host slower any other honest way.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from array import array
from pathlib import Path
from typing import Any

from hpclz.verify.workload.megatron_log import Iteration, format_line
from hpclz.verify.workload.prepare import VOCAB

THROTTLE_NODE = "HPCLZ_VERIFY_THROTTLE_NODE"
THROTTLE_S = "HPCLZ_VERIFY_THROTTLE_S"
TOKENS_SUFFIX = "_text_document.tokens"


def preprocess(source: Path, prefix: Path) -> Path:
    tokens = array("H")
    with source.open(encoding="utf-8") as lines:
        for line in lines:
            text = json.loads(line)["text"]
            tokens.extend(int(x) for x in text.split(" "))
            tokens.append(VOCAB)  # end of document
    out = Path(str(prefix) + TOKENS_SUFFIX)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as sink:
        tokens.tofile(sink)
    print(f"wrote {len(tokens)} tokens to {out}")
    return out


def _model(torch: Any, layers: int, hidden: int, heads: int, seq: int, vocab: int) -> Any:
    nn = torch.nn
    module: Any = nn.Module  # torch is imported by the caller, on the node, not at this module's import

    class TinyGPT(module):  # type: ignore[misc]  # a subclass of Any
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.position = nn.Embedding(seq, hidden)
            layer = nn.TransformerEncoderLayer(
                hidden, heads, 4 * hidden, dropout=0.0, batch_first=True, norm_first=True
            )
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(hidden)
            for table in (self.embed, self.position):  # GPT-2's initialisation (std 0.02), as Megatron's default
                nn.init.normal_(table.weight, std=0.02)
            self.register_buffer("causal", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

        def forward(self, tokens: Any) -> Any:
            positions = torch.arange(tokens.shape[1])
            x = self.embed(tokens) + self.position(positions)
            x = self.blocks(x, mask=self.causal, is_causal=True)
            return self.norm(x) @ self.embed.weight.T  # output layer tied to the embedding, as Megatron's default

    return TinyGPT()


def train(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("SLURM_PROCID", "0")), int(os.environ.get("SLURM_NTASKS", "1"))
    dist.init_process_group("gloo", rank=rank, world_size=world, init_method="env://")
    torch.set_num_threads(1)  # one rank per node: several ranks sharing a test host's cores must not oversubscribe
    torch.manual_seed(1234)  # every rank starts from the same weights, as DDP expects
    data = array("H")
    path = Path(str(args.data_prefix) + TOKENS_SUFFIX)
    with path.open("rb") as source:
        data.frombytes(source.read())
    tokens = torch.tensor(data, dtype=torch.long)
    vocab = VOCAB + 1
    model = torch.nn.parallel.DistributedDataParallel(
        _model(torch, args.num_layers, args.hidden_size, args.num_attention_heads, args.seq_length, vocab)
    )
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(rank)
    slow = os.environ.get(THROTTLE_NODE) == socket.gethostname() or os.environ.get(THROTTLE_NODE) == os.environ.get(
        "SLURMD_NODENAME"
    )
    pause = float(os.environ.get(THROTTLE_S, "0.05")) if slow else 0.0
    seq, micro = args.seq_length, args.micro_batch_size
    for iteration in range(1, args.train_iters + 1):
        dist.barrier()
        start = time.perf_counter()
        starts = torch.randint(0, len(tokens) - seq - 1, (micro,), generator=generator)
        batch = torch.stack([tokens[s : s + seq + 1] for s in starts.tolist()])
        logits = model(batch[:, :-1])
        loss: Any = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), batch[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if pause:
            time.sleep(pause)
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        dist.barrier()
        elapsed = (time.perf_counter() - start) * 1000.0
        if rank == 0:
            line = Iteration(iteration, args.train_iters, elapsed, float(mean) / world, micro * world)
            print(format_line(line), flush=True)
    dist.destroy_process_group()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="CPU stand-in for Megatron-LM's preprocess_data.py and pretrain_gpt.py"
    )
    steps = parser.add_subparsers(dest="step", required=True)
    pre = steps.add_parser("preprocess")
    pre.add_argument("--input", type=Path, required=True)
    pre.add_argument("--output-prefix", type=Path, required=True)
    tr = steps.add_parser("train")
    tr.add_argument("--data-prefix", type=Path, required=True)
    for name in ("num-layers", "hidden-size", "num-attention-heads", "seq-length", "micro-batch-size", "train-iters"):
        tr.add_argument(f"--{name}", type=int, required=True)
    tr.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args(argv)
    if args.step == "preprocess":
        preprocess(args.input, args.output_prefix)
        return 0
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
