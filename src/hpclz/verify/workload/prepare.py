"""Data preparation for the training proof (runs on a compute node, standard library only).

Reads documents (JSON lines with a "text" or "content" field, as the CodeParrot data set the seed names stores
code in "content"; or plain files, one document each) and writes JSON lines whose "text" is the document's
UTF-8 bytes as space-separated integers. That is the input Megatron-LM's NullTokenizer reads: its tokenize() is
`[int(x) for x in text.split(' ')]` and its end-of-document id is the vocabulary size
(megatron/training/tokenizer/tokenizer.py, _NullTokenizer), so tools/preprocess_data.py can run with
`--tokenizer-type NullTokenizer --vocab-size 256` and no tokenizer file, and nothing is downloaded from a hub.

    python3 prepare.py --out corpus_ids.jsonl --min-tokens N INPUT...
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

VOCAB = 256  # one token per byte
MAX_DOC_BYTES = 1 << 20  # a single huge file would starve the shuffle; longer documents are cut


def documents(path: Path) -> Iterator[str]:
    if path.suffix in (".jsonl", ".json"):
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise SystemExit(f"{path}:{number}: not a JSON line") from None
                text = record.get("text", record.get("content")) if isinstance(record, dict) else None
                if not isinstance(text, str):
                    raise SystemExit(f'{path}:{number}: no "text" or "content" string in the record')
                yield text
    else:
        yield path.read_text(encoding="utf-8", errors="replace")


def encode(text: str) -> str:
    return " ".join(str(b) for b in text.encode("utf-8")[:MAX_DOC_BYTES])


def prepare(inputs: list[Path], out: Path, min_tokens: int) -> int:
    """Write every non-empty document; repeat the corpus until it holds at least `min_tokens` tokens, so a short
    data set still fills the run's iterations without Megatron cycling epochs mid-measurement."""
    docs = [encode(text) for path in inputs for text in documents(path) if text.strip()]
    if not docs:
        raise SystemExit("no document with text in " + ", ".join(map(str, inputs)))
    size = sum(doc.count(" ") + 1 for doc in docs)
    copies = max(1, -(-min_tokens // size))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as sink:
        for _ in range(copies):
            for doc in docs:
                sink.write(json.dumps({"text": doc}) + "\n")
    return size * copies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--min-tokens", type=int, default=0)
    args = parser.parse_args(argv)
    tokens = prepare(args.inputs, args.out, args.min_tokens)
    print(f"prepared {tokens} tokens into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
