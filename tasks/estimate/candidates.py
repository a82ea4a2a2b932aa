"""Every instance type with a known GPU, ranked by cost per 1M tokens: measured where it was, estimated where not.

    costgap estimate --preset 1b --catalog tests/fixtures/skypilot/lambda-vms.csv --json

The catalog: the warehouse's targets (estimate_catalog.sql), the targets file's entries (gpu_model,
gpu_count) and SkyPilot v7 `vms.csv` files (AcceleratorName, AcceleratorCount; the cloud from the file
name, else --provider). An instance type the sources share is one row. Prices: the price book in force
today (estimate_prices.sql), else a SkyPilot file's own Price (its file:line is the source). A
(target, preset) with measured runs shows the cost model's figure (tasks.cost.table), marked "measured";
the estimate is not computed for it. A missing input costs one row, never the answer: a price without
an FX rate, or no price at all, leaves that row without a cost and `no_cost_reason` says what is missing
and the command that adds it; a GPU without a datasheet row gets "no estimate" with its reason.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import duckdb

from tasks.estimate import calibrate as cal_
from tasks.estimate import estimate as est
from tasks.estimate import fabrics
from tasks.estimate import public_rows as pr
from tasks.cost.model import CostOptions
from tasks.errors import UserError
from warehouse import sql

# past one GPU, what every row carries of the scaling (tasks/estimate/estimate.Prediction)
SCALING_FIELDS = ("scaling", "scaling_lo", "scaling_hi", "scaling_label", "busbw_gbps", "comm_share", "strategy")


def skypilot_entries(path: str, provider: str | None = None) -> list[dict]:
    """GPU instance types of a SkyPilot v7 vms.csv, with their on-demand price (rows with an accelerator only).
    The GPU is named as the targets file names it (tasks.dispatch.skypilot.gpu_model_of: SkyPilot's "A100" on
    p4d.24xlarge is the targets file's "A100-SXM4-40GB"), so one instance type has one GPU name everywhere."""
    from tasks.dispatch.skypilot import gpu_model_of
    from tasks.pricing.skypilot import SkyPilotCatalog

    cat = SkyPilotCatalog(path, provider)
    prices = {(r.region, r.instance_type): r for r in cat.fetch() if r.billing_mode == "on_demand"}
    out = []
    with Path(path).open(newline="", encoding="utf-8-sig") as fh:
        for rec in csv.DictReader(fh):
            name, count = (rec.get("AcceleratorName") or "").strip(), (rec.get("AcceleratorCount") or "").strip()
            row = prices.get((rec["Region"].strip(), rec["InstanceType"].strip()))
            if not name or row is None:
                continue
            out.append({"target": None, "provider": row.provider, "region": row.region,
                        "instance_type": row.instance_type, "gpu_model": gpu_model_of(name), "gpu_count": int(float(count or 1)),
                        "file_price": row.original_amount, "file_currency": row.currency, "file_source": row.source})
    return out


def catalog_entries(targets_file, catalogs: list[str] = (), provider: str | None = None) -> list[dict]:
    """Instance types with a GPU from a targets file (None: none) and SkyPilot catalog files (their cloud from
    the file name, else `provider`)."""
    from tasks.dispatch.targets import load_targets

    out = []
    if targets_file is not None:
        out += [{"target": t.id, "provider": t.provider, "region": t.region, "instance_type": t.instance_type,
                 "gpu_model": t.gpu_model, "gpu_count": t.gpu_count, "fabric": t.fabric, "network": t.network}
                for t in load_targets(targets_file) if t.gpu_model]
    for c in catalogs:
        if not Path(c).is_file():
            raise UserError(f"--catalog {c}: no such file (a SkyPilot v7 vms.csv)")
        out += skypilot_entries(c, provider)
    return out


FX_MEND = "costgap fx import deploy/fx_rates.csv"  # the shipped snapshot; `costgap fx refresh --source ecb` online
NO_PRICE = ("no price in force for this type: import one (costgap prices import FILE), or give a SkyPilot catalog "
            "that lists it (--catalog)")


def _catalog(con, preset: str, extra: list[dict]) -> list[dict]:
    rows = {(r["provider"], r["region"], r["instance_type"]): r for r in sql.rows(con, "estimate_catalog", {"preset": preset})
            if r["gpu_model"] and r["instance_type"]}
    for e in extra:  # one row per instance type: the first source's GPU name and run history (the warehouse's,
        key = (e["provider"], e["region"], e["instance_type"])  # then the targets file's), a catalog's own price
        have = rows.get(key)  # and the file's interconnect (fabric, network) where it names one
        if have is None:
            have = rows[key] = {"attempts": 0, "failed_attempts": 0, **e}
        elif have.get("file_price") is None and e.get("file_price") is not None:
            have = rows[key] = {**have, **{k: e[k] for k in ("file_price", "file_currency", "file_source")}}
        have.update({k: e[k] for k in ("fabric", "network") if e.get(k)})
    return list(rows.values())


def gpu_matches(wanted: str, sheet_key: str | None, gpu_model: str | None) -> bool:
    """--gpu: the datasheet key or the catalog's name, whole or as its family: A100 matches A100-SXM-40GB and
    A100-PCIe-80GB, never A10 or A100X; case does not matter."""
    w = wanted.strip().lower()
    return any(n and (n.lower() == w or n.lower().startswith(f"{w}-")) for n in (sheet_key, gpu_model))


def no_match(wanted: str, entries: list[dict]) -> str:
    """Why --gpu `wanted` matched no instance type: no datasheet row of that name, or no type in the catalog."""
    keys = [row["key"] for row in cal_.gpu_catalog()]
    if not any(gpu_matches(wanted, k, None) for k in keys) and cal_.match_gpu(wanted) is None:
        return (f"--gpu {wanted}: no GPU of that name in the datasheet (tasks/probe/host/gpu_specs.json has "
                f"{', '.join(keys)}); costgap estimates only GPUs with a datasheet row")
    have = sorted({e["gpu_model"] for e in entries if e.get("gpu_model")})
    return (f"--gpu {wanted}: no instance type with that GPU in the catalog (the targets file and any --catalog "
            f"hold {', '.join(have) or 'none'}, beside the warehouse's own targets); give a SkyPilot vms.csv that lists such "
            f"types with --catalog FILE (SkyPilot's catalogs/v7/<cloud>/vms.csv)")


def candidates(con: duckdb.DuckDBPyConnection, preset: str, opts: CostOptions, today: datetime,
               extra: list[dict] | None = None, gpu: str | None = None, measured: list[dict] | None = None,
               cal: cal_.Calibration | None = None, workloads: list[cal_.Workload] | None = None) -> list[dict]:
    """One row per catalog instance type (and price) for `preset`, cheapest first; see the module docstring."""
    workloads = workloads if workloads is not None else cal_.workloads(con)
    cal = cal or cal_.calibrate(workloads, cal_.efficiencies(con))
    ref = cal.reference.get(preset) if cal else None
    if ref is None:
        known = sorted(cal.reference) if cal else []
        raise UserError(f"--preset {preset!r}: no measured run of it on a GPU with a datasheet entry to calibrate "
                        f"on (measured: {', '.join(known) or 'none'}); measure it once, then estimate")
    if measured is None:
        from tasks.cost.table import cost_table
        measured = cost_table(con, billing=opts.billing, currency=opts.currency, f=opts.f, today=today).to_dicts()
    # measured: a row with tokens/s (a preset whose fine-tunes all failed or were not applicable has none)
    done = {r["target"]: r for r in measured if r["preset"] == preset and r["tokens_per_s"] is not None}
    book, no_fx = {}, {}
    for p in sql.rows(con, "estimate_prices", {"today": today, "billing": opts.billing or "on_demand",
                                               "currency": opts.currency}):
        key = (p["provider"], p["region"], p["instance_type"])
        if p["fx_missing"]:  # this row has no cost, and says how to mend it; the others still answer
            missing = p["price_currency"] if p["price_currency"] != "USD" else opts.currency
            no_fx[key] = (f"no FX rate for {missing} on or before {today.date()} (its price is in "
                          f"{p['price_currency']}, a missing rate is never 1.0): add one with `{FX_MEND}`")
            continue
        book[key] = p
    entries = _catalog(con, preset, extra or [])
    published = pr.instance_fabrics()
    fleet = (sum(e["failed_attempts"] for e in entries if e.get("target")),
             sum(e["attempts"] for e in entries if e.get("target")))
    out = []
    for e in entries:
        ic = fabrics.interconnect(e, published)
        sheet = cal_.match_gpu(ic.pop("published_gpu")) or cal_.match_gpu(e["gpu_model"])
        if gpu and not gpu_matches(gpu, sheet.key if sheet else None, e["gpu_model"]):
            continue
        key = (e["provider"], e["region"], e["instance_type"])
        price = book.get(key)
        row = {"target": e.get("target"), "provider": e["provider"], "region": e["region"],
               "instance_type": e["instance_type"], "gpu": e["gpu_model"], "gpu_key": sheet.key if sheet else None,
               "gpu_count": int(e["gpu_count"] or 1), "preset": preset, "currency": opts.currency}
        row["no_cost_reason"] = None
        if price is not None:
            row.update(price_per_hour=price["price_per_hour"], price_source=price["source"],
                       price_effective_from=price["effective_from"])
        elif e.get("file_price") is not None and e.get("file_currency") == opts.currency:
            row.update(price_per_hour=e["file_price"], price_source=e["file_source"], price_effective_from=None)
        else:
            row.update(price_per_hour=None, price_source=None, price_effective_from=None,
                       no_cost_reason=no_fx.get(key, NO_PRICE))
        m = done.get(e.get("target"))
        if m is not None:
            row.update(status="measured", tokens_per_s=m["tokens_per_s"], lo=None, hi=None, precision=None,
                       p=m["p"], R=m["R"], r_source=f"measured: {m['failed_attempts']}/{m['attempts']} failed",
                       cost_per_mtok=m["cost_per_mtok"], cost_lo=m["cost_lo"], cost_hi=m["cost_hi"],
                       price_per_hour=m["price_per_hour"], price_source=m["price_source"], runs=m["runs"],
                       no_cost_reason=m.get("no_cost_reason"),
                       fit="measured", micro_batch=None, checkpointing=None, compute_share=None, reason="",
                       **({k: None for k in SCALING_FIELDS} | {
                           "scaling": m.get("scaling_efficiency"),
                           "scaling_label": "measured" if m.get("scaling_efficiency") is not None else None}),
                       assumptions=[f"measured: {m['runs']} runs in the window ending {m['window_end']:%Y-%m-%d}, "
                                    "the cost model's figure (no estimate)"])
            out.append(row)
            continue
        row.update(ic)
        pred = est.predict(ref, sheet, row["gpu_count"], cal, e["gpu_model"], fabric=ic["fabric"], network=ic["network"])
        p, r, why = est.rerun(e if e.get("target") else None, fleet, opts.f)
        status = "estimate" if pred.tokens_per_s is not None else pred.fit
        row.update(status=status, tokens_per_s=pred.tokens_per_s, lo=pred.lo, hi=pred.hi, precision=pred.precision,
                   micro_batch=pred.micro_batch, checkpointing=pred.checkpointing, fit=pred.fit,
                   compute_share=pred.compute_share, reason=pred.reason, p=p, R=r, r_source=why, runs=0,
                   **{k: getattr(pred, k) for k in SCALING_FIELDS},
                   assumptions=pred.assumptions + ([why] if pred.tokens_per_s is not None else []),
                   **est.price_row(pred, row["price_per_hour"], r))
        if pred.tokens_per_s is not None and row["price_per_hour"] is None:
            row["assumptions"].append(f"no cost: {row['no_cost_reason']}")
        out.append(row)
    return sorted(out, key=lambda r: (r["cost_per_mtok"] is None, r["cost_per_mtok"] or 0.0,
                                      r["tokens_per_s"] is None, -(r["tokens_per_s"] or 0), r["instance_type"]))


def measure_next(rows: list[dict]) -> list[dict]:
    """Estimated types whose interval reaches below the cheapest measured cost: measuring them could change the answer."""
    best = min((r["cost_hi"] if r["cost_hi"] is not None else r["cost_per_mtok"]
                for r in rows if r["status"] == "measured" and r["cost_per_mtok"] is not None), default=None)
    if best is None:
        return []
    return [r for r in rows if r["status"] == "estimate" and r["cost_lo"] is not None and r["cost_lo"] <= best]
