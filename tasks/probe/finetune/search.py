"""Each card at its best: the fine-tune's configuration found by measurement (issue 35).

    .venv/bin/pytest -q tests/test_finetune_search.py

plan.candidates lists what the memory model says fits (checkpointing off at the largest micro-batch,
on at the largest it allows). `search` runs them on the one model the attempt built, after warm-up
steps of their own (the first one compiles where the preset compiles), then times each for a short
reading (`trial_s`), in alternating rounds so the power-cap drift of the first seconds favours none,
the way the GEMM search ranks its sustained shapes. An out-of-memory in a trial drops that candidate
with the reason, never a failure; only when every candidate is out of memory are they tried again at
half the micro-batch, down to 1. The fastest is chosen; the attempt then carries on warming it up and
runs the steady-state measurement on it. Every candidate goes into the bundle (`configs_tried`).

The trials run inside the warm-up the GPU needs anyway (GPU_WARMUP_S, run.py): the search costs the
extra candidates' compiles and whatever part of the trials outlasts the warm-up.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from tasks.probe.finetune.plan import Candidate
from tasks.probe.finetune.record import classify
from tasks.probe.finetune.train import ProbeTimeout, _check_finite, _Timer

SETTLE_STEPS = 1  # untimed steps of a candidate before each reading: the allocator settles at the
#   new shape (its first step, which compiles where the preset compiles, came before the rounds)
MIN_TRIAL_STEPS = 2  # a reading has at least this many steps, however slow one step is
GROW_HEADROOM = 0.92  # a larger micro-batch is tried when its predicted peak is within this share of
#   the card: allocated is not reserved (fragmentation), and an out-of-memory costs only a dropped step
DOMINATED = ("dominated: the same micro-batch runs without checkpointing, and checkpointing only "
             "adds the recomputed forward")


class NothingFits(RuntimeError):
    """Every candidate, halved down to micro-batch 1, ran out of memory in its trial."""


@dataclass
class Trial:
    """What became of one candidate."""

    cand: Candidate
    compile: bool
    seq_len: int = 1  # tokens per row: tokens/s = micro-batch x seq_len / median step time
    outcome: str = ""  # "chosen" | "slower" | "dropped"
    reason: str | None = None
    first_s: float | None = None  # its first step (compilation included where the preset compiles)
    step_times: list[float] = field(default_factory=list)  # its timed trial steps
    peak_bytes: int | None = None

    @property
    def tokens_per_s(self) -> float | None:
        if not self.step_times:
            return None
        return self.cand.micro_batch * self.seq_len / statistics.median(self.step_times)

    def record(self) -> dict:
        """The bundle's ConfigTried."""
        return {"micro_batch": self.cand.micro_batch, "activation_checkpointing": self.cand.checkpointing,
                "compile": self.compile, "estimated_gib": self.cand.estimated_bytes / 2**30,
                "outcome": self.outcome, "tokens_per_s": self.tokens_per_s,
                "peak_mem_allocated_gib": None if self.peak_bytes is None else self.peak_bytes / 2**30,
                "reason": self.reason}


@dataclass
class Found:
    winner: Trial
    trials: list[Trial]
    losses: list[torch.Tensor]  # every step the search ran (they count as warm-up)
    search_s: float


