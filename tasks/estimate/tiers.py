"""The model-size tier recommendation: which instance type fine-tunes a <=7B, 7-13B or >13B model cheapest,
full against full and LoRA against LoRA, past one card predicted from the interconnect (issue 42).

    costgap tiers --tokens 1e10 [--catalog vms.csv]

Candidates: every measured target (its best priced preset: tokens/s per GPU as measured) and every catalog
instance type with a price and a GPU the datasheet knows (the warehouse's targets, the targets file, SkyPilot
files: tokens/s per GPU estimated by tasks/estimate/estimate.py from the calibrated presets). For each tier's
representative size and each training mode, tasks/estimate/at_size.py says whether it fits (one card, or
sharded over the instance's GPUs), its tokens/s (scaled by FLOPs per token) and the scaling efficiency:
measured on the type where the distributed probe ran, else predicted from its fabric and network, labelled
"predicted from <fabric>, busbw <x> GB/s". A multi-GPU type with no published fabric says "no estimate" and
why. `recommended` marks the cheapest fitting row of each (tier, mode): never a LoRA cost against a full one.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from tasks.cost.derived import FLOPS_PER_TOKEN, STALE_KEYS, UNSTABLE_KEYS, TierConfig
from tasks.cost.model import effective_cost
from tasks.cost.table import cost_table, options
from tasks.estimate import at_size
from tasks.estimate import calibrate as cal_
from tasks.estimate import estimate as est
from tasks.estimate import fabrics
from tasks.estimate import public_rows as pr
from warehouse import sql

SCHEMA = {"tier": pl.String, "tier_params": pl.Float64, "mode": pl.String, "target": pl.String,
          "provider": pl.String, "region": pl.String, "instance_type": pl.String, "gpu": pl.String, "gpus": pl.Int64,
          "status": pl.String, "preset": pl.String, "fits": pl.Boolean, "strategy": pl.String,
          "tokens_per_s": pl.Float64, "tokens_lo": pl.Float64, "tokens_hi": pl.Float64,
          "cost_per_mtok": pl.Float64, "cost_lo": pl.Float64, "cost_hi": pl.Float64, "currency": pl.String,
          "scaling": pl.Float64, "scaling_lo": pl.Float64, "scaling_hi": pl.Float64, "scaling_label": pl.String,
          "fabric": pl.String, "network": pl.String, "busbw_gbps": pl.Float64, "comm_share": pl.Float64,
          "hours_to_train": pl.Float64, "cost_to_train": pl.Float64, "assumed": pl.Boolean, "predicted": pl.Boolean,
          "reason": pl.String, **{k: pl.Int64 if "age" in k else pl.Boolean for k in STALE_KEYS}, **UNSTABLE_KEYS}


def _reference(cal: cal_.Calibration | None, mode: str) -> cal_.Workload | None:
    """The calibrated preset closest to the tier's mode: the largest of that mode, else the largest of any."""
    if cal is None:
        return None
    ws = list(cal.reference.values())
    same = [w for w in ws if (w.mode == "full") == (mode == "full")]
    return max(same or ws, key=lambda w: (w.params_total, w.preset), default=None)


def _measured(r: dict) -> tuple[tuple[float, float, float], float, str, float | None]:
    """A measured target's (per-GPU tokens/s and interval, reference FLOPs per token, how, measured scaling)."""
    used = max(int(r.get("n_gpus") or 1), 1)
    eff = r.get("scaling_efficiency") if used > 1 else 1.0
    x = r["tokens_per_s"] / used / (eff or 1.0)
    lo = x * r["cost_per_mtok"] / r["cost_hi"] if r.get("cost_hi") else x
    hi = x * r["cost_per_mtok"] / r["cost_lo"] if r.get("cost_lo") else x
    mode = r.get("mode") or "full"
    how = (f"tokens/s scaled from its measured {r['params_total'] / 1e9:,.2g}B {mode} ({r['preset']}, {r['runs']} runs) at "
           + (f"the measured MFU {r['mfu']:.0%}" if r.get("mfu") is not None else "an unmeasured MFU (ASSUMED equal)"))
    return (x, lo, hi), FLOPS_PER_TOKEN.get(mode, 6.0) * r["params_total"], how, (eff if used > 1 else None)


