"""Fit the collective and step models on the public `fit` rows and commit the result as data (issue 42).

    .venv/bin/python -m tasks.estimate.collective_fit            # writes tasks/estimate/data/collective_fit.json
    .venv/bin/python -m tasks.estimate.collective_fit --check    # exit 1 if the committed file is not what the rows give

Three fits, in order, each on `fit` rows only (a `holdout` row is never read here), and none on a row whose
source reports the figure itself as a problem (its `defect` column says why; listed under left_out):
1. per fit key (collective.fit_key: the NVLink family, NVLink SHARP, pcie-host), single-node nccl_busbw rows:
   the achievable fraction of the raw link bandwidth and the per-hop latency, least squares on log busbw, each
   source weighted once whatever its number of sizes;
2. per network kind, multi-node rows: the NICs' fraction and hop latency, the node's fabric as fitted in 1;
3. the step model on dp_scaling rows: the overlap of communication with the backward (0..1) and the step-time
   jitter whose wait for the slowest GPU (tasks/estimate/scaling.py straggle_seconds) a synchronous step pays,
   the pair that minimises the mean absolute error of the efficiency; and the jitter's 5th-95th percentiles.
Each busbw group keeps its rows, its in-sample residuals and a 90% half-width in log from its runs predicted
with their source left out (tasks/estimate/collective_spread.py). The pcie-host rows' host paths are counted
(host_paths); they become a factor only once two host paths each have fit rows from two sources.
Re-running on the same rows writes the same file.
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

from tasks.estimate import collective, collective_spread as spread_, links as links_, public_rows as pr

FRACTION_BOUNDS = (0.005, 4.0)  # of the raw bandwidth; NVLink SHARP may pass 1
JITTER_GRID = tuple([0.0] + [round(0.002 * 1.25 ** i, 6) for i in range(25)])  # s^0.5: 0, 0.002 .. 0.42
# Per-hop latency of a ring all-reduce step (Simple protocol), us: NCCL's own tuning model, hwLat[NVLINK | PCI |
# NET][Ring][Simple] (NVIDIA/nccl src/graph/tuning.cc at 01afd20a, read 2026-12-07). Used where the rows cannot
# say it: a latency is only seen below a few MB, and the rows of a group must span SIZE_SPAN_FOR_HOP to fit it.
NCCL_HOP_US = {"nvswitch": 3.4, "nvlink": 3.4, "pcie": 5.7, "pcie-host": 5.7, "network": 9.6}
NCCL_HOP_SOURCE = "NCCL tuning model hwLat Ring/Simple (NVIDIA/nccl src/graph/tuning.cc at 01afd20a, read 2026-12-07)"
SIZE_SPAN_FOR_HOP = (64 * 2**20, 100.0)  # a row below 64 MiB and sizes spanning 100x: else the hop is NCCL's
HOP_US_BOUNDS = (0.1, 200.0)  # where fitted
HOST_PATH_FACTOR_SOURCES = 2  # fit sources a host path needs (on two host paths) before it is a pcie-host factor


_r = spread_.sig


def _weights(rows: list[dict]) -> np.ndarray:
    """Each source (a repository or a thread: public_rows.source_key) weighs once in the squared error."""
    per = Counter(r["source"] for r in rows)
    return np.array([1 / math.sqrt(per[r["source"]]) for r in rows])


def _fit(pred, measured: np.ndarray, wts: np.ndarray, hop_free: bool, hop0: float) -> tuple[float, float]:
    """(fraction, hop_us) minimising the weighted squared log error of pred(fraction, hop_us): the fraction by a
    log grid then a bounded 1-D refinement (the multi-node model is flat where the other phase is the slower),
    the hop alongside where the rows can say it."""
    from scipy.optimize import minimize, minimize_scalar

    def cost(f: float, hop: float) -> float:
        return float(np.sum((wts * np.log(np.array(pred(f, hop)) / measured)) ** 2))

    grid = np.exp(np.linspace(math.log(FRACTION_BOUNDS[0]), math.log(FRACTION_BOUNDS[1]), 400))
    best = min(grid, key=lambda f: (cost(f, hop0), f))
    lo, hi = max(best / 1.05, FRACTION_BOUNDS[0]), min(best * 1.05, FRACTION_BOUNDS[1])
    f = float(minimize_scalar(lambda v: cost(v, hop0), bounds=(lo, hi), method="bounded").x)
    if not hop_free:
        return f, hop0
    res = minimize(lambda x: cost(math.exp(x[0]), math.exp(x[1])), [math.log(f), math.log(hop0)], method="L-BFGS-B",
                   bounds=[tuple(map(math.log, FRACTION_BOUNDS)), tuple(map(math.log, HOP_US_BOUNDS))])
    return float(math.exp(res.x[0])), float(math.exp(res.x[1]))


def _hop_free(rows: list[dict]) -> bool:
    sizes = [r["size_bytes"] for r in rows if r["size_bytes"]]
    return bool(sizes) and min(sizes) < SIZE_SPAN_FOR_HOP[0] and max(sizes) / min(sizes) >= SIZE_SPAN_FOR_HOP[1]


def _entry(rs: list[dict], x: tuple[float, float], p: list[float], hop_free: bool) -> dict:
    logs = [math.log(a / r["busbw_gbps"]) for a, r in zip(p, rs)]
    return {"fraction": _r(x[0]), "hop_us": _r(x[1]), "hop_source": "fitted" if hop_free else NCCL_HOP_SOURCE,
            "rows": [r["row_id"] for r in rs], "sources": sorted({r["source"] for r in rs}),
            "median_abs_log_error": _r(float(np.median(np.abs(logs)))), "residuals": _residual_rows(rs, p)}


def _residual_rows(rows: list[dict], pred: list[float]) -> list[dict]:
    return [{"row_id": r["row_id"], "size_bytes": r["size_bytes"], "measured_gbps": r["busbw_gbps"],
             "predicted_gbps": _r(p), "log_error": _r(math.log(p / r["busbw_gbps"]), 4)} for r, p in zip(rows, pred)]


def _size(r: dict) -> float:
    return r["size_bytes"] or collective.PLATEAU_BYTES


def _intra_pred(got: list[tuple[dict, float]], f: float, hop: float) -> list[float]:
    return [_size(r) * 2 * (r["gpus_per_node"] - 1) / r["gpus_per_node"] / collective.ring_seconds(
        _size(r), r["gpus_per_node"], raw * f, hop * 1e-6) / 1e9 for r, raw in got]


def _intra_params(got: list[tuple[dict, float]], key: str) -> tuple[float, float, bool]:
    """One group's (fraction, hop, hop fitted?) from its rows [(row, raw GB/s)], each source weighted once."""
    rs = [r for r, _ in got]
    free = _hop_free(rs)
    x = _fit(lambda f, hop: _intra_pred(got, f, hop), np.array([r["busbw_gbps"] for r in rs]), _weights(rs), free,
             NCCL_HOP_US["pcie" if key == "pooled_p2p" else key.split("+")[0]])
    return x[0], x[1], free


