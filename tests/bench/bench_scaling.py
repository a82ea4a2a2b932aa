"""The scaling model scored on held-out public measurements (issue 42): never fitted on, printed row by row.

    .venv/bin/python -m tests.bench scaling

Reads the `holdout` rows of tasks/estimate/data/dp_scaling.csv (1-GPU and N-GPU throughput from one source)
and nccl_busbw.csv, predicts each with tasks.estimate.scaling (whose fit, data/collective_fit.json, read only
`fit` rows), and prints per row: source, collection round, fabric, GPUs, measured, predicted, interval, inside.
Then the summary the issue's acceptance names, three times: on the old holdout (round 1, rows everyone saw
while the model was built), on the fresh holdout (round 2, collected and split by a written rule before any
prediction of them), and on both together, where the acceptance is judged: the efficiency's median absolute
error (target <= 0.05), the share of rows inside their interval (target >= 80%), and busbw's median relative
error (target <= 15%). A row the model cannot predict (unknown fabric, no fit for it) is printed with its
reason and counts as a miss; a row whose source reports a defect is scored like any other.
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
    return f"{r['row_id']} r{r['round']} [{r['source_url'][:58]}, {r['source_date']}]"


def _print_rows(eff: dict, bus: dict) -> None:
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
    print(f"\nbusbw, {bus['n']} held-out nccl-tests rows (all_reduce_perf bus bandwidth, GB/s; r1 = issue 42's first "
          "collection, r2 = the second, split by a written rule before any of its rows was predicted; 'defect': the "
          "source reports the figure as a problem):")
    for r in bus["rows"]:
        flag = "  defect" if r["defect"] else ""
        if r["predicted"] is None:
            print(f"  {_where(r):<40} {r['size_bytes'] or 0:>15,.0f} B  measured {r['busbw_gbps']:8.1f}  NO ESTIMATE: "
                  f"{r['reason']}  {_src(r)}{flag}")
            continue
        size = f"{r['size_bytes']:>15,.0f} B" if r["size_bytes"] else f"{'peak':>17}"
        print(f"  {_where(r):<40}{' nvls' if r['nvls'] else '     '} {size}  measured "
              f"{r['busbw_gbps']:8.1f}  predicted {r['predicted']:8.1f} ({r['lo']:.1f}..{r['hi']:.1f})  error "
              f"{r['error']:+.1%}  {'inside' if r['inside'] else 'OUTSIDE'}  {_src(r)}{flag}")


def _summary(name: str, eff: dict, bus: dict) -> None:
    """One block of the summary: the efficiency's median |error| and inside share, busbw's median |relative error|."""
    print(f"  {name}:")
    if eff["n"]:
        print(f"    efficiency median |error| {eff['median_abs_error']:.3f} over {eff['predicted']}/{eff['n']} "
              f"predicted rows (target <= {TARGETS['efficiency_median_abs_error']}); inside the interval "
              f"{eff['inside']}/{eff['n']} = {eff['inside'] / eff['n']:.0%} (target >= {TARGETS['share_inside']:.0%})")
    else:
        print("    efficiency: no held-out scaling rows in this set")
    if bus["n"] and bus["median_abs_rel_error"] is not None:
        print(f"    busbw median |relative error| {bus['median_abs_rel_error']:.1%} over {bus['predicted']}/{bus['n']} "
              f"rows (target <= {TARGETS['busbw_median_rel_error']:.0%}); inside its interval "
              f"{bus['inside']}/{bus['n']} = {bus['inside'] / bus['n']:.0%}")
        groups: dict[str, list] = {}
        for r in bus["rows"]:  # by what decides the figure: the network between nodes, else the fabric in the node
            key = r["network"].split(":")[0] if r["nodes"] > 1 else r["fabric"] + ("+nvls" if r["nvls"] else "")
            groups.setdefault(key, []).append(r)
        print("    by fabric or network: " + "; ".join(
            f"{k} {statistics.median(abs(x['error']) for x in v if x['error'] is not None):.0%} over {len(v)} "
            f"({sum(bool(x['inside']) for x in v)} inside)" for k, v in sorted(groups.items())
            if any(x["error"] is not None for x in v)))
    else:
        print("    busbw: no held-out row predicted in this set")


def main() -> int:
    eff_rows, bus_rows = pr.scaling_rows("holdout"), pr.busbw_rows("holdout")
    eff, bus = score_scaling(eff_rows), score_busbw(bus_rows)
    _print_rows(eff, bus)
    print("\nsummary (held-out rows only; the fit never read them):")
    for name, keep in (("old holdout (round 1: issue 42's first collection, seen while the model was built)",
                        lambda r: r["round"] == 1),
                       ("fresh holdout (round 2: collected and split by rule before any prediction of them)",
                        lambda r: r["round"] == 2)):
        _summary(name, score_scaling([r for r in eff_rows if keep(r)]), score_busbw([r for r in bus_rows if keep(r)]))
    _summary("all holdout rows (the acceptance)", eff, bus)
    share = eff["inside"] / eff["n"] if eff["n"] else None
    mae, rel = eff["median_abs_error"], bus["median_abs_rel_error"]
    checks = {"efficiency median |error| <= 0.05": mae is not None and mae <= TARGETS["efficiency_median_abs_error"],
              "efficiency inside >= 80%": share is not None and share >= TARGETS["share_inside"],
              "busbw median |relative error| <= 15%": rel is not None and rel <= TARGETS["busbw_median_rel_error"],
              f"rows: {eff['n']} scaling (>= 15) over {len(eff['fabrics'])} fabrics (>= 3), {bus['n']} busbw (>= 10)":
                  eff["n"] >= 15 and len(eff["fabrics"]) >= 3 and bus["n"] >= 10}
    for what, ok in checks.items():
        print(f"  {what}: {'met' if ok else 'NOT MET'}")
    met = all(checks.values())
    print(f"  acceptance on all holdout rows: {'met' if met else 'NOT MET'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
