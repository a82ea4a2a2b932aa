"""Estimated tokens/s and cost per 1M tokens for instance types not yet measured (issue 25).

    costgap estimate --preset 1b --json
    costgap estimate --preset 8b-lora --gpu A10 --top 5

`predict` is pure: a measured preset (tasks.estimate.calibrate.Workload), a GPU's datasheet row and a
count give tokens/s with a 90% interval and one line per assumption, or "does not fit" / "no
estimate" with the reason, never a made-up number. It knows precision (no bf16: fp16 at its own
peak, fp32 master weights), memory fit (every configuration the memory model says fits the card, as
the probe searches them: without checkpointing at the largest micro-batch, with it at the largest it
allows, its recomputed forward charged; the fastest is reported, else "does not fit"), and the compute- and
bandwidth-bound parts of a step. `candidates` prices every catalog instance type whose GPU is known:
C and R through tasks.cost.model (never re-written here), R from the type's own fine-tune history when
it has one, else the fleet-wide failure rate of the preset. A type with measured runs of the preset
shows its measurement (tasks.cost.table), never the estimate. Estimates are only ever read by their
own surfaces: nothing here writes a measured table, a gap, an alert or gap_history.csv.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tasks.estimate import calibrate as cal_
from tasks.cost.derived import TierConfig
from tasks.cost.model import effective_cost, failure_rate, rerun_factor

MODEL_VERSION = "2"  # 2: the fastest configuration that fits, as the probe's search (issue 35); bump when the estimator's method changes: older track-record rows say which one made them
TIER = TierConfig()  # memory headroom and the assumed multi-GPU scaling efficiency: the cost domain's, once


@dataclass
class Prediction:
    """One (GPU, count, preset) estimate. tokens_per_s is None when there is no estimate (see `reason`)."""

    preset: str
    gpu: str | None
    gpu_count: int
    tokens_per_s: float | None = None
    lo: float | None = None
    hi: float | None = None
    precision: str | None = None
    micro_batch: int | None = None
    checkpointing: bool = False
    fit: str = "no estimate"  # as measured | smaller micro-batch | checkpointing | does not fit | no estimate
    compute_share: float | None = None  # of a step's modelled time: the rest is bandwidth-bound
    reason: str = ""
    assumptions: list[str] = field(default_factory=list)


def _precision(w: cal_.Workload, sheet: cal_.Sheet) -> tuple[str | None, str | None]:
    if sheet.peaks.get(w.precision):
        return w.precision, None
    if w.precision == "bf16" and sheet.peaks.get("fp16"):
        return "fp16", (f"no bf16 on {sheet.key}: fp16 with loss scaling at its own peak ({sheet.peaks['fp16']:g} "
                        "TFLOP/s)" + (", fp32 master weights, grads and moments (16 B/param)" if w.mode == "full"
                                      else ", the frozen base in fp16"))
    return None, None


def _largest(w: cal_.Workload, precision: str, usable: float, ckpt: bool) -> int:
    """The measured micro-batch halved until the step fits `usable` bytes (0: not even 1)."""
    state, keep, mb = w.state_bytes(precision), (cal_.CKPT_KEEP if ckpt else 1.0), w.micro_batch
    while mb >= 1 and state + mb * w.seq_len * w.act_bytes_per_token * keep > usable:
        mb //= 2
    return mb


def configs(w: cal_.Workload, precision: str, usable: float) -> list[tuple[int, bool]]:
    """The configurations the memory model says fit, as the probe tries them (tasks/probe/finetune/plan.py
    `candidates`): without checkpointing at the largest micro-batch, and with it at the largest it
    allows where that is bigger (at the same micro-batch it is only the same step plus a recomputed
    forward). No rule of thumb picks between them: `predict` estimates each and keeps the fastest."""
    plain, ckpt = _largest(w, precision, usable, False), _largest(w, precision, usable, True)
    out = [(plain, False)] if plain >= 1 else []
    if ckpt >= 1 and ckpt > plain:
        out.append((ckpt, True))
    return out


def predict(w: cal_.Workload, sheet: cal_.Sheet | None, count: int, cal: cal_.Calibration,
            gpu_name: str | None = None) -> Prediction:
    """Tokens/s of preset `w` on `count` x `sheet`, with its 90% interval and assumptions."""
    out = Prediction(w.preset, sheet.key if sheet else gpu_name, count)
    if sheet is None:
        out.reason = f"GPU {gpu_name!r} has no datasheet entry in gpu_specs.json: no estimate"
        return out
    precision, note = _precision(w, sheet)
    if precision is None:
        out.reason = f"{sheet.key}: no {w.precision} or fp16 peak in gpu_specs.json: no estimate"
        return out
    usable = sheet.memory_gib * cal_.GIB * TIER.memory_headroom
    fits = configs(w, precision, usable)
    out.precision = precision
    if not fits:
        out.fit = "does not fit"
        state = w.state_bytes(precision)
        need = state + w.seq_len * w.act_bytes_per_token * cal_.CKPT_KEEP
        out.reason = (f"does not fit: {w.preset} in {precision} needs ~{need / cal_.GIB:.1f} GiB at micro-batch 1 with "
                      f"activation checkpointing ({state / cal_.GIB:.1f} GiB of it weights, gradients and optimizer "
                      f"state); {sheet.memory_gib:g} GiB x {TIER.memory_headroom:g} = {usable / cal_.GIB:.1f} GiB usable")
        return out
    kappa, own = cal.kappa_for(w.preset)
    scale = 1.0 if count == 1 else count * TIER.assumed_scaling_efficiency
    steps = {c: cal_.step_time(w, sheet, precision, c[0], c[1], cal.eff) for c in fits}
    rate = {c: kappa / st.seconds * scale for c, st in steps.items()}  # step_time is seconds per token
    (mb, ckpt) = max(fits, key=lambda c: rate[c])
    step = steps[(mb, ckpt)]
    x = rate[(mb, ckpt)]
    width = math.exp(cal.log_halfwidth)
    out.tokens_per_s, out.lo, out.hi = x, x / width, x * width
    out.micro_batch, out.checkpointing = mb, ckpt
    out.fit = "checkpointing" if ckpt else ("as measured" if mb == w.micro_batch else "smaller micro-batch")
    out.compute_share = step.compute_s / step.seconds
    a = out.assumptions
    a.append(f"GPU {gpu_name or sheet.key} read as gpu_specs.json:{sheet.key} ({sheet.source}, {sheet.date})")
    a.append(f"{w.preset}: {w.flops_per_token / 1e9:.3g} GFLOP/token from its measured MFU on {w.gpu_name} "
             f"({w.runs} runs)")
    if note:
        a.append(note)
    a.append(f"compute at {cal.eff.get(precision, cal.eff.get('bf16')):.0%} of the {precision} peak "
             f"({sheet.peaks[precision]:g} TFLOP/s), memory traffic {step.bytes / 1e6:.3g} MB/token at "
             f"{cal.eff['copy']:.0%} of {sheet.bandwidth_gbps:g} GB/s: the measured GEMM and copy efficiencies")
    a.append(f"step {out.compute_share:.0%} compute-bound, {1 - out.compute_share:.0%} bandwidth-bound")
    need = (w.state_bytes(precision) + mb * w.seq_len * w.act_bytes_per_token * (cal_.CKPT_KEEP if ckpt else 1)) / cal_.GIB
    if out.fit == "as measured":
        a.append(f"memory: micro-batch {mb} as measured, ~{need:.1f} of {usable / cal_.GIB:.1f} GiB usable")
    else:
        a.append(f"memory: the measured {w.peak_mem_gib:.1f} GiB at micro-batch {w.micro_batch} does not fit "
                 f"{usable / cal_.GIB:.1f} GiB usable: micro-batch {mb}"
                 + (f" with activation checkpointing (keeps <= {cal_.CKPT_KEEP:.0%} of activations; recomputing "
                    f"the forward adds {cal_.RECOMPUTE[w.mode]:.0%} FLOPs)" if ckpt else "") + f", ~{need:.1f} GiB")
    a.append(f"configuration: micro-batch {mb}, checkpointing {'on' if ckpt else 'off'}, "
             + (f"the fastest of the {len(fits)} that fit (as the probe searches them)" if len(fits) > 1
                else "the only one that fits")
             + "".join(f"; micro-batch {c[0]} with checkpointing {'on' if c[1] else 'off'}: ~{rate[c]:,.0f} tokens/s"
                       for c in fits if c != (mb, ckpt)))
    if need * cal_.GIB > 0.95 * usable:
        a.append(f"tight fit ({need * cal_.GIB / usable:.0%} of usable)"
                 + (": the probe's trial drops it if it runs out of memory, and measures the next one" if len(fits) > 1
                    or mb > 1 else ": if it runs out of memory there is no smaller step (it would not fit)"))
    a.append(f"efficiency beyond both (kappa {kappa:.2f}) "
             + (f"calibrated on {w.preset}'s own runs" if own else "the median over the measured presets"))
    if count > 1:
        a.append(f"{count} GPUs at an ASSUMED scaling efficiency {TIER.assumed_scaling_efficiency:g} (data parallel, "
                 "every GPU holds the state)")
    a.append(f"90% interval x/÷ {width:.3f}: the leave-one-out error over {cal.n} measured presets, standing in "
             "for the transfer to another GPU (the held-out published figures check it)")
    return out


def rerun(history: dict | None, fleet: tuple[int, int], f: float) -> tuple[float, float, str]:
    """(p, R, why): the type's own fine-tune history when it has attempts, else the preset's fleet-wide rate."""
    if history and history.get("attempts"):
        k, n = history["failed_attempts"], history["attempts"]
        why = f"R from its own history: {k}/{n} failed"
    else:
        k, n = fleet
        why = f"R from the fleet-wide failure rate of the preset: {k}/{n} failed"
    p = failure_rate(k, n)
    return p, (rerun_factor(p, f) if p < 1 else math.inf), why


def price_row(pred: Prediction, price_per_hour: float | None, r: float) -> dict:
    """The estimate's cost per 1M tokens (and its interval) at one price: C from tasks.cost.model."""
    if pred.tokens_per_s is None or price_per_hour is None or not math.isfinite(r):
        return {"cost_per_mtok": None, "cost_lo": None, "cost_hi": None}
    return {"cost_per_mtok": effective_cost(price_per_hour, pred.tokens_per_s, r),
            "cost_lo": effective_cost(price_per_hour, pred.hi, r),
            "cost_hi": effective_cost(price_per_hour, pred.lo, r)}