def _fit_group(got: list[tuple[dict, float]], key: str) -> tuple[dict, list[dict]]:
    """One group's entry and its runs predicted with their source left out."""
    f, hop, free = _intra_params(got, key)
    loso = spread_.leave_one_source_out(got, lambda tr: _intra_params(tr, key)[:2], lambda te, x: _intra_pred(te, *x))
    return _entry([r for r, _ in got], (f, hop), _intra_pred(got, f, hop), free), loso


def fit_fabrics(rows: list[dict]) -> tuple[dict, dict | None, list[str], dict]:
    """({fit key: {fraction, hop_us, rows, residuals}}, the peer-to-peer pool that pcie borrows, the rows left out
    with why, {key: left-out runs}). NVLink SHARP: as the source says, else where the switch and NCCL do it."""
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
        nvls = r["nvls"] if r["nvls"] is not None else collective.nvls_auto(lk, r["fabric"], r["nccl_version"])
        groups.setdefault(collective.fit_key(r["fabric"], nvls), []).append((r, raw))
    fabrics, runs = {}, {}
    for key, got in sorted(groups.items()):
        fabrics[key], runs[key] = _fit_group(got, key)
    p2p = [k for k in sorted(groups) if k.split("+")[0] in ("nvlink", "pcie") and "+" not in k]
    pooled = None
    if p2p:
        pooled, runs["pooled_p2p"] = _fit_group([g for k in p2p for g in groups[k]], "pooled_p2p")
        pooled["fabrics"] = sorted({r["fabric"] for k in p2p for r, _ in groups[k]})
    return fabrics, pooled, skipped, runs


def _net_pred(got: list[tuple[dict, dict]], f: float, hop: float) -> list[float]:
    res = []
    for r, m in got:
        mm = {**m, "net_fraction": f, "net_hop_s": hop * 1e-6}
        n, s = r["gpus_per_node"] * r["nodes"], _size(r)
        res.append(s * 2 * (n - 1) / n / collective.allreduce_seconds(mm, s, r["gpus_per_node"], r["nodes"]) / 1e9)
    return res


def _net_params(got: list[tuple[dict, dict]]) -> tuple[float, float, bool]:
    rs = [r for r, _ in got]
    free = _hop_free(rs)
    x = _fit(lambda f, hop: _net_pred(got, f, hop), np.array([r["busbw_gbps"] for r in rs]), _weights(rs), free,
             NCCL_HOP_US["network"])
    return x[0], x[1], free


