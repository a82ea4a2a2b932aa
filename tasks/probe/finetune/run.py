"""The short fine-tune benchmark: presets x (searched configuration, precision, compile) -> bundle records.

    .venv/bin/python -c "from tasks.probe.finetune.run import run_finetunes; print(run_finetunes(['tiny'], device='cpu', sampler=None, budget_s=60, options={'steps': 8})[0][0]['tokens_per_s'])"

Entry point for the probe's runner:
    run_finetunes(presets, *, device, sampler, budget_s, options=None) -> (finetunes, attempts)
Each try of each preset is one attempt (task "finetune:<preset>"). Every card is measured at its
best configuration, found by measurement (issue 35): plan.candidates lists what the memory model says
fits, search.py trials each on the built model during the warm-up and keeps the fastest; a trial's
out-of-memory drops that candidate (recorded in `configs_tried`), it is not a failure. If nothing
fits down to micro-batch 1, the preset is "not_applicable": a card too small is not an unreliable
card. An out-of-memory after the trials passed (in the timed phase) is a failed attempt (error_kind
"oom": the cost model's rerun signal), tried again below that micro-batch. A pinned configuration
(--micro-batch with --checkpointing) runs exactly as given.
Other failures are classified cuda_error / timeout / crash (NaN loss: failed, error_kind "other").
`options` keys: see FinetuneOptions (the CLI's --model, --tokenizer, --data map onto them).
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from tasks.probe.finetune import data as fdata
from tasks.probe.finetune import presets as fpresets
from tasks.probe.finetune import search as fsearch
from tasks.probe.finetune.encoder import mask_token_id
from tasks.probe.finetune.flops import flops_per_token, mfu
from tasks.probe.finetune.plan import candidates, memory_budget, not_applicable
from tasks.probe.finetune.record import FinetuneOptions, _att, base_record, classify, closed  # noqa: F401
from tasks.probe.finetune.steady import steady_steps
from tasks.probe.finetune.train import (NonFiniteLoss, ProbeTimeout, choose_precision, make_optimizer,
                               make_scaler, make_step, timed_phase)

GPU_WARMUP_S = 20.0  # FinetuneOptions.warmup_min_s's GPU default (why: see that field)
MIN_ENERGY_WINDOW_S = 3.0  # issue 4: energy over "a window of several seconds"; shorter -> NULL


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _peak(device: torch.device, precision: str, opts: FinetuneOptions) -> float | None:
    if opts.peak_tflops is not None:
        return opts.peak_tflops
    if device.type != "cuda":
        return None  # no catalog peak for CPUs: MFU stays NULL
    from tasks.probe.host import specs

    return specs.lookup(torch.cuda.get_device_name(device)).peak_tflops(precision)


def _release() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    try:
        torch._dynamo.reset()
    except Exception:
        pass


def _attempt(p, blocks, *, device, precision, cands, compile_, sampler, deadline, opts,
             nf4=None, mlm=None) -> dict:
    """One try: build, search the candidates (search.py) as part of the warm-up, carry on warming
    up the fastest, timed phase. Returns the measured fields. Peak memory is the chosen
    configuration's, counted after the search (a QLoRA build holds the bf16 weights briefly)."""
    cuda = device.type == "cuda"
    # growing adds plain candidates at larger micro-batches: only where neither half is pinned
    may_grow = cuda and opts.search and opts.micro_batch is None and opts.activation_checkpointing is None
    model, cfg, meta = fpresets.build_preset(p.name, device, precision=precision,
                                             activation_checkpointing=cands[0].checkpointing,
                                             model_path=opts.model, seed=opts.seed, preset=p,
                                             nf4_backend=nf4)
    optimizer = make_optimizer(model, p.lr, device.type)
    runner = torch.compile(model, dynamic=False) if compile_ else model
    step = make_step(runner, optimizer, precision=precision, device=str(device),
                     scaler=make_scaler(precision, device.type), mlm=mlm, seed=opts.seed)
    if opts.inject_oom_above is not None:
        step = _inject_oom(step, opts.inject_oom_above)
    loaders: dict[int, tuple] = {}

    def batch_for(mb: int) -> torch.Tensor:
        if mb not in loaders:
            loader = fdata.make_loader(blocks, mb, num_samples=mb * 1_000_000, pin_memory=cuda,
                                       num_workers=opts.num_workers, seed=opts.seed)
            loaders[mb] = (loader, iter(loader))
        return next(loaders[mb][1])

    try:
        found = fsearch.search(
            cands, step=step, batch_for=batch_for,
            set_checkpointing=lambda on: fpresets.set_checkpointing(model, on),
            recover=lambda: fsearch.release(optimizer),
            estimate=lambda ck, mb: fpresets.estimate_bytes(p, mb, precision=precision, checkpointing=ck,
                                                            compiled=compile_),
            device=device, seq_len=p.seq_len, compile_=compile_, trial_s=opts.trial_s,
            rounds=opts.trial_rounds, deadline=deadline, log=lambda m: _log(f"{p.name}: {m}"),
            capacity_bytes=memory_budget(device, opts)[1] if may_grow else None,
            max_micro_batch=p.micro_batch_max, pinned=opts.pinned)
        for mb in [m for m in loaders if m != found.winner.cand.micro_batch]:
            del loaders[mb]  # the losers' DataLoader workers go now
        mb = found.winner.cand.micro_batch
        tokens_per_step = mb * p.seq_len
        warm_losses = found.losses
        first_s = found.winner.first_s
        # the trials' steps were warm-up load too; their first steps (compiles) were not
        t1 = time.perf_counter() - (found.search_s - sum(t.first_s or 0.0 for t in found.trials))
        warm_min_s = opts.warmup_min_s if opts.warmup_min_s is not None else (GPU_WARMUP_S if cuda else 0.0)
        while True:
            if time.perf_counter() > deadline:
                raise ProbeTimeout("warm-up passed the fine-tune budget")
            if len(warm_losses) >= opts.warmup_steps:
                if cuda:
                    torch.cuda.synchronize(device)
                if time.perf_counter() - t1 >= warm_min_s:
                    break
            warm_losses.append(step(batch_for(mb)))
        if sampler is not None:
            sampler.set_phase(f"finetune:{p.name}")
        gpus = _nvml_gpus(sampler, device)
        window = None if sampler is None else sampler.window(gpus=gpus) if gpus else sampler.window()
        if window is not None:
            window.__enter__()
        try:
            res = timed_phase(step, lambda: batch_for(mb), tokens_per_step=tokens_per_step, device=str(device),
                              rule=None if opts.steps else opts.steady, fixed_steps=opts.steps,
                              deadline=deadline)
        finally:
            if window is not None:
                window.__exit__(None, None, None)
            if sampler is not None:  # the phase names the timed window only (host/busy.py reads it)
                sampler.set_phase("finetune")
    finally:
        loaders.clear()
    first = float(warm_losses[0])
    if not math.isfinite(first):
        raise NonFiniteLoss("loss became NaN/Inf in warm-up")
    timed = steady_steps(res["step_time_s"], res["window_steps"])  # tokens/s from the steady part
    med = statistics.median(timed)
    tps = tokens_per_step / med
    fpt = flops_per_token(mode=p.mode, n_non_embedding=meta["params_non_embedding"],
                          n_layers=cfg.num_hidden_layers, hidden=cfg.hidden_size, seq_len=p.seq_len,
                          n_lora=meta["params_lora"])
    peak = _peak(device, precision, opts)
    timed_tokens = tokens_per_step * len(res["step_time_s"])
    energy = None
    if window is not None and window.duration_s >= MIN_ENERGY_WINDOW_S:
        energy = window.energy_j()
    tail = res["losses"][-3:]
    out = {
        "model_source": meta["model_source"], "params_total": meta["params_total"],
        "params_trainable": meta["params_trainable"], "params_non_embedding": meta["params_non_embedding"],
        "steps_warmup": len(warm_losses), "steps_timed": len(res["step_time_s"]),
        "tokens_per_s": tps, "step_time_s": res["step_time_s"], "step_time_median_s": med,
        "step_time_p10_s": _quantile(timed, 0.1), "step_time_p90_s": _quantile(timed, 0.9),
        "window_tokens_per_s": res["window_tokens_per_s"], "steady": res["steady"],
        "compile_s": max(0.0, first_s - med) if compile_ else None,
        "build_s": meta["build_s"], "flops_per_token": fpt, "peak_tflops": peak, "mfu": mfu(tps, fpt, peak),
        "peak_mem_allocated_gib": torch.cuda.max_memory_allocated(device) / 2**30 if cuda else None,
        "peak_mem_reserved_gib": torch.cuda.max_memory_reserved(device) / 2**30 if cuda else None,
        "energy_j": energy, "j_per_token": energy / timed_tokens if energy is not None else None,
        "kwh_per_mtok": energy / timed_tokens * 1e6 / 3.6e6 if energy is not None else None,
        "loss_first": first, "loss_last": sum(tail) / len(tail),
        "conditions": window.conditions() if window is not None else None,
        "micro_batch": mb, "activation_checkpointing": found.winner.cand.checkpointing,
        "configs_tried": [t.record() for t in found.trials], "search_s": found.search_s,
        "search_added_s": _added(found, warm_min_s),
    }
    del model, optimizer, runner, step
    return out


