"""Before a fine-tune runs: can the preset run on this device at all, and which configurations to try.

    .venv/bin/pytest -q tests/test_finetune.py -k "plan or not_applicable" tests/test_finetune_search.py

`not_applicable` answers first: a preset whose model library is not installed, a GPU-only preset on
a CPU, or a QLoRA preset with no working NF4 backend (qlora.py) is not_applicable with the reason,
never a failure. `candidates` then turns the memory model (presets.estimate_bytes) and the card's
free memory into the configurations worth a trial (issue 35): activation checkpointing off at the
largest micro-batch that fits, and on at the largest micro-batch it allows. No rule of thumb picks
between them: search.py measures both and keeps the faster. Checkpointing at a micro-batch the plain
run reaches too is the same step plus a recomputed forward; it is listed as dominated and only run
if the plain one runs out of memory. A pinned configuration (--micro-batch and --checkpointing) is
the only candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune.record import FinetuneOptions

MEMORY_HEADROOM = 0.85  # of free memory a candidate may plan to use (fragmentation, workspaces)



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


@dataclass(frozen=True)
class Candidate:
    """One configuration to try: checkpointing, micro-batch, and the memory model's estimate."""

    checkpointing: bool
    micro_batch: int
    estimated_bytes: float
    dominated: bool = False  # checkpointing at a micro-batch the plain run reaches too: run only
    #   if the plain one runs out of memory

    def label(self) -> str:
        return f"micro-batch {self.micro_batch}, checkpointing {'on' if self.checkpointing else 'off'}"


def memory_budget(device: torch.device, opts: FinetuneOptions) -> tuple[float, float]:
    """(bytes a candidate may plan to use, bytes the card has): free memory x MEMORY_HEADROOM on a
    GPU, `memory_budget_gib` where given, unbounded on a CPU."""
    if opts.memory_budget_gib is not None:
        total = opts.memory_budget_gib * 2**30
        return total, total
    if device.type != "cuda":
        return math.inf, math.inf
    free, total = torch.cuda.mem_get_info(device)
    if opts.memory_fraction is not None:
        total = total * opts.memory_fraction
        free = min(free, total)
    return free * MEMORY_HEADROOM, total


def largest_fit(p: fpresets.Preset, precision: str, ckpt: bool, budget: float, ceiling: int | None = None,
                compiled: bool = False) -> int:
    """The largest power-of-two micro-batch <= ceiling (default: the preset's maximum) whose
    estimate fits `budget`; 0 when even micro-batch 1 does not."""
    mb = 1 << int(math.log2(min(ceiling or p.micro_batch_max, p.micro_batch_max)))
    while mb >= 1 and fpresets.estimate_bytes(p, mb, precision=precision, checkpointing=ckpt,
                                              compiled=compiled) > budget:
        mb //= 2
    return mb


def candidates(p: fpresets.Preset, precision: str, device: torch.device, opts: FinetuneOptions,
               ceiling: int | None = None, compiled: bool = False) -> list[Candidate]:
    """The configurations to try, in trial order (plain first), or [] when none can fit the card.

    Pinned (both --micro-batch and --checkpointing): exactly that one. One of them pinned: the other
    is searched. `opts.search` False (the quick profile): one candidate, the largest micro-batch that
    fits without checkpointing, else with it."""
    est = lambda ck, mb: fpresets.estimate_bytes(p, mb, precision=precision, checkpointing=ck,  # noqa: E731
                                                 compiled=compiled)
    ck_pin, mb_pin = opts.activation_checkpointing, opts.micro_batch
    if ck_pin is not None and mb_pin is not None:
        return [Candidate(ck_pin, mb_pin, est(ck_pin, mb_pin))]
    budget, total = memory_budget(device, opts)
    out: list[Candidate] = []
    for ck in ((False, True) if ck_pin is None else (ck_pin,)):
        mb = mb_pin or largest_fit(p, precision, ck, budget, ceiling, compiled)
        if mb >= 1:
            out.append(Candidate(ck, mb, est(ck, mb)))
    if not out:  # nothing fits the planning budget: micro-batch 1 may still fit the card itself
        ck = True if ck_pin is None else ck_pin
        return [Candidate(ck, 1, est(ck, 1))] if est(ck, 1) <= total else []
    plain = next((c for c in out if not c.checkpointing), None)
    out = [Candidate(c.checkpointing, c.micro_batch, c.estimated_bytes,
                     dominated=c.checkpointing and plain is not None and c.micro_batch <= plain.micro_batch)
           for c in out]
    if not opts.search:
        return out[:1]
    return out
