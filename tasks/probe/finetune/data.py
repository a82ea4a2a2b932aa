"""Alpaca-format instruction data for the fine-tune: load, tokenise, pack to seq_len, DataLoader.

    .venv/bin/python -m tasks.probe.finetune.data tasks/probe/finetune/alpaca_sample.jsonl   # (re)generate the sample

Records are JSON objects with string fields instruction, output and optional input, one per line
(blank lines are skipped). Each record is rendered with the Stanford Alpaca prompt template, wrapped
in BOS/EOS, concatenated and cut into seq_len blocks (packing, as throughput-minded fine-tunes do);
the loss covers every token. With no local tokenizer a byte-level one is used (ids 0-255 are the
UTF-8 bytes, 256 BOS, 257 EOS). Bad input raises DataError naming the file, the line and the field.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler

SAMPLE_PATH = Path(__file__).with_name("alpaca_sample.jsonl")

# Stanford Alpaca (github.com/tatsu-lab/stanford_alpaca, train.py PROMPT_DICT, read 2026-12-02).
PROMPT_INPUT = ("Below is an instruction that describes a task, paired with an input that provides further "
                "context. Write a response that appropriately completes the request.\n\n"
                "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n")
PROMPT_NO_INPUT = ("Below is an instruction that describes a task. Write a response that appropriately "
                   "completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:\n")


class DataError(ValueError):
    """Unusable fine-tune data: names the file, the line and what was expected."""


class ByteTokenizer:
    """UTF-8 bytes as token ids; no vocabulary file needed, same ids on every host."""

    bos_token_id, eos_token_id, vocab_size = 256, 257, 258

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def __len__(self) -> int:
        return self.vocab_size


class HFTokenizer:
    """A local Hugging Face tokenizer directory (never downloaded)."""

    def __init__(self, path: str):
        from transformers import AutoTokenizer

        try:
            self.tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a usable local tokenizer directory ({e})") from None
        self.bos_token_id = self.tok.bos_token_id
        self.eos_token_id = self.tok.eos_token_id
        self.vocab_size = len(self.tok)

    def encode(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def __len__(self) -> int:
        return self.vocab_size


def load_tokenizer(path: str | None):
    return HFTokenizer(path) if path else ByteTokenizer()


def read_alpaca(path: str | Path) -> list[dict[str, str]]:
    """Read and check an Alpaca JSONL file; DataError names file:line and the bad field."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: fine-tune data file not found (expected Alpaca-format JSONL)")
    records = []
    with p.open("r", encoding="utf-8", errors="strict") as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise DataError(f"{p}:{lineno}: malformed JSON ({e.msg} at column {e.colno})") from None
                if not isinstance(rec, dict):
                    raise DataError(f"{p}:{lineno}: expected a JSON object, got {type(rec).__name__}")
                for key in ("instruction", "output"):
                    if not isinstance(rec.get(key), str):
                        raise DataError(f"{p}:{lineno}: field '{key}' must be a string, got {rec.get(key)!r:.60}")
                if not isinstance(rec.get("input", ""), str):
                    raise DataError(f"{p}:{lineno}: field 'input' must be a string, got {rec['input']!r:.60}")
                records.append({"instruction": rec["instruction"], "input": rec.get("input", ""),
                                "output": rec["output"]})
        except UnicodeDecodeError as e:
            raise DataError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start} of a line)") from None
    if not records:
        raise DataError(f"{p}: no records (expected one JSON object per line)")
    return records


def render(rec: dict[str, str]) -> str:
    template = PROMPT_INPUT if rec["input"] else PROMPT_NO_INPUT
    return template.format(**rec) + rec["output"]


def pack(records: list[dict[str, str]], tokenizer, seq_len: int, *, min_blocks: int = 1) -> torch.Tensor:
    """Token stream of all records cut into [n_blocks, seq_len] (repeated until min_blocks fit)."""
    stream: list[int] = []
    for rec in records:
        ids = tokenizer.encode(render(rec))
        if tokenizer.bos_token_id is not None:
            ids = [tokenizer.bos_token_id] + ids
        if tokenizer.eos_token_id is not None:
            ids = ids + [tokenizer.eos_token_id]
        stream.extend(ids)
    need = max(min_blocks, 1) * seq_len
    reps = -(-need // len(stream))
    flat = torch.tensor(stream * reps, dtype=torch.long)
    n_blocks = len(flat) // seq_len
    return flat[: n_blocks * seq_len].view(n_blocks, seq_len)


class PackedBlocks(Dataset):
    def __init__(self, blocks: torch.Tensor):
        self.blocks = blocks

    def __len__(self) -> int:
        return self.blocks.shape[0]

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.blocks[i]


def make_loader(blocks: torch.Tensor, micro_batch: int, *, num_samples: int, pin_memory: bool,
                num_workers: int = 2, seed: int = 0) -> DataLoader:
    """A real DataLoader: sampling with replacement (any number of steps), workers, pinned memory."""
    gen = torch.Generator().manual_seed(seed)
    sampler = RandomSampler(PackedBlocks(blocks), replacement=True, num_samples=num_samples, generator=gen)
    return DataLoader(PackedBlocks(blocks), batch_size=micro_batch, sampler=sampler, drop_last=True,
                      num_workers=num_workers, pin_memory=pin_memory,
                      persistent_workers=False, prefetch_factor=4 if num_workers else None)


_WORDS = ("river stone cloud lamp garden engine violin harbor pepper window silver meadow rocket "
          "candle forest mirror tunnel orchard beacon planet").split()


def generate_sample(n: int = 400, seed: int = 20261202) -> list[dict[str, str]]:
    """Deterministic synthetic Alpaca records (arithmetic, word order, sorting, plurals)."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            a, b = r.randint(1, 9999), r.randint(1, 9999)
            out.append({"instruction": "Add the two numbers.", "input": f"{a} + {b}", "output": f"{a + b}"})
        elif kind == 1:
            words = r.sample(_WORDS, r.randint(3, 8))
            out.append({"instruction": "Reverse the order of the words.", "input": " ".join(words),
                        "output": " ".join(reversed(words))})
        elif kind == 2:
            nums = [r.randint(0, 500) for _ in range(r.randint(3, 10))]
            out.append({"instruction": "Sort the list in ascending order.", "input": str(nums),
                        "output": str(sorted(nums))})
        else:
            w = r.choice(_WORDS)
            out.append({"instruction": f"Write one sentence that uses the word '{w}'.", "input": "",
                        "output": f"The {w} near the {r.choice(_WORDS)} was {r.choice(['quiet', 'bright', 'old', 'new'])}."})
    return out


def write_sample(path: str | Path = SAMPLE_PATH, n: int = 400, seed: int = 20261202) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(rec, sort_keys=True) + "\n" for rec in generate_sample(n, seed))
    tmp = p.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)
    return p


if __name__ == "__main__":
    print(write_sample(sys.argv[1] if len(sys.argv) > 1 else SAMPLE_PATH))