def _row(tier: str, size: float, mode: str, cand: dict, cfg: TierConfig, train_tokens: float) -> dict:
    out = {k: cand.get(k) for k in ("target", "provider", "region", "instance_type", "gpu", "gpus", "status", "preset",
                                    "currency", "fabric", "network", *STALE_KEYS, *UNSTABLE_KEYS)}
    out.update(tier=tier, tier_params=size, mode=mode, fits=False, assumed=bool(cand.get("assumed")),
               predicted=cand["status"] != "measured")
    if cand.get("why_not"):
        out.update(fits=None, reason=cand["why_not"])
        return out
    p = at_size.plan(size, mode, cand["sheet"], cand["gpus"], cfg, per_gpu=cand["per_gpu"], ref_flops=cand["ref_flops"],
                     fabric=cand.get("fabric"), network=cand.get("network"),
                     measured_scaling=cand.get("measured_scaling"))
    out.update(fits=p.fits, strategy=p.strategy)
    sc = p.scaling
    if sc is not None and cand["gpus"] > 1:
        out.update(scaling=sc.efficiency, scaling_lo=sc.lo, scaling_hi=sc.hi, scaling_label=sc.label,
                   busbw_gbps=sc.busbw_gbps, comm_share=sc.comm_share, predicted=out["predicted"] or sc.strategy != "measured")
    if p.tokens_per_s is None:
        out["reason"] = "; ".join([p.reason] + p.notes[:1]) if p.fits else p.reason
        return out
    price, r = cand.get("price_per_hour"), cand["R"]
    out.update(tokens_per_s=p.tokens_per_s, tokens_lo=p.lo, tokens_hi=p.hi)
    notes = p.notes + [cand["how"], cand["r_source"]]
    if price is None:
        notes.append("no price in force for this type: no cost")
    else:
        cost = effective_cost(price, p.tokens_per_s, r)
        out.update(cost_per_mtok=cost, cost_lo=effective_cost(price, p.hi, r), cost_hi=effective_cost(price, p.lo, r),
                   hours_to_train=train_tokens / (3600.0 * p.tokens_per_s) * r, cost_to_train=cost * train_tokens / 1e6)
    out["reason"] = "; ".join(notes)
    return out


def candidates(con: duckdb.DuckDBPyConnection, table: list[dict], *, extra: list[dict], today: datetime,
               billing: str, currency: str, f: float, cal: cal_.Calibration | None) -> list[dict]:
    """The measured targets and the unmeasured catalog types, each with what at_size.plan needs."""
    best: dict[str, dict] = {}
    for r in table:  # per target, the priced preset with the largest model: closest to the tiers
        key = (r["cost_per_mtok"] is not None, r.get("params_total") or 0)
        if r["target"] not in best or key > best[r["target"]]["_key"]:
            best[r["target"]] = {**r, "_key": key}
    cat = {(e["provider"], e["region"], e["instance_type"]): e for e in sql.rows(con, "estimate_catalog", {"preset": None})}
    cheapest: dict[tuple, dict] = {}  # a catalog type offered in many regions: its cheapest on-demand row
    for e in extra:
        if e.get("target") is None:
            k = (e["provider"], e["instance_type"])
            if k in cheapest and (cheapest[k].get("file_price") or 0) <= (e.get("file_price") or 0):
                continue
            cheapest[k] = e
    for e in [e for e in extra if e.get("target") is not None] + list(cheapest.values()):
        row = cat.setdefault((e["provider"], e["region"], e["instance_type"]), {"attempts": 0, "failed_attempts": 0, **e})
        row.update({k: e[k] for k in ("fabric", "network") if e.get(k)})
    published = pr.instance_fabrics()
    fleet = (sum(e["failed_attempts"] for e in cat.values() if e.get("target")),
             sum(e["attempts"] for e in cat.values() if e.get("target")))
    book = {(p["provider"], p["region"], p["instance_type"]): p for p in sql.rows(
        con, "estimate_prices", {"today": today, "billing": billing, "currency": currency}) if not p["fx_missing"]}
    out, measured_keys = [], set()
    for e in cat.values():
        if not e.get("gpu_model") or not e.get("instance_type"):
            continue
        ic = fabrics.interconnect(e, published)
        sheet = cal_.match_gpu(ic["published_gpu"]) or cal_.match_gpu(e["gpu_model"])
        base = {"target": e.get("target"), "provider": e["provider"], "region": e["region"],
                "instance_type": e["instance_type"], "gpu": sheet.key if sheet else e["gpu_model"],
                "gpus": max(int(e.get("gpu_count") or 1), 1), "currency": currency, "sheet": sheet, **ic}
        m = best.get(e.get("target"))
        if m is not None and m["cost_per_mtok"] is not None and m.get("params_total"):
            per, ref_flops, how, eff = _measured(m)
            out.append({**base, **{k: m.get(k) for k in (*STALE_KEYS, *UNSTABLE_KEYS)}, "status": "measured",
                        "preset": m["preset"], "per_gpu": per, "ref_flops": ref_flops, "how": how, "R": m["R"],
                        "measured_scaling": eff, "price_per_hour": m["price_per_hour"], "assumed": m.get("mfu") is None,
                        "r_source": f"R from its own history: {m['failed_attempts']}/{m['attempts']} failed",
                        "why_not": None if sheet else f"GPU {e['gpu_model']!r} has no datasheet entry"})
            measured_keys.add(e.get("target"))
            continue
        if m is not None:  # measured, but without a cost or a parameter count to scale
            why = m.get("no_cost_reason") or "no parameter count to scale"
            out.append({**base, "status": "measured", "preset": m["preset"], "why_not": f"no priced measurement to "
                        f"scale ({why})", "R": m.get("R")})
            continue
        price = book.get((e["provider"], e["region"], e["instance_type"]))
        if price is None and e.get("file_price") is not None and e.get("file_currency") == currency:
            price = {"price_per_hour": e["file_price"]}
        if price is None:
            continue  # an unpriced type cannot be ranked; `costgap estimate` lists it
        _p, r, why = est.rerun(e if e.get("target") else None, fleet, f)
        out.append({**base, "status": "estimate", "price_per_hour": price["price_per_hour"], "R": r, "r_source": why,
                    "assumed": False, "why_not": None if sheet else f"GPU {e['gpu_model']!r} has no datasheet entry: "
                    "no estimate"})
    return out