def fit_networks(rows: list[dict], fabrics: dict, pooled: dict | None) -> tuple[dict, list[str], dict]:
    """({network kind: {fraction, hop_us, ...}}, rows left out, {kind: left-out runs}) from multi-node rows, the
    intra-node fabric as already fitted."""
    groups: dict[str, list[tuple[dict, dict]]] = {}
    skipped = []
    base = {"fabrics": fabrics, "networks": {}, "pooled_p2p": pooled}
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
        m, why = collective.machine(r["gpu"], r["gpus_per_node"], r["fabric"], 1, None, r["nvls"], base,
                                    r["nccl_version"])
        if m is None:
            skipped.append(f"{r['row_id']}: {why}")
            continue
        groups.setdefault(net.kind, []).append((r, {**m, "net": net}))
    out, runs = {}, {}
    for kind, got in sorted(groups.items()):
        f, hop, free = _net_params(got)
        out[kind] = _entry([r for r, _ in got], (f, hop), _net_pred(got, f, hop), free)
        runs[kind] = spread_.leave_one_source_out(got, lambda tr: _net_params(tr)[:2], lambda te, x: _net_pred(te, *x))
    return out, skipped, runs


def host_paths(rows: list[dict]) -> dict:
    """Which host paths the pcie-host fit rows cover, and from how many sources: the host path becomes a factor
    of the pcie-host fraction once HOST_PATH_FACTOR_SOURCES sources each cover two host paths (not yet)."""
    seen: dict[str, set] = {}
    for r in rows:
        if r["fabric"] == "pcie-host" and r["nodes"] == 1:
            seen.setdefault(r["host_path"] or "unknown", set()).add(r["source"])
    known = [h for h, srcs in seen.items() if h != "unknown" and len(srcs) >= HOST_PATH_FACTOR_SOURCES]
    return {"sources": {h: sorted(v) for h, v in sorted(seen.items())}, "factor": len(known) >= 2,
            "rule": f"a factor once {HOST_PATH_FACTOR_SOURCES} sources each cover two host paths (switch, socket, "
                    "cross-socket); until then one pcie-host fraction, host paths mixed in its spread"}


def fit_step(rows: list[dict], fit: dict) -> tuple[dict | None, list[str]]:
    """The step model's overlap (0..1) and jitter (s^0.5) minimising the mean |error| of the efficiency on the
    scaling rows (a grid: robust to the odd row), and the jitter's 5th and 95th percentiles over the rows (each
    row's jitter given the fitted overlap): the interval's straggler bounds."""
    from tasks.estimate import scaling

    usable, skipped = [], []
    for r in rows:
        if r["unscoreable"]:
            skipped.append(f"{r['row_id']}: {r['unscoreable']}")
            continue
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
    rows = pr.busbw_rows("fit")
    bus = [r for r in rows if not r["defect"]]
    skip0 = [f"{r['row_id']}: defect: {r['defect']}" for r in rows if r["defect"]]
    fabrics, pooled, skip1, runs = fit_fabrics(bus)
    networks, skip2, net_runs = fit_networks(bus, fabrics, pooled)
    pooled_runs = runs.pop("pooled_p2p", [])
    intra = spread_.attach(fabrics, runs, "intra-node")
    if pooled:  # pcie borrows the pool without a row of its own: never narrower than the intra-node pool
        own = spread_.halfwidth([x["log_error"] for x in pooled_runs])
        pooled.update(left_out_runs=pooled_runs, log_halfwidth=_r(max(own, intra["log_halfwidth"])),
                      spread="no pcie rows: the larger of the pool's own left-out runs and the intra-node pool")
    inter = spread_.attach(networks, net_runs, "network")
    doc = {"schema": "costgap collective fit v2", "fitted_on": today or date.today().isoformat(),
           "command": "python -m tasks.estimate.collective_fit",
           "data": {p.name: _sha(p) for p in (pr.BUSBW, pr.SCALING)},
           "note": "fraction: achieved busbw over the raw GB/s per GPU and direction (gpu_specs.json link data); "
                   "hop_us: ring latency per hop; log_halfwidth: the 90% interval is x/÷ exp(log_halfwidth), from "
                   "each group's runs predicted with their source left out; fit rows only, defect rows left out, "
                   "every source weighted once",
           "fabrics": fabrics, "pooled_p2p": pooled, "networks": networks,
           "spread_pools": {"intra-node": intra, "network": inter}, "host_paths": host_paths(bus)}
    step, skip3 = fit_step(pr.scaling_rows("fit"), doc)
    doc["step"] = step
    doc["left_out"] = skip0 + skip1 + skip2 + skip3
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
    for key, f in {**doc["fabrics"], **({"pooled p2p": doc["pooled_p2p"]} if doc["pooled_p2p"] else {}),
                   **doc["networks"]}.items():
        print(f"{key:<14} fraction {f['fraction']:.3f}  hop {f['hop_us']:,.1f} us  {len(f['rows'])} rows from "
              f"{len(f['sources'])} sources  median |log error| {f['median_abs_log_error']:.3f}  90% x/÷ "
              f"{math.exp(f['log_halfwidth']):.3f} ({f['spread']})")
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
