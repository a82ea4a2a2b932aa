"""One fine-tune process of the sharing part: build, warm up, say ready, wait for "go", train for a fixed time.

    echo go | python -m tasks.probe.finetune.share_worker --preset tiny --device cpu --micro-batch 1 --warmup-s 0.3 --duration-s 1

Started by tasks/probe/finetune/sharing.py, one of several on one GPU (plain processes: no MPS, no
MIG). Protocol on stdout, one JSON object a line: {"ready": ...} once warmed up; then, for each line
read from stdin (a go signal: to this job alone, or to every job at once so their timed windows
overlap), it trains for `duration_s` and prints {"tokens_per_s": ...}; stdin closed: it exits.
Eager (no torch.compile, whatever the preset's default): the part compares one job alone against
several together at the same settings, and a compile would cost each process tens of seconds.
Timing: the host clock from go to a synchronised end (the steps are asynchronous; the one sync at
the end closes the window). A failure prints {"error": ...} and exits 1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch


def _emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def run(a: argparse.Namespace) -> None:
    from tasks.probe.finetune import data as fdata
    from tasks.probe.finetune import presets as fpresets
    from tasks.probe.finetune.encoder import mask_token_id
    from tasks.probe.finetune.train import choose_precision, make_optimizer, make_scaler, make_step

    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.set_device(dev)
        if a.memory_fraction:
            torch.cuda.set_per_process_memory_fraction(a.memory_fraction, dev)
    p = fpresets.get_preset(a.preset)
    precision, _ = choose_precision(dev.type, torch.cuda.get_device_capability(dev) if cuda else None)
    model, _, meta = fpresets.build_preset(p.name, dev, precision=precision, seed=a.seed)
    opt = make_optimizer(model, p.lr, dev.type)
    tok = fdata.load_tokenizer(None)
    mlm = (mask_token_id(tok, p.vocab), len(tok)) if p.objective == "mlm" else None
    step = make_step(model, opt, precision=precision, device=str(dev), scaler=make_scaler(precision, dev.type),
                     mlm=mlm, seed=a.seed)
    blocks = fdata.pack(fdata.read_alpaca(fdata.SAMPLE_PATH), tok, p.seq_len, min_blocks=a.micro_batch)
    loader = fdata.make_loader(blocks, a.micro_batch, num_samples=a.micro_batch * 1_000_000, pin_memory=cuda,
                               num_workers=a.workers, seed=a.seed)
    it = iter(loader)
    t0, losses = time.perf_counter(), []
    while len(losses) < 2 or time.perf_counter() - t0 < a.warmup_s:
        losses.append(step(next(it)))
    if cuda:
        torch.cuda.synchronize(dev)
    _emit({"ready": True, "precision": precision, "micro_batch": a.micro_batch, "build_s": meta["build_s"]})
    while sys.stdin.readline():  # one timed window per go signal; stdin closed: done
        t0, steps = time.perf_counter(), 0
        while time.perf_counter() - t0 < a.duration_s:
            losses.append(step(next(it)))
            steps += 1
        if cuda:
            torch.cuda.synchronize(dev)
        elapsed = time.perf_counter() - t0
        first, last = float(losses[0]), float(losses[-1])
        if not (math.isfinite(first) and math.isfinite(last)):
            raise RuntimeError(f"loss became NaN/Inf ({first} -> {last})")
        _emit({"tokens_per_s": steps * a.micro_batch * p.seq_len / elapsed, "steps": steps, "elapsed_s": elapsed,
               "micro_batch": a.micro_batch, "seq_len": p.seq_len, "precision": precision,
               "peak_mem_gib": torch.cuda.max_memory_allocated(dev) / 2**30 if cuda else None,
               "loss_first": first, "loss_last": last})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tasks.probe.finetune.share_worker")
    ap.add_argument("--preset", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--micro-batch", type=int, required=True)
    ap.add_argument("--warmup-s", type=float, required=True)
    ap.add_argument("--duration-s", type=float, required=True)
    ap.add_argument("--memory-fraction", type=float, default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    try:
        run(a)
    except Exception as e:  # the parent records it as the attempt's failure
        _emit({"error": f"{type(e).__name__}: {e}"[:2000],
               "oom": isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()})
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
