"""The fine-tune's vocabulary: its options, failure classes, and the record/attempt dicts it emits.

    .venv/bin/pytest -q tests/test_finetune.py -k "classify or options"
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from tasks.probe.finetune.steady import SteadyRule
from tasks.probe.finetune.train import NonFiniteLoss, ProbeTimeout


@dataclass(frozen=True)
class FinetuneOptions:
    """Per-run knobs; every field has a default so a profile name alone reproduces a run."""

    model: str | None = None  # --model: local HF checkpoint dir replacing random init (production path)
    tokenizer: str | None = None  # --tokenizer: local tokenizer dir; None = the model's, else bytes
    data: str | None = None  # --data: Alpaca JSONL; None = the shipped generated sample
    compile: bool | None = None  # torch.compile; None = the preset's default
    precision: str | None = None  # "bf16" | "fp16" | "fp32"; None = what the GPU supports (recorded)
    activation_checkpointing: bool | None = None  # --checkpointing on|off pins it; None = searched
    micro_batch: int | None = None  # --micro-batch pins it; None = searched (search.py). Both given:
    #   the run is exactly that configuration (a reproducible run), no search, no fallback
    search: bool = True  # try every candidate the memory model says fits and measure the fastest
    #   (issue 35); False (the quick profile): the largest micro-batch that fits, no trials
    trial_s: float = 2.0  # one timed reading of one candidate: 2+ steps of an 8B model on an H100
    trial_rounds: int = 2  # readings per candidate, in alternating order: a drifting clock
    #   (the power cap) favours none; 2 x 2 candidates x 2 s fits inside the 20 s GPU warm-up
    memory_budget_gib: float | None = None  # plan against this many GiB instead of the card's free
    #   memory (tests on a CPU; what-if runs); the allocator is not capped (memory_fraction does that)
    steps: int | None = None  # fixed timed steps (quick profile); None = the steady-state rule
    warmup_steps: int = 3  # untimed: first step compiles, the next ones settle the allocator
    warmup_min_s: float | None = None  # and at least this long after the first step; None: 20 s
    #   on a GPU, 0 on CPU. At the power cap an H200's clock keeps sinking for ~30 s (1b windows
    #   fell ~0.3% per 4 s window for the first ~25 s after a 5 s warm-up, then ~0.1%; samples
    #   94a54702, ff7d6305), so timing starts past the steepest part of the drift
    steady: SteadyRule = field(default_factory=SteadyRule)  # issue 10.3 stop rule
    peak_tflops: float | None = None  # overrides the spec catalog (tasks/probe/host/specs.py)
    num_workers: int = 2  # DataLoader workers: real fine-tunes feed from worker processes
    memory_fraction: float | None = None  # CUDA: cap the allocator to simulate a smaller card
    inject_oom_above: int | None = None  # tests: OutOfMemoryError above this micro-batch (0: always)
    seed: int = 0  # init and data order

    def __post_init__(self):
        for name, low in (("micro_batch", 1), ("steps", 1), ("inject_oom_above", 0), ("trial_rounds", 1)):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < low):
                raise ValueError(f"finetune option {name} = {v!r}: expected an integer >= {low}")
        if self.warmup_min_s is not None and not self.warmup_min_s >= 0:
            raise ValueError(f"finetune option warmup_min_s = {self.warmup_min_s!r}: expected >= 0")
        if self.warmup_steps < 1:
            raise ValueError(f"finetune option warmup_steps = {self.warmup_steps!r}: expected >= 1")
        if not self.trial_s > 0:
            raise ValueError(f"finetune option trial_s = {self.trial_s!r}: expected > 0")
        if self.memory_budget_gib is not None and not self.memory_budget_gib > 0:
            raise ValueError(f"finetune option memory_budget_gib = {self.memory_budget_gib!r}: expected > 0")
        if self.memory_fraction is not None and not 0 < self.memory_fraction <= 1:
            raise ValueError(f"finetune option memory_fraction = {self.memory_fraction!r}: expected (0, 1]")
        if self.precision not in (None, "bf16", "fp16", "fp32"):
            raise ValueError(f"finetune option precision = {self.precision!r}: expected bf16, fp16 or fp32")
        if self.peak_tflops is not None and not self.peak_tflops > 0:
            raise ValueError(f"finetune option peak_tflops = {self.peak_tflops!r}: expected > 0")

    @property
    def pinned(self) -> bool:
        """Both --micro-batch and --checkpointing given: the run is exactly that configuration."""
        return self.micro_batch is not None and self.activation_checkpointing is not None

    @classmethod
    def from_dict(cls, d: dict | None) -> "FinetuneOptions":
        d = dict(d or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown finetune option(s) {unknown}; expected some of {sorted(known)}")
        if isinstance(d.get("steady"), dict):
            d["steady"] = SteadyRule(**d["steady"])
        return cls(**d)


def classify(exc: BaseException) -> tuple[str, str]:
    """(attempt state, error_kind) for an exception raised by one try."""
    chain, e = [], exc
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(x, torch.OutOfMemoryError) or "out of memory" in str(x).lower() for x in chain):
        return "failed", "oom"
    if isinstance(exc, ProbeTimeout):
        return "failed", "timeout"
    if isinstance(exc, NonFiniteLoss):
        return "failed", "other"
    accel = getattr(torch, "AcceleratorError", ())
    if any((accel and isinstance(x, accel)) or "CUDA error" in str(x) or "CUBLAS_STATUS" in str(x)
           for x in chain):
        return "failed", "cuda_error"
    return "crashed", "crash"


def _att(task, n, state, kind, message, duration_s, started_at) -> dict:
    return {"task": task, "attempt": n, "state": state, "error_kind": kind, "message": message,
            "duration_s": max(0.0, duration_s), "started_at": started_at}


def base_record(p, device: torch.device, precision: str, compile_: bool) -> dict:
    """The fields known before any step runs; the measured ones are added by the attempt."""
    return {
        "preset": p.name, "model_source": "preset", "status": "failed", "mode": p.mode,
        "precision": precision, "device": device.type, "n_gpus": 1, "seq_len": p.seq_len,
        "micro_batch": None, "grad_accum": 1, "compile": bool(compile_),
        "activation_checkpointing": False, "config_search": None, "configs_tried": [], "search_s": None,
        "search_added_s": None,
    }


def closed(rec: dict, status: str, message: str | None) -> dict:
    """A finished record: status set, message kept short, measured-only fields left as given."""
    out = dict(rec)
    out["status"] = status
    out["message"] = message[:4000] if message else None
    if status in ("skipped", "not_applicable"):
        out["micro_batch"] = None
    return out
