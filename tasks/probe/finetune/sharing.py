"""Two fine-tunes on one card: one job alone, then `jobs` copies at once, as plain processes (no MPS, no MIG).

    python -c "from tasks.probe.finetune.sharing import measure_sharing; from tasks.probe.profiles import QUICK; \
print(measure_sharing(QUICK.sharing, 'tiny', device='cpu'))"

Sharing a card (time slicing, vGPU/qGPU) is sold as a cost lever; whether it raises the tokens per
hour paid for is measured here. `jobs` fresh processes (share_worker.py) run at the same
micro-batch: the largest the memory model fits in 1/jobs of the card's free memory (each process
capped at that share of the card), so the alone run is the same job a shared one is. Every job
builds and warms up; the first then trains alone for `duration_s` while the others wait idle (an
idle context takes no GPU time), and then all get "go" at once and train for `duration_s`, their
timed windows overlapping. Reported per preset: tokens/s alone, the aggregate tokens/s of the jobs
together, and the sharing gain = aggregate / alone - 1. GPU utilization over each timed window rides along in params
(from the run's NVML samples, phase "sharing:<preset>:alone|together"). Two copies that do not fit
are not_applicable, as is a GPU-only preset on a CPU.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune.plan import MEMORY_HEADROOM, largest_fit, not_applicable
from tasks.probe.finetune.train import choose_precision
from tasks.probe.host.busy import phase_rows, summary
from tasks.probe.profiles import SharingConfig
from tasks.probe.record import NotApplicable, measurement

BENCHMARK = "sharing"
VERSION = "1"
ROOT = Path(__file__).resolve().parents[3]  # the checkout: `tasks` importable from here


def plan(cfg: SharingConfig, preset: str, device: str) -> tuple[int, float | None, str]:
    """(micro-batch, per-process memory fraction or None, precision) for `cfg.jobs` copies of `preset`."""
    p = fpresets.get_preset(preset)
    dev = torch.device(device)
    if dev.type != "cuda" and not cfg.on_cpu:
        raise NotApplicable("no GPU: two fine-tunes on one card need a card to share")
    why, _ = not_applicable(p, dev)
    if why:
        raise NotApplicable(why)
    if p.mode != "full":
        raise NotApplicable(f"{preset}: the sharing part runs full fine-tunes only (mode {p.mode})")
    cuda = dev.type == "cuda"
    precision, _ = choose_precision(dev.type, torch.cuda.get_device_capability(dev) if cuda else None)
    if not cuda:
        return cfg.micro_batch or p.micro_batch_max, None, precision
    torch.cuda.empty_cache()  # this process's cached blocks would otherwise count against the jobs
    free, total = torch.cuda.mem_get_info(dev)
    share = free * MEMORY_HEADROOM / cfg.jobs
    mb = cfg.micro_batch or largest_fit(p, precision, False, share)
    if mb < 1:
        raise NotApplicable(f"{cfg.jobs} copies of {preset} do not fit: micro-batch 1 needs more than "
                            f"{share / 2**30:.1f} GiB each ({free / 2**30:.1f} GiB free)")
    return mb, round(free * 0.95 / cfg.jobs / total, 4), precision


class _Job:
    """One worker process and a thread reading its stdout lines into a queue."""

    def __init__(self, args: list[str]):
        self.err = tempfile.TemporaryFile(mode="w+")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen([sys.executable, "-m", "tasks.probe.finetune.share_worker", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                     cwd=str(ROOT), env=env)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next_message(self, deadline: float) -> dict:
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError("a sharing job timed out") from None
            if line is None:
                self.err.seek(0)
                raise RuntimeError(f"a sharing job exited ({self.proc.wait()}): {self.err.read()[-1500:]}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a library printed to stdout: not ours
            if "error" in msg:
                kind = "out of memory" if msg.get("oom") else "failed"
                raise RuntimeError(f"a sharing job {kind}: {msg['error']}")
            return msg

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # the worker's loop ends: it exits on its own
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def _window(jobs: list[_Job], deadline: float, sampler, phase: str) -> tuple[list[dict], dict | None]:
    """One timed window of `jobs` at once (go to each, then their results), and the GPU's busy summary over it."""
    before = sampler.phase if sampler is not None else ""
    if sampler is not None:
        sampler.set_phase(phase)
    try:
        for j in jobs:
            j.proc.stdin.write("go\n")
            j.proc.stdin.flush()
        results = [j.next_message(deadline) for j in jobs]
    finally:
        if sampler is not None:
            sampler.set_phase(before)
    busy = None
    if sampler is not None and getattr(sampler, "nv", None) is not None:
        tops = [c for c in sampler.max_clock_mhz if c]
        busy = summary(phase_rows(sampler, phase), float(max(tops)) if tops else None)
    return results, busy


def measure_sharing(cfg: SharingConfig, preset: str, *, device: str, sampler=None) -> list[dict]:
    """alone_tokens_per_s, aggregate_tokens_per_s and sharing_gain for `preset` on `device`."""
    mb, fraction, precision = plan(cfg, preset, device)
    args = ["--preset", preset, "--device", device, "--micro-batch", str(mb), "--warmup-s", str(cfg.warmup_s),
            "--duration-s", str(cfg.duration_s)] + (["--memory-fraction", str(fraction)] if fraction else [])
    if not str(device).startswith("cuda"):
        args += ["--workers", "0"]  # CI's CPU run: the feed is not what is measured, and every process counts
    deadline = time.monotonic() + cfg.timeout_s
    jobs = [_Job(args) for _ in range(cfg.jobs)]
    try:
        for j in jobs:
            j.next_message(deadline)  # ready: built and warmed up
        (alone,), busy1 = _window(jobs[:1], deadline, sampler, f"sharing:{preset}:alone")  # the others idle
        together, busy2 = _window(jobs, deadline, sampler, f"sharing:{preset}:together")
    finally:
        for j in jobs:
            j.close()
    x1 = alone["tokens_per_s"]
    xs = [r["tokens_per_s"] for r in together]
    agg = sum(xs)
    common = {"preset": preset, "micro_batch": mb, "seq_len": alone["seq_len"], "precision": precision,
              "duration_s": cfg.duration_s, "memory_fraction": fraction, "mps": False, "mig": False}

    def util(b):
        return round(b["util_mean_pct"], 2) if b else None

    return [
        measurement(BENCHMARK, VERSION, "alone_tokens_per_s", x1, "tokens/s",
                    params={**common, "jobs": 1, "steps": alone["steps"], "util_mean_pct": util(busy1),
                            "peak_mem_gib": alone["peak_mem_gib"]}, repeats=alone["steps"], statistic="single"),
        measurement(BENCHMARK, VERSION, "aggregate_tokens_per_s", agg, "tokens/s",
                    params={**common, "jobs": cfg.jobs, "job_tokens_per_s": [round(x, 2) for x in xs],
                            "util_mean_pct": util(busy2),
                            "peak_mem_gib": max((r["peak_mem_gib"] or 0) for r in together) or None},
                    repeats=sum(r["steps"] for r in together), statistic="single"),
        measurement(BENCHMARK, VERSION, "sharing_gain", agg / x1 - 1, "fraction",
                    params={**common, "jobs": cfg.jobs, "alone_tokens_per_s": round(x1, 2),
                            "aggregate_tokens_per_s": round(agg, 2)}, repeats=1, statistic="single"),
    ]
