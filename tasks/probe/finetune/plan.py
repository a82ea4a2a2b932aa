"""Before a fine-tune runs: can the preset run on this device at all, and at which micro-batch.

    .venv/bin/pytest -q tests/test_finetune.py -k "plan or not_applicable"

`not_applicable` answers first: a preset whose model library is not installed, a GPU-only preset on
a CPU, or a QLoRA preset with no working NF4 backend (qlora.py) is not_applicable with the reason,
never a failure. `plan` then turns the memory model (presets.estimate_bytes) and the card's free
memory into the first guess of (activation checkpointing, micro-batch); run.py's OOM ladder
corrects a wrong guess.
"""

from __future__ import annotations

import math

import torch

from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune.record import FinetuneOptions

TARGET_TOKENS_PER_STEP = 8192  # below this the GPU idles between kernels: worth checkpointing instead
MEMORY_HEADROOM = 0.85  # of free memory the first guess may plan to use (fragmentation, workspaces)


def not_applicable(p: fpresets.Preset, dev: torch.device) -> tuple[str | None, tuple[str, str] | None]:
    """(why the preset cannot run here, or None; (NF4 backend, its note) for a qlora preset)."""
    why = [w for w in (missing_library(p),) if w]
    if p.gpu_only and dev.type != "cuda":
        why.append(f"{p.name} needs a CUDA GPU ({p.gpu_only})")
    nf4 = None
    if p.mode == "qlora":
        from tasks.probe.finetune import qlora

        name, nf4_note = qlora.backend(dev if dev.type == "cuda" else torch.device("cpu"))
        if name is None:
            why.append(nf4_note)
        nf4 = (name, nf4_note)
    return ("; ".join(why) or None), nf4


def missing_library(p: fpresets.Preset) -> str | None:
    """Why the preset's model library does not import here (transformers; peft for LoRA), or None:
    a GPU host may have torch alone, and a missing library is a fact of the host, not a crash."""
    try:
        import transformers  # noqa: F401
        if p.mode == "lora":
            import peft  # noqa: F401
    except ImportError as e:
        return f"{p.name} needs {e.name or 'a library'}, not installed here ({e})"
    return None


def plan(p: fpresets.Preset, precision: str, device: torch.device, opts: FinetuneOptions):
    """(activation_checkpointing, first micro-batch), or None when even micro-batch 1 cannot fit."""
    ckpt_opt = opts.activation_checkpointing
    if opts.micro_batch is not None:
        return bool(ckpt_opt), opts.micro_batch
    if device.type != "cuda":
        return bool(ckpt_opt), p.micro_batch_max
    free, total = torch.cuda.mem_get_info(device)
    if opts.memory_fraction is not None:
        total = total * opts.memory_fraction
        free = min(free, total)
    budget = free * MEMORY_HEADROOM

    def fit(ckpt: bool) -> int:
        mb = 1 << int(math.log2(p.micro_batch_max))
        while mb >= 1 and fpresets.estimate_bytes(p, mb, precision=precision, checkpointing=ckpt) > budget:
            mb //= 2
        return mb

    if ckpt_opt is not None:
        mb = fit(ckpt_opt)
    else:
        plain, ckpt = fit(False), fit(True)
        want = min(p.micro_batch_max, max(1, TARGET_TOKENS_PER_STEP // p.seq_len))
        ckpt_opt, mb = (False, plain) if plain >= want or ckpt <= plain else (True, ckpt)
    if mb >= 1:
        return ckpt_opt, mb
    ckpt_opt = True if opts.activation_checkpointing is None else ckpt_opt
    if fpresets.estimate_bytes(p, 1, precision=precision, checkpointing=ckpt_opt) > total:
        return None  # clearly too big for this card: do not even try
    return ckpt_opt, 1