def _added(found, warm_min_s: float) -> float:
    """Seconds the search added to this fine-tune against running its first candidate alone: the other
    candidates' first steps (compiles, where the preset compiles), and whatever part of the trials' load
    outlasted the warm-up that would have run anyway (GPU_WARMUP_S)."""
    firsts = [t.first_s for t in found.trials if t.first_s is not None]
    load = found.search_s - sum(firsts)
    return sum(firsts[1:]) + max(0.0, load - warm_min_s)


def _inject_oom(step, limit: int):
    """Tests: an OutOfMemoryError for any batch above `limit` rows (0: every batch)."""
    def oom_step(batch):
        if batch.shape[0] > limit:
            raise torch.OutOfMemoryError(f"injected: micro-batch {batch.shape[0]} > {limit}")
        return step(batch)
    return oom_step


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def run_preset(name: str, *, device: str, sampler, deadline: float, opts: FinetuneOptions, records):
    """All tries of one preset -> (finetune record, attempts)."""
    p = fpresets.get_preset(name)
    if opts.model:
        p = fpresets.preset_for_model(p, opts.model)
    dev = _device(device)
    cap = torch.cuda.get_device_capability(dev) if dev.type == "cuda" else None
    precision, note = choose_precision(dev.type, cap)
    if opts.precision is not None and opts.precision != precision:
        precision, note = opts.precision, f"{opts.precision} (forced by option; the GPU's own choice: {note})"
    compile_ = p.compile if opts.compile is None else opts.compile
    rec = base_record(p, dev, precision, compile_)
    task = f"finetune:{name}"
    why, nf4 = not_applicable(p, dev)
    if why:
        return closed(rec, "not_applicable", why), [_att(task, 1, "not_applicable", None, why, 0.0, _now())]
    if nf4:
        note = f"{note}; {nf4[1]}"
    if time.perf_counter() > deadline:
        return closed(rec, "skipped", "no fine-tune budget left"), [
            _att(task, 1, "skipped", None, "no fine-tune budget left", 0.0, _now())]
    if dev.type == "cuda" and opts.memory_fraction is not None:
        torch.cuda.set_per_process_memory_fraction(opts.memory_fraction, dev)
    tok = fdata.load_tokenizer(opts.tokenizer or fpresets.tokenizer_dir(opts.model))
    if len(tok) > p.vocab:
        raise fdata.DataError(f"tokenizer has {len(tok)} tokens but preset {name} has vocab {p.vocab}")
    blocks = fdata.pack(records, tok, p.seq_len, min_blocks=p.micro_batch_max)
    mlm = (mask_token_id(tok, p.vocab), len(tok)) if p.objective == "mlm" else None
    pinned = opts.pinned
    cands = candidates(p, precision, dev, opts, compiled=compile_)
    if not cands:
        why = f"does not fit: estimated memory at micro-batch 1 exceeds the card ({note})"
        return closed(rec, "not_applicable", why), [_att(task, 1, "not_applicable", None, why, 0.0, _now())]
    rec["config_search"] = "pinned" if pinned else ("searched" if opts.search else "fixed")
    attempts, n = [], 0
    while True:
        n += 1
        started, t0 = _now(), time.perf_counter()
        rec.update(micro_batch=cands[0].micro_batch, activation_checkpointing=cands[0].checkpointing)
        failure, nothing_fits = None, None
        _log(f"{name}: attempt {n}, {rec['config_search']}: {'; '.join(c.label() for c in cands)}, "
             f"{precision}, compile {compile_}")
        try:
            out = _attempt(p, blocks, device=dev, precision=precision, cands=cands, compile_=compile_,
                           sampler=sampler, deadline=deadline, opts=opts, nf4=nf4[0] if nf4 else None,
                           mlm=mlm)
        except fsearch.NothingFits as exc:  # every candidate out of memory in its trial, down to 1
            nothing_fits = str(exc)[:3000]
        except Exception as exc:  # classified below: every try is an attempt
            state, kind = classify(exc)
            failure = (state, kind, f"{kind} at {cands[0].label() if len(cands) == 1 else 'the chosen configuration'}:"
                                    f" {exc}"[:4000])
        _release()  # outside the except block: the traceback no longer pins the model's memory
        if nothing_fits is not None:
            msg = f"does not fit ({note}): {nothing_fits}"[:4000]
            attempts.append(_att(task, n, "not_applicable", "oom", msg, time.perf_counter() - t0, started))
            for a in attempts:
                a["state"] = "not_applicable"  # nothing fits: the card is too small, not unreliable
            return closed(rec, "not_applicable", msg), attempts
        if failure is not None:
            state, kind, msg = failure
            _log(f"{name}: {msg[:300]}")
            attempts.append(_att(task, n, state, kind, msg, time.perf_counter() - t0, started))
            if kind != "oom":
                return closed(rec, "failed", msg), attempts
            # out of memory after the trials passed (the timed phase): a real failure, tried again
            # below the micro-batches that ran out; a pinned configuration is tried exactly as given
            ceiling = max(c.micro_batch for c in cands) // 2
            cands = [] if pinned or ceiling < 1 else candidates(p, precision, dev, opts, ceiling=ceiling,
                                                                             compiled=compile_)
            if cands:
                continue
            for a in attempts:
                a["state"] = "not_applicable"
            return closed(rec, "not_applicable", f"does not fit ({note}): {msg}"[:4000]), attempts
        rec.update(out)
        decreased = out["loss_last"] < out["loss_first"]
        if not decreased:
            msg = f"loss did not decrease ({out['loss_first']:.4f} -> {out['loss_last']:.4f})"
            attempts.append(_att(task, n, "failed", "other", msg, time.perf_counter() - t0, started))
            return closed(rec, "failed", msg), attempts
        attempts.append(_att(task, n, "completed", None, None, time.perf_counter() - t0, started))
        status = "unstable" if out["steady"] is False else "ok"
        _log(f"{name}: {status}, {out['tokens_per_s']:.0f} tokens/s over {out['steps_timed']} steps, "
             f"compile {out['compile_s']}, build {out['build_s']:.1f} s")
        return closed(rec, status, note), attempts