def search(cands: list[Candidate], *, step: Callable, batch_for: Callable[[int], torch.Tensor],
           set_checkpointing: Callable[[bool], None], recover: Callable[[], None],
           estimate: Callable[[bool, int], float], device: torch.device, seq_len: int, compile_: bool,
           trial_s: float, rounds: int, deadline: float, log: Callable[[str], None],
           capacity_bytes: float | None = None, max_micro_batch: int | None = None, pinned: bool = False) -> Found:
    """Run the candidates' trials and leave the model set to the fastest. Raises NothingFits when
    every candidate, halved down to micro-batch 1, ran out of memory.

    On a GPU (`capacity_bytes`: the card's memory) a plain candidate that ran also grows the search:
    its measured peak predicts the peak at twice the micro-batch (the state it left allocated plus
    twice its step's own memory), and where that fits GROW_HEADROOM of the card, the larger
    micro-batch is tried too. The memory model is rough (it over-counts compiled and LoRA activations);
    what a step measured is not. A `pinned` configuration is never halved or grown."""
    cuda = device.type == "cuda"
    timer = _Timer(str(device))
    trials = [Trial(c, compile_, seq_len=seq_len) for c in cands]
    standby = {t.cand.micro_batch: t for t in trials if t.cand.dominated}
    queue = [t for t in trials if not t.cand.dominated]
    alive: list[Trial] = []
    losses: list[torch.Tensor] = []
    t_start = time.perf_counter()

    def peak_reset():
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)

    def peak_read(t: Trial):
        if cuda:
            t.peak_bytes = max(t.peak_bytes or 0, torch.cuda.max_memory_allocated(device))

    while queue:
        t = queue.pop(0)
        if time.perf_counter() > deadline:
            raise ProbeTimeout("the configuration search passed the fine-tune budget")
        oom = None
        try:
            set_checkpointing(t.cand.checkpointing)
            peak_reset()
            t0 = time.perf_counter()
            losses.append(step(batch_for(t.cand.micro_batch)))
            timer.sync()
            t.first_s = time.perf_counter() - t0
            peak_read(t)
        except Exception as exc:  # an out-of-memory drops the candidate; anything else is the attempt's
            if classify(exc)[1] != "oom":
                raise
            oom = str(exc).splitlines()[0][:300]
        if oom is None:
            alive.append(t)
            log(f"trial {t.cand.label()}: first step {t.first_s:.1f} s"
                + (f", peak {t.peak_bytes / 2**30:.1f} GiB" if t.peak_bytes else ""))
            grown = _grow(t, capacity_bytes, max_micro_batch, trials, device) if cuda else None
            if grown is not None:
                log(f"trial {grown.cand.label()}: added, its predicted peak "
                    f"{grown.cand.estimated_bytes / 2**30:.1f} GiB fits the card")
                trials.append(grown)
                queue.insert(0, grown)
                for q in [q for q in queue if q.cand.checkpointing and q.cand.micro_batch == grown.cand.micro_batch]:
                    queue.remove(q)  # now dominated by the plain one at its micro-batch
                    standby[q.cand.micro_batch] = q
            continue
        recover()  # outside the except block: the traceback no longer pins the activations
        t.outcome, t.reason = "dropped", f"out of memory in its trial: {oom}"
        log(f"trial {t.cand.label()}: dropped, out of memory")
        if not t.cand.checkpointing and t.cand.micro_batch in standby:
            queue.append(standby.pop(t.cand.micro_batch))  # no longer dominated: the plain one failed
        if not queue and not alive and not pinned:  # every candidate ran out of memory: halve them
            tried = {(x.cand.checkpointing, x.cand.micro_batch) for x in trials}
            halves = sorted({(x.cand.checkpointing, x.cand.micro_batch // 2) for x in trials
                             if x.outcome == "dropped" and x.cand.micro_batch > 1} - tried)
            for ck, mb in halves:  # plain first; checkpointing waits where plain tries the same mb
                dominated = ck and (False, mb) in halves
                half = Trial(Candidate(ck, mb, estimate(ck, mb), dominated=dominated), compile_, seq_len=seq_len)
                trials.append(half)
                if dominated:
                    standby[mb] = half
                else:
                    queue.append(half)
    for t in standby.values():
        t.outcome, t.reason = "dropped", DOMINATED
    if not alive:
        raise NothingFits("no configuration fits: " + "; ".join(
            f"{t.cand.label()}: {t.reason}" for t in trials if t.reason))
    if len(alive) > 1:
        for r in range(rounds):
            for t in (alive if r % 2 == 0 else alive[::-1]):
                if t.outcome == "dropped":
                    continue
                oom = None
                try:
                    set_checkpointing(t.cand.checkpointing)
                    peak_reset()
                    for _ in range(SETTLE_STEPS):  # untimed: the allocator settles at the new shape
                        losses.append(step(batch_for(t.cand.micro_batch)))
                    t.step_times += _reading(step, batch_for, t.cand.micro_batch, timer, trial_s, deadline, losses)
                    peak_read(t)
                except Exception as exc:
                    if classify(exc)[1] != "oom":
                        raise
                    oom = str(exc).splitlines()[0][:300]
                if oom is not None:
                    recover()
                    t.outcome, t.reason, t.step_times = "dropped", f"out of memory in its trial: {oom}", []
        alive = [t for t in alive if t.outcome != "dropped"]
    if not alive:
        raise NothingFits("no configuration fits: " + "; ".join(
            f"{t.cand.label()}: {t.reason}" for t in trials if t.reason))
    if len(alive) > 1:
        winner = max(alive, key=lambda t: t.tokens_per_s)
        for t in alive:
            t.outcome = "chosen" if t is winner else "slower"
        winner.reason = "fastest trial of " + ", ".join(
            f"{t.cand.label()} ({t.tokens_per_s:,.0f} tokens/s)" for t in alive)
    else:
        winner = alive[0]
        winner.outcome = "chosen"
        winner.reason = "pinned by the run" if pinned else "the only candidate that fits"
    _check_finite(losses)
    set_checkpointing(winner.cand.checkpointing)
    peak_reset()
    log(f"chose {winner.cand.label()}: {winner.reason}")
    return Found(winner, trials, losses, time.perf_counter() - t_start)


def _grow(t: Trial, capacity: float | None, max_mb: int | None, trials: list[Trial], device) -> Trial | None:
    """The plain candidate at twice t's micro-batch, when t's measured peak predicts it fits."""
    if t.cand.checkpointing or not capacity or not t.peak_bytes or max_mb is None:
        return None
    mb = t.cand.micro_batch * 2
    if mb > max_mb or any(not x.cand.checkpointing and x.cand.micro_batch == mb for x in trials):
        return None
    kept = torch.cuda.memory_allocated(device)  # weights and optimizer state, the step's memory freed
    predicted = kept + 2 * max(0, t.peak_bytes - kept)
    if predicted > capacity * GROW_HEADROOM:
        return None
    return Trial(Candidate(False, mb, predicted), t.compile, seq_len=t.seq_len)


def _reading(step, batch_for, mb: int, timer: _Timer, trial_s: float, deadline: float, losses: list) -> list[float]:
    """One candidate's timed steps: at least MIN_TRIAL_STEPS and `trial_s` of wall time."""
    marks, t0 = [], time.perf_counter()
    while len(marks) < MIN_TRIAL_STEPS or time.perf_counter() - t0 < trial_s:
        if time.perf_counter() > deadline:
            raise ProbeTimeout("a configuration trial passed the fine-tune budget")
        batch = batch_for(mb)
        mark = timer.start()
        losses.append(step(batch))
        timer.stop(mark)
        marks.append(mark)
        if not timer.cuda:
            continue
        if len(marks) % 8 == 0:  # host runs ahead of the GPU: sync now and then so wall time is real
            timer.sync()
    timer.sync()
    return [timer.seconds(m) for m in marks]


def release(optimizer) -> None:
    """After an out-of-memory: drop half-made gradients and cached blocks (the model stays)."""
    optimizer.zero_grad(set_to_none=True)
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