def tier_recommendations(con: duckdb.DuckDBPyConnection, *, config: TierConfig | None = None,
                         extra: list[dict] | None = None, train_tokens: float = 1e9, today: datetime | None = None,
                         **cost_kwargs) -> pl.DataFrame:
    """One row per (tier, mode, instance type); `recommended` marks the cheapest fitting one per (tier, mode)."""
    from tasks.cost.rules import today as rules_today

    cfg = config or TierConfig()
    today = today or rules_today()
    opts = options(cost_kwargs.get("billing") or "on_demand", cost_kwargs.get("currency", "USD"), cost_kwargs.get("f"))
    table = cost_table(con, today=today, **cost_kwargs).to_dicts()
    ws = cal_.workloads(con)
    cal = cal_.calibrate(ws, cal_.efficiencies(con)) if ws else None
    cands = candidates(con, table, extra=extra or [], today=today, billing=opts.billing or "on_demand",
                       currency=opts.currency, f=opts.f, cal=cal)
    rows = []
    for tier, size in cfg.tiers:
        for mode in cfg.modes:
            ref = _reference(cal, mode)
            for c in cands:
                if c["status"] == "estimate" and not c.get("why_not"):
                    rate = est.per_gpu_rate(ref, c["sheet"], cal) if ref is not None else None
                    if rate is None:
                        c = {**c, "why_not": "no estimate: no calibrated preset to estimate this GPU from"}
                    else:
                        c = {**c, "preset": ref.preset, "per_gpu": rate[:3], "how": f"tokens/s from {rate[3]}",
                             "ref_flops": FLOPS_PER_TOKEN.get(ref.mode, 6.0) * ref.params_total}
                rows.append(_row(tier, size, mode, c, cfg, train_tokens))
    frame = pl.DataFrame([{k: row.get(k) for k in SCHEMA} for row in rows], schema=SCHEMA)
    order = {name: i for i, (name, _) in enumerate(cfg.tiers)}
    frame = frame.with_columns(_o=pl.col("tier").replace_strict(order, return_dtype=pl.Int64),
                               _m=pl.col("mode").replace_strict({m: i for i, m in enumerate(cfg.modes)},
                                                                return_dtype=pl.Int64)).sort(
        ["_o", "_m", "cost_per_mtok", "instance_type"], nulls_last=True).drop("_o", "_m")
    frame = frame.with_row_index("_i")
    first = frame.filter(pl.col("fits") & pl.col("cost_per_mtok").is_not_null()).group_by("tier", "mode").agg(
        pl.col("_i").min().alias("_best"))
    return frame.join(first, on=["tier", "mode"], how="left").with_columns(
        recommended=(pl.col("_i") == pl.col("_best")).fill_null(False)).sort("_i").drop("_i", "_best")
