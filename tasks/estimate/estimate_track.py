"""The estimator's scores: the track record in the warehouse (migration 070) and the held-out published figures.

    costgap estimate --record          # record estimates for unmeasured targets; score those since measured
    .venv/bin/python -m tests.bench estimate

record(): one `estimates` row per (target, preset) estimate, for targets of the catalog without a
measurement of the preset. score(): each unscored estimate is scored against what the estimator could
have seen (issue 37.6): the first measurement of its (target, preset) that *landed* after the estimate
was recorded, whatever the runs' own start times (warehouse/queries/estimate_first_landing.sql). It
gets that measurement (the cost model's X over the window ending at the newest start among the runs of
that landing), the error (estimate / measurement - 1) and whether the measurement fell inside the 90%
interval; written once, kept. The landing path calls score() inside the write slot right after bundles
land (flows/landing.py, flows/compare.py), so an estimate is scored when its measurement lands, not at
the next `costgap estimate --record`; it is idempotent, so a later call (that command) scores what an
earlier one could not. A rebuild starts the estimates table empty (migration 070), so it scores
nothing. A multi-GPU estimate keeps its predicted scaling efficiency (migration 100); score_scaling(), called by
score(), scores it on the distributed probe's measured efficiency at the same GPU count when that lands.
held_out(): the published figures in published_figures.json predicted by the same estimator
(never calibrated on them), with their errors.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from tasks.estimate import calibrate as cal_
from tasks.estimate import estimate as est

PUBLISHED = Path(__file__).with_name("published_figures.json")


def record(con: duckdb.DuckDBPyConnection, rows: list[dict], at: datetime) -> int:
    """Write the estimate rows (candidates() rows with a target and status 'estimate'); returns rows written."""
    n = 0
    for r in rows:
        if r["status"] != "estimate" or not r.get("target"):
            continue
        key = "\x00".join([r["target"], r["preset"], est.MODEL_VERSION, at.isoformat()])
        multi = (r.get("gpu_count") or 1) > 1 and r.get("scaling") is not None
        con.execute(
            "insert or ignore into estimates (estimate_id, target, provider, region, instance_type, gpu_key, gpu_count,"
            " preset, precision, fit, model_version, estimated_at, tokens_per_s, tokens_per_s_lo, tokens_per_s_hi,"
            " assumptions, scaling_efficiency, scaling_lo, scaling_hi, fabric, network, busbw_gbps)"
            " values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [hashlib.sha256(key.encode()).hexdigest(), r["target"], r["provider"], r["region"], r["instance_type"],
             r["gpu_key"], r["gpu_count"], r["preset"], r["precision"], r["fit"], est.MODEL_VERSION, at,
             r["tokens_per_s"], r["lo"], r["hi"], r["assumptions"],
             *((r["scaling"], r["scaling_lo"], r["scaling_hi"], r.get("fabric"), r.get("network"), r.get("busbw_gbps"))
               if multi else (None,) * 6)])
        n += 1
    return n


def score(con: duckdb.DuckDBPyConnection, now: datetime | None = None) -> list[dict]:
    """Score every unscored estimate whose (target, preset) has had a measurement land since it was recorded.

    Returns the rows written (kind "tokens_per_s": estimate_id, measured_at, measurement_landed_at, measured_runs,
    measured_tokens_per_s, error, inside, scored_at), then score_scaling's (kind "scaling"). An estimate whose measurement cannot be read yet
    (e.g. no FX rate for the window's price) stays unscored for the next call; the landing that called
    this is never undone by it."""
    from tasks.cost.table import cost_table
    from tasks.errors import UserError
    from tasks.pricing.fx import FxError
    from warehouse import sql

    now = now or datetime.now(timezone.utc)
    scored = []
    for e in sql.rows(con, "estimate_first_landing"):
        try:
            got = [r for r in cost_table(con, as_of=e["measured_at"], targets=[e["target"]], today=now).to_dicts()
                   if r["preset"] == e["preset"] and r["tokens_per_s"]]
        except (FxError, UserError):
            continue
        if not got:
            continue
        m = got[0]["tokens_per_s"]
        row = {"estimate_id": e["estimate_id"], "measured_at": e["measured_at"],
               "measurement_landed_at": e["measurement_landed_at"], "measured_runs": got[0]["runs"],
               "measured_tokens_per_s": m, "error": e["tokens_per_s"] / m - 1.0,
               "inside": bool(e["tokens_per_s_lo"] <= m <= e["tokens_per_s_hi"]), "scored_at": now}
        con.execute("update estimates set measured_at = $measured_at, measurement_landed_at = $measurement_landed_at, "
                    "measured_runs = $measured_runs, measured_tokens_per_s = $measured_tokens_per_s, error = $error, "
                    "inside = $inside, scored_at = $scored_at where estimate_id = $estimate_id and measured_at is null",
                    row)
        scored.append({**row, "kind": "tokens_per_s"})
    return scored + score_scaling(con, now)


def score_scaling(con: duckdb.DuckDBPyConnection, now: datetime | None = None) -> list[dict]:
    """Score every recorded multi-GPU estimate whose (target, preset) has had a measured scaling efficiency at its
    GPU count land since it was recorded (the distributed probe's run: estimate_scaling_landing.sql). A measured
    run wins over the prediction everywhere else (tasks/estimate/at_size.py, candidates.py); here it scores the
    prediction that stood before it. Written once, kept; returns the rows written."""
    from warehouse import sql

    now = now or datetime.now(timezone.utc)
    scored = []
    for e in sql.rows(con, "estimate_scaling_landing"):
        m = e["measured_scaling_efficiency"]
        row = {"estimate_id": e["estimate_id"], "measured_scaling_efficiency": m,
               "scaling_measured_at": e["scaling_measured_at"], "scaling_landed_at": e["scaling_landed_at"],
               "scaling_error": e["scaling_efficiency"] - m, "scaling_inside": bool(e["scaling_lo"] <= m <= e["scaling_hi"])}
        con.execute("update estimates set measured_scaling_efficiency = $measured_scaling_efficiency, "
                    "scaling_measured_at = $scaling_measured_at, scaling_landed_at = $scaling_landed_at, "
                    "scaling_error = $scaling_error, scaling_inside = $scaling_inside "
                    "where estimate_id = $estimate_id and measured_scaling_efficiency is null", row)
        scored.append({**row, "kind": "scaling", "target": e["target"], "preset": e["preset"],
                       "gpu_count": e["gpu_count"], "scaling_efficiency": e["scaling_efficiency"], "scored_at": now})
    return scored


def track_record(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Every recorded estimate, newest first (scored ones carry their measurement and error)."""
    cur = con.execute("select * from estimates order by estimated_at desc, target, preset")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def published() -> list[dict]:
    """The committed published figures (each with its source, date and where it was found)."""
    doc = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    for i, f in enumerate(doc["figures"]):
        for need in ("workload", "preset", "gpu", "gpu_count", "tokens_per_s", "source", "date", "found"):
            if need not in f:
                raise ValueError(f"{PUBLISHED}: figures[{i}] lacks field '{need}'")
    return doc["figures"]


def held_out(cal: cal_.Calibration) -> dict:
    """Each published figure against the estimate for its preset on its GPU (per GPU: count 1)."""
    rows = []
    for f in published():
        w = cal.reference.get(f["preset"])
        if w is None:
            rows.append({**f, "predicted_tokens_per_s": None, "error": None, "inside": None,
                         "reason": f"preset {f['preset']} not measured: nothing to calibrate on"})
            continue
        pred = est.predict(w, cal_.match_gpu(f["gpu"]), 1, cal, f["gpu"])
        per_gpu = f["tokens_per_s"] / f["gpu_count"]
        x = pred.tokens_per_s
        rows.append({**f, "per_gpu_tokens_per_s": per_gpu, "predicted_tokens_per_s": x, "lo": pred.lo, "hi": pred.hi,
                     "error": (x / per_gpu - 1.0) if x else None,
                     "inside": (pred.lo <= per_gpu <= pred.hi) if x else None, "reason": pred.reason})
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    return {"rows": rows, "median_abs_error": statistics.median(errs) if errs else None,
            "median_error": statistics.median([r["error"] for r in rows if r["error"] is not None]) if errs else None,
            "inside": sum(bool(r["inside"]) for r in rows), "scored": len(errs)}


def _held_out(ws: list[cal_.Workload], group, eff_for, what: str) -> tuple[list[dict], list[str], list[str]]:
    """Each group of workloads (`group(w)`: its target or its GPU) predicted from the other groups' runs, with
    `eff_for(group, its workloads)` the efficiencies without its runs. (rows, groups that could not be
    calibrated, presets with no estimate). A preset the others never ran keeps its own FLOPs and memory, at the
    others' median kappa."""
    rows, uncalibrated, no_estimate = [], [], []
    names = sorted({group(w) for w in ws})
    for g in names:
        mine = [w for w in ws if group(w) == g]
        cal = cal_.calibrate([w for w in ws if group(w) != g], eff_for(g, mine))
        if cal is None:
            uncalibrated.append(f"{g}: the other {what} have no GEMM and memory-copy figures to calibrate on")
            continue
        for w in mine:
            p = est.predict(cal.reference.get(w.preset, w), cal_.match_gpu(w.gpu_name), 1, cal, w.gpu_name)
            if p.tokens_per_s is None:
                no_estimate.append(f"{g} {w.preset}: {p.reason}")
                continue
            rows.append({"target": w.target, "preset": w.preset, "gpu": w.gpu_name,
                         "from": [n for n in names if n != g], "predicted_tokens_per_s": p.tokens_per_s,
                         "lo": p.lo, "hi": p.hi, "measured_tokens_per_s": w.tokens_per_s,
                         "error": p.tokens_per_s / w.tokens_per_s - 1.0,
                         "inside": sum(p.lo <= s <= p.hi for s in w.samples), "runs": len(w.samples),
                         "configuration": (p.micro_batch, p.checkpointing),
                         "measured_configuration": (w.micro_batch, w.checkpointing)})
    return rows, uncalibrated, no_estimate


def _median_abs(rows: list[dict]) -> float | None:
    errs = [abs(r["error"]) for r in rows]
    return statistics.median(errs) if errs else None


def leave_one_target_out(ws: list[cal_.Workload], eff_without) -> dict:
    """Each measured target predicted from the other targets' runs (`eff_without(target)`: the efficiencies
    without its runs). Targets on another GPU test the transfer; on the same GPU, the run-to-run spread."""
    targets = sorted({w.target for w in ws})
    if len(targets) < 2:
        return {"rows": [], "median_abs_error": None,
                "note": f"{len(targets)} measured target(s): predicting one from the rest needs a second"}
    rows, uncalibrated, _ = _held_out(ws, lambda w: w.target, lambda t, _mine: eff_without(t), "targets")
    return {"rows": rows, "median_abs_error": _median_abs(rows), "note": "; ".join(uncalibrated)}


def leave_one_gpu_out(ws: list[cal_.Workload], eff_without) -> dict:
    """Each measured GPU type predicted from the other GPU types' runs alone (issue 35: the H100 from the H200,
    the H200 from the H100): `eff_without(targets)` gives the efficiencies without those targets' runs. Per
    (GPU, preset): predicted, measured, error, and whether every run lies inside the 90% interval."""
    gpus = sorted({w.gpu_name for w in ws})
    if len(gpus) < 2:
        return {"rows": [], "median_abs_error": None, "all_inside": None,
                "note": f"{len(gpus)} measured GPU type(s): predicting one from the rest needs a second"}
    rows, uncalibrated, no_estimate = _held_out(
        ws, lambda w: w.gpu_name, lambda _g, mine: eff_without(frozenset(w.target for w in mine)), "GPU types")
    return {"rows": rows, "median_abs_error": _median_abs(rows),
            "all_inside": all(r["inside"] == r["runs"] for r in rows) if rows else None,
            "note": "; ".join(uncalibrated + no_estimate)}


def leave_one_out(cal: cal_.Calibration) -> dict:
    """The calibration's leave-one-out rows with the median absolute error and the share of runs inside."""
    rows = cal.loo
    runs, inside = sum(r["runs"] for r in rows), sum(r["inside"] for r in rows)
    return {"rows": rows, "median_abs_error": _median_abs(rows),
            "runs": runs, "inside": inside, "share_inside": inside / runs if runs else None}
