"""The scaling model scored on held-out public measurements (issue 42): never fitted on, printed row by row.

    .venv/bin/python -m tests.bench scaling

Reads the `holdout` rows of tasks/estimate/data/dp_scaling.csv (1-GPU and N-GPU throughput from one source)
and nccl_busbw.csv, predicts each with tasks.estimate.scaling (whose fit, data/collective_fit.json, read only
`fit` rows), and prints per row: source, fabric, GPUs, measured, predicted, interval, inside. Then the
summary the issue's acceptance names: the efficiency's median absolute error (target <= 0.05), the share of
rows inside their interval (target >= 80%), and busbw's median relative error (target <= 15%). A row the
model cannot predict (unknown fabric, no fit for it) is printed with its reason and counts as a miss.
"""

from __future__ import annotations

import statistics

from tasks.estimate import public_rows as pr
from tasks.estimate.scaling import predict_busbw, predict_scaling

TARGETS = {"efficiency_median_abs_error": 0.05, "share_inside": 0.80, "busbw_median_rel_error": 0.15}


def _where(r: dict) -> str:
    n = f"{r['gpus_per_node']}x{r['gpu']}" + (f" x{r['nodes']} nodes {r['network']}" if r["nodes"] > 1 else "")
    return f"{n} {r['fabric'] or '?'}"


def score_scaling(rows: list[dict]) -> dict:
    out = []
    for r in rows:
        if r["unscoreable"]:
            out.append({**r, "predicted": None, "lo": None, "hi": None, "reason": r["unscoreable"], "error": None,
                        "inside": False, "comm_share": None})
            continue
        p = predict_scaling(**pr.scaling_inputs(r))
        ok = p.efficiency is not None
        out.append({**r, "predicted": p.efficiency, "lo": p.lo, "hi": p.hi, "reason": p.reason,
                    "error": (p.efficiency - r["efficiency"]) if ok else None,
                    "inside": ok and p.lo - 1e-9 <= r["efficiency"] <= p.hi + 1e-9, "comm_share": p.comm_share})
    errs = [abs(x["error"]) for x in out if x["error"] is not None]
    return {"rows": out, "median_abs_error": statistics.median(errs) if errs else None,
            "inside": sum(bool(x["inside"]) for x in out), "n": len(out), "predicted": len(errs),
            "fabrics": sorted({x["fabric"] or "?" for x in out})}


def score_busbw(rows: list[dict]) -> dict:
    out = []
    for r in rows:
        p = predict_busbw(r["gpu"], r["gpus_per_node"], r["fabric"], r["nodes"], r["network"],
                          size_bytes=r["size_bytes"], nvls=r["nvls"], nccl_version=r["nccl_version"])
        ok = p.gbps is not None
        out.append({**r, "predicted": p.gbps, "lo": p.lo, "hi": p.hi, "reason": p.reason,
                    "error": (p.gbps / r["busbw_gbps"] - 1) if ok else None,
                    "inside": ok and p.lo <= r["busbw_gbps"] <= p.hi})
    errs = [abs(x["error"]) for x in out if x["error"] is not None]
    return {"rows": out, "median_abs_rel_error": statistics.median(errs) if errs else None,
            "inside": sum(bool(x["inside"]) for x in out), "n": len(out), "predicted": len(errs)}


def _src(r: dict) -> str:
    return f"{r['row_id']} [{r['source_url'][:58]}, {r['source_date']}]"


def main() -> int:
    eff = score_scaling(pr.scaling_rows("holdout"))
    bus = score_busbw(pr.busbw_rows("holdout"))
    print(f"data-parallel scaling, {eff['n']} held-out rows over {len(eff['fabrics'])} fabrics "
          f"({', '.join(eff['fabrics'])}); efficiency = throughput(n) / (n x throughput(1)):")
    for r in eff["rows"]:
        n = r["gpus_per_node"] * r["nodes"]
        if r["predicted"] is None:
            print(f"  {_where(r):<40} n={n:<3} measured {r['efficiency']:.3f}  NO ESTIMATE: {r['reason']}  {_src(r)}")
            continue
        print(f"  {_where(r):<40} n={n:<3} {r['model'][:18]:<18} {r['strategy']:<5} measured {r['efficiency']:.3f}  "
              f"predicted {r['predicted']:.3f} ({r['lo']:.3f}..{r['hi']:.3f})  error {r['error']:+.3f}  "
              f"{'inside' if r['inside'] else 'OUTSIDE'}  {_src(r)}")
    print(f"\nbusbw, {bus['n']} held-out nccl-tests rows (all_reduce_perf bus bandwidth, GB/s):")
    for r in bus["rows"]:
        if r["predicted"] is None:
            print(f"  {_where(r):<40} {r['size_bytes'] or 0:>15,.0f} B  measured {r['busbw_gbps']:8.1f}  NO ESTIMATE: "
                  f"{r['reason']}  {_src(r)}")
            continue
        size = f"{r['size_bytes']:>15,.0f} B" if r["size_bytes"] else f"{'peak':>17}"
        print(f"  {_where(r):<40}{' nvls' if r['nvls'] else '     '} {size}  measured "
              f"{r['busbw_gbps']:8.1f}  predicted {r['predicted']:8.1f} ({r['lo']:.1f}..{r['hi']:.1f})  error "
              f"{r['error']:+.1%}  {'inside' if r['inside'] else 'OUTSIDE'}  {_src(r)}")
    share = eff["inside"] / eff["n"] if eff["n"] else None
    mae, rel = eff["median_abs_error"], bus["median_abs_rel_error"]
    print("\nsummary (held-out rows only; the fit never read them):")
    print(f"  efficiency median |error| {mae:.3f} over {eff['predicted']}/{eff['n']} predicted rows (target <= "
          f"{TARGETS['efficiency_median_abs_error']})" if mae is not None else "  efficiency: no row predicted")
    print(f"  inside the interval {eff['inside']}/{eff['n']} = {share:.0%} (target >= {TARGETS['share_inside']:.0%})"
          if share is not None else "  inside: no rows")
    print(f"  busbw median |relative error| {rel:.1%} over {bus['predicted']}/{bus['n']} rows (target <= "
          f"{TARGETS['busbw_median_rel_error']:.0%}); inside its interval {bus['inside']}/{bus['n']}"
          if rel is not None else "  busbw: no row predicted")
    met = (mae is not None and mae <= TARGETS["efficiency_median_abs_error"] and share is not None
           and share >= TARGETS["share_inside"] and rel is not None and rel <= TARGETS["busbw_median_rel_error"]
           and eff["n"] >= 15 and len(eff["fabrics"]) >= 3 and bus["n"] >= 10)
    print(f"  rows: {eff['n']} scaling (>= 15) over {len(eff['fabrics'])} fabrics (>= 3), {bus['n']} busbw (>= 10): "
          + ("met" if met else "NOT MET"))
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