def _nvml_gpus(sampler, device: torch.device) -> list[int] | None:
    """The NVML index of `device` (matched by UUID) when several GPUs are visible, so one GPU's
    fine-tune is not charged the idle GPUs' energy; None: all GPUs (one GPU, or no match)."""
    handles, nv = getattr(sampler, "handles", None) or [], getattr(sampler, "nv", None)
    if device.type != "cuda" or nv is None or len(handles) < 2:
        return None
    try:
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        found = [i for i, h in enumerate(handles) if uuid in str(nv.nvmlDeviceGetUUID(h))]
    except Exception:  # older torch without .uuid, or NVML refusing: fall back to all GPUs
        return None
    return found[:1] or None


def _device(device: str) -> torch.device:
    """A device with an index ("cuda" -> "cuda:<current>"): memory APIs insist on one."""
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def _log(msg: str) -> None:
    print(f"[finetune {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def check_inputs(presets: list[str], options: dict | None) -> tuple[FinetuneOptions, list[dict]]:
    """Validate presets, options, --data, --model and --tokenizer before anything runs (the CLI
    calls this first, so a typo costs seconds, not a GEMM sweep). Raises ValueError / DataError."""
    opts = FinetuneOptions.from_dict(options)
    for name in presets:
        fpresets.get_preset(name)
    records = fdata.read_alpaca(opts.data or fdata.SAMPLE_PATH)
    for flag, path in (("--model", opts.model), ("--tokenizer", opts.tokenizer)):
        if path and not Path(path).is_dir():
            raise fdata.DataError(f"{path}: {flag} must be a local Hugging Face directory (no downloads)")
    return opts, records


def run_finetunes(presets: list[str], *, device: str, sampler, budget_s: float,
                  options: dict | None = None) -> tuple[list[dict], list[dict]]:
    """Run each preset in turn within budget_s; returns (finetune records, attempt dicts).

    Raises ValueError/DataError (a person's mistake: bad option, --data, --tokenizer) before any run."""
    opts, records = check_inputs(presets, options)
    deadline = time.perf_counter() + budget_s
    finetunes, attempts = [], []
    broken = None
    for name in presets:
        if broken:
            p = fpresets.get_preset(name)
            rec = closed(base_record(p, torch.device(device), "bf16", False), "skipped", broken)
            finetunes.append(rec)
            attempts.append(_att(f"finetune:{name}", 1, "skipped", None, broken, 0.0, _now()))
            continue
        try:
            rec, atts = run_preset(name, device=device, sampler=sampler, deadline=deadline, opts=opts,
                                   records=records)
        finally:
            if opts.memory_fraction is not None and _device(device).type == "cuda":
                torch.cuda.set_per_process_memory_fraction(1.0, _device(device))
        finetunes.append(rec)
        attempts.extend(atts)
        if any(a["error_kind"] == "cuda_error" for a in atts):
            broken = f"skipped: the CUDA context is unusable after a cuda_error in {name}"
    return finetunes, attempts
