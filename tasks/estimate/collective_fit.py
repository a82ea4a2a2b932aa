"""Fit the collective and step models on the public `fit` rows and commit the result as data (issue 42).

    .venv/bin/python -m tasks.estimate.collective_fit            # writes tasks/estimate/data/collective_fit.json
    .venv/bin/python -m tasks.estimate.collective_fit --check    # exit 1 if the committed file is not what the rows give

Three fits, in order, each on `fit` rows only (a `holdout` row is never read here):
1. per fabric (nvls apart), single-node nccl_busbw rows: the achievable fraction of the raw link bandwidth
   and the per-hop latency, least squares on log busbw, each source weighted once whatever its number of sizes;
2. per network kind, multi-node rows: the NICs' fraction and hop latency, the node's fabric as fitted in 1;
3. the step model on dp_scaling rows: the overlap of communication with the backward (0..1) and the step-time
   jitter whose wait for the slowest GPU (tasks/estimate/scaling.py straggle_seconds) a synchronous step pays,
   the pair that minimises the mean absolute error of the efficiency; and the jitter's 5th-95th percentiles.
Each fit keeps its rows, its residuals and its 90% half-width in log (Student t over the residuals, as the
single-GPU estimator's interval: tasks/estimate/calibrate.py). Re-running on the same rows writes the same file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections import Counter
from datetime import date

import numpy as np

from tasks.estimate import collective, links as links_, public_rows as pr

HOP_US_BOUNDS = (0.1, 200.0)  # per-hop latency searched between 0.1 us (NVLink) and 200 us (TCP sockets)
FRACTION_BOUNDS = (0.005, 4.0)  # of the raw bandwidth; NVLink SHARP may pass 1
JITTER_GRID = tuple([0.0] + [round(0.002 * 1.25 ** i, 6) for i in range(25)])  # s^0.5: 0, 0.002 .. 0.42


def _r(x: float, digits: int = 5) -> float:
    return float(f"{x:.{digits}g}")


def _halfwidth(logs: list[float], k: int) -> float:
    from scipy.stats import t as student_t

    n = len(logs)
    rms = math.sqrt(sum(e * e for e in logs) / n) if n else 0.0
    dof = max(n - k, 1)
    return float(student_t.ppf(0.95, dof)) * rms * math.sqrt(1 + 1 / max(n, 1))


def _weights(rows: list[dict]) -> np.ndarray:
    per = Counter(r["source_url"] for r in rows)
    return np.array([1 / math.sqrt(per[r["source_url"]]) for r in rows])


def _least_squares(resid, x0: list[float], bounds: tuple) -> np.ndarray:
    from scipy.optimize import least_squares

    return least_squares(resid, x0, bounds=bounds, x_scale="jac").x


def _residual_rows(rows: list[dict], pred: list[float]) -> list[dict]:
    return [{"row_id": r["row_id"], "size_bytes": r["size_bytes"], "measured_gbps": r["busbw_gbps"],
             "predicted_gbps": _r(p), "log_error": _r(math.log(p / r["busbw_gbps"]), 4)} for r, p in zip(rows, pred)]


def fit_fabrics(rows: list[dict]) -> tuple[dict, list[str]]:
    """{fabric key: {fraction, hop_us, rows, residuals, log_halfwidth}}, and the rows left out with why."""
    groups: dict[str, list[tuple[dict, float]]] = {}
    skipped = []
    for r in rows:
        if r["nodes"] > 1:
            continue
        lk = links_.links_of(r["gpu"])
        raw, why = links_.fabric_gbps(lk, r["fabric"]) if lk else (None, f"GPU {r['gpu']!r} not in gpu_specs.json")
        if raw is None:
            skipped.append(f"{r['row_id']}: {why}")
            continue
        groups.setdefault(collective.fabric_key(r["fabric"], r["nvls"]), []).append((r, raw))
    out = {}
    for key, got in sorted(groups.items()):
        rs = [r for r, _ in got]
        wts = _weights(rs)

        def pred(x, got=got):
            return [r["size_bytes"] * 2 * (r["gpus_per_node"] - 1) / r["gpus_per_node"] / collective.ring_seconds(
                r["size_bytes"], r["gpus_per_node"], raw * x[0], x[1] * 1e-6) / 1e9 for r, raw in got]

        def resid(x, rs=rs, wts=wts, pred=pred):
            return wts * np.log(np.array(pred(x)) / np.array([r["busbw_gbps"] for r in rs]))

        x0 = [float(np.median([r["busbw_gbps"] / raw for r, raw in got])), 5.0]
        x = _least_squares(resid, x0, ([FRACTION_BOUNDS[0], HOP_US_BOUNDS[0]], [FRACTION_BOUNDS[1], HOP_US_BOUNDS[1]]))
        p = pred(x)
        logs = [math.log(a / r["busbw_gbps"]) for a, r in zip(p, rs)]
        out[key] = {"fraction": _r(x[0]), "hop_us": _r(x[1]), "rows": [r["row_id"] for r in rs],
                    "sources": sorted({r["source_url"] for r in rs}), "log_halfwidth": _r(_halfwidth(logs, 2)),
                    "median_abs_log_error": _r(float(np.median(np.abs(logs)))), "residuals": _residual_rows(rs, p)}
    return out, skipped


def fit_networks(rows: list[dict], fabrics: dict) -> tuple[dict, list[str]]:
    """{network kind: {fraction, hop_us, ...}} from multi-node rows, the intra-node fabric as already fitted."""
    groups: dict[str, list[tuple[dict, dict]]] = {}
    skipped = []
    base = {"fabrics": fabrics, "networks": {}}
    for r in rows:
        if r["nodes"] <= 1:
            continue
        try:
            net = links_.parse_network(r["network"])
        except ValueError as e:
            skipped.append(f"{r['row_id']}: {e}")
            continue
        if net is None:
            skipped.append(f"{r['row_id']}: {r['nodes']} nodes without a network")
            continue
        m, why = collective.machine(r["gpu"], r["gpus_per_node"], r["fabric"], 1, None, r["nvls"], base)
        if m is None:
            skipped.append(f"{r['row_id']}: {why}")
            continue
        groups.setdefault(net.kind, []).append((r, {**m, "net": net}))
    out = {}
    for kind, got in sorted(groups.items()):
        rs = [r for r, _ in got]
        wts = _weights(rs)

        def pred(x, got=got):
            res = []
            for r, m in got:
                mm = {**m, "net_fraction": x[0], "net_hop_s": x[1] * 1e-6}
                n, s = r["gpus_per_node"] * r["nodes"], r["size_bytes"]
                res.append(s * 2 * (n - 1) / n / collective.allreduce_seconds(mm, s, r["gpus_per_node"], r["nodes"]) / 1e9)
            return res

        def resid(x, rs=rs, wts=wts, pred=pred):
            return wts * np.log(np.array(pred(x)) / np.array([r["busbw_gbps"] for r in rs]))

        x0 = [float(np.median([r["busbw_gbps"] / m["net"].gbytes_per_s for r, m in got])), 20.0]
        x0[0] = min(max(x0[0], FRACTION_BOUNDS[0] * 2), FRACTION_BOUNDS[1] / 2)
        x = _least_squares(resid, x0, ([FRACTION_BOUNDS[0], HOP_US_BOUNDS[0]], [FRACTION_BOUNDS[1], HOP_US_BOUNDS[1] * 10]))
        p = pred(x)
        logs = [math.log(a / r["busbw_gbps"]) for a, r in zip(p, rs)]
        out[kind] = {"fraction": _r(x[0]), "hop_us": _r(x[1]), "rows": [r["row_id"] for r in rs],
                     "sources": sorted({r["source_url"] for r in rs}), "log_halfwidth": _r(_halfwidth(logs, 2)),
                     "median_abs_log_error": _r(float(np.median(np.abs(logs)))), "residuals": _residual_rows(rs, p)}
    return out, skipped


def fit_step(rows: list[dict], fit: dict) -> tuple[dict | None, list[str]]:
    """The step model's overlap (0..1) and jitter (s^0.5) minimising the mean |error| of the efficiency on the
    scaling rows (a grid: robust to the odd row), and the jitter's 5th and 95th percentiles over the rows (each
    row's jitter given the fitted overlap): the interval's straggler bounds."""
    from tasks.estimate import scaling

    usable, skipped = [], []
    for r in rows:
        probe = scaling.predict_scaling(**pr.scaling_inputs(r), fit={**fit, "step": None})
        if probe.efficiency is None:
            skipped.append(f"{r['row_id']}: {probe.reason}")
        else:
            usable.append(r)
    if not usable:
        return None, skipped

    def preds(phi: float, sigma: float) -> list:
        f = {**fit, "step": {"overlap": phi, "jitter": sigma, "rows": []}}
        return [scaling.predict_scaling(**pr.scaling_inputs(r), fit=f) for r in usable]

    grid = [(phi / 20, sg) for phi in range(21) for sg in JITTER_GRID]
    cost = {g: sum(abs(p.efficiency - r["efficiency"]) for p, r in zip(preds(*g), usable)) for g in grid}
    phi, sigma = min(grid, key=lambda g: (round(cost[g], 12), g))
    got = preds(phi, sigma)
    implied = []  # each row's jitter at the fitted overlap: what its measured efficiency says the wait was
    for p, r in zip(got, usable):
        z = scaling.straggle_seconds(p.compute_s, r["gpus_per_node"] * r["nodes"], 1.0)
        implied.append(max(0.0, (p.compute_s / r["efficiency"] - p.compute_s - p.exposed_s) / z))
    lo, hi = (float(np.quantile(implied, q)) for q in (0.05, 0.95))
    errs = [p.efficiency - r["efficiency"] for p, r in zip(got, usable)]
    return {"overlap": phi, "jitter": _r(sigma), "jitter_lo": _r(lo), "jitter_hi": _r(hi),
            "rows": [r["row_id"] for r in usable], "mean_abs_error": _r(sum(abs(e) for e in errs) / len(errs)),
            "median_abs_error": _r(float(np.median(np.abs(errs)))),
            "residuals": [{"row_id": r["row_id"], "measured": r["efficiency"], "predicted": _r(p.efficiency),
                           "error": _r(e, 3), "implied_jitter": _r(j, 3)}
                          for p, r, e, j in zip(got, usable, errs, implied)]}, skipped


def _sha(path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def fit_all(today: str | None = None) -> dict:
    """The whole fit document, from the `fit` rows of the committed data files."""
    bus = pr.busbw_rows("fit")
    fabrics, skip1 = fit_fabrics(bus)
    networks, skip2 = fit_networks(bus, fabrics)
    doc = {"schema": "costgap collective fit v1", "fitted_on": today or date.today().isoformat(),
           "command": "python -m tasks.estimate.collective_fit",
           "data": {p.name: _sha(p) for p in (pr.BUSBW, pr.SCALING)},
           "note": "fraction: achieved busbw over the raw GB/s per GPU and direction (gpu_specs.json link data); "
                   "hop_us: ring latency per hop; log_halfwidth: the 90% interval is x/÷ exp(log_halfwidth); "
                   "fit rows only, every source weighted once",
           "fabrics": fabrics, "networks": networks}
    step, skip3 = fit_step(pr.scaling_rows("fit"), doc)
    doc["step"] = step
    doc["left_out"] = skip1 + skip2 + skip3
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tasks.estimate.collective_fit", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="Compare with the committed file instead of writing it.")
    ap.add_argument("--out", default=str(collective.FIT_PATH), help="Where to write (default: %(default)s).")
    args = ap.parse_args(argv)
    old = json.loads(collective.FIT_PATH.read_text()) if collective.FIT_PATH.is_file() else {}
    doc = fit_all(old.get("fitted_on") if args.check else None)
    if args.check:
        same = {k: v for k, v in doc.items() if k != "fitted_on"} == {k: v for k, v in old.items() if k != "fitted_on"}
        print("collective fit: " + ("matches the committed rows" if same else "STALE: re-run without --check"))
        return 0 if same else 1
    from pathlib import Path

    out = Path(args.out)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out)  # nothing half-written
    collective.load_fit.cache_clear()
    for key, f in {**doc["fabrics"], **doc["networks"]}.items():
        print(f"{key:<14} fraction {f['fraction']:.3f}  hop {f['hop_us']:,.1f} us  {len(f['rows'])} rows from "
              f"{len(f['sources'])} sources  median |log error| {f['median_abs_log_error']:.3f}  90% x/÷ "
              f"{math.exp(f['log_halfwidth']):.3f}")
    if doc["step"]:
        st = doc["step"]
        print(f"step           overlap {st['overlap']:.2f}, jitter {st['jitter']:.3f} s^0.5 (90% {st['jitter_lo']:.3f}.."
              f"{st['jitter_hi']:.3f}) on {len(st['rows'])} scaling rows, median |error| {st['median_abs_error']:.3f}")
    for line in doc["left_out"]:
        print(f"left out: {line}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
