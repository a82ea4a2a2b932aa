"""The collective fit's 90% intervals: how far a system nobody measured lands (issue 42).

    .venv/bin/python -m tasks.estimate.collective_fit    # writes these spreads into data/collective_fit.json

A group (an intra-node fit key, or a network kind) is fitted on runs from several sources. Its in-sample
residuals say little about a new system: the sizes of one run sit on one curve and the fraction was fitted to
them. So each source (a repository or one thread: public_rows.source_key) is left out in turn, the group's
fraction refitted on the other sources, and every run of the left-out source (one system and configuration,
its sizes averaged in log) predicted. Those residuals are the spread of the predictions this model makes for
hardware it never saw.

90% half-width in log = Student t(0.95, runs - k) x rms x sqrt(1 + 1/runs), as the single-GPU estimator's
interval (tasks/estimate/calibrate.py). A group with fewer than MIN_SOURCES sources cannot say its own spread:
it takes the larger of its own and the one pooled over every group of its kind (intra-node groups together,
network groups together: their wires differ, so do their spreads).
"""

from __future__ import annotations

import math
from statistics import fmean
from typing import Callable

MIN_SOURCES = 3  # a group states its own spread from this many left-out sources on


def sig(x: float, digits: int = 5) -> float:
    """x to `digits` significant digits: what the committed fit stores (re-running writes the same file)."""
    return float(f"{x:.{digits}g}")


def run_key(r: dict) -> tuple:
    """One run: a source, a system and its configuration (its message sizes are one curve)."""
    return r["source"], r["system"], r["gpus_per_node"], r["nodes"], r["network"], r["fabric"]


def halfwidth(log_errors: list[float], fitted: int = 1) -> float:
    """90% half-width in log of a prediction from `log_errors` (one per run), `fitted` parameters per group."""
    from scipy.stats import t as student_t

    n = len(log_errors)
    if n == 0:
        return 0.0
    rms = math.sqrt(sum(e * e for e in log_errors) / n)
    return float(student_t.ppf(0.95, max(n - fitted, 1))) * rms * math.sqrt(1 + 1 / n)


def leave_one_source_out(items: list[tuple[dict, object]], refit: Callable, predict: Callable) -> list[dict]:
    """Per run of each left-out source: its mean log error when the group is refitted without that source.
    items: [(row, extra)]; refit(items) -> params; predict(items, params) -> [GB/s]. Empty below two sources."""
    sources = list(dict.fromkeys(r["source"] for r, _ in items))
    if len(sources) < 2:
        return []
    out = []
    for s in sources:
        test = [it for it in items if it[0]["source"] == s]
        params = refit([it for it in items if it[0]["source"] != s])
        runs: dict[tuple, list] = {}
        for p, (r, _) in zip(predict(test, params), test):
            runs.setdefault(run_key(r), []).append((r["row_id"], math.log(p / r["busbw_gbps"])))
        out += [{"source": s, "system": k[1], "rows": [i for i, _ in v], "log_error": sig(fmean(e for _, e in v), 4)}
                for k, v in runs.items()]
    return out


def attach(entries: dict[str, dict], runs: dict[str, list[dict]], kind: str) -> dict:
    """Write each entry's log_halfwidth, spread and left-out runs; return the pooled spread of this kind."""
    used = [k for k in entries if runs.get(k)]
    errs = [x["log_error"] for k in used for x in runs[k]]
    pooled = halfwidth(errs, len(used)) if errs else 0.0
    for key, e in entries.items():
        mine = runs.get(key, [])
        own = halfwidth([x["log_error"] for x in mine]) if mine else 0.0
        e["left_out_runs"] = mine
        if len(e["sources"]) >= MIN_SOURCES and mine:
            e["log_halfwidth"], e["spread"] = sig(own), f"its own {len(mine)} runs, each with its source left out"
        else:
            e["log_halfwidth"] = sig(max(own, pooled))
            e["spread"] = (f"{len(e['sources'])} source(s): the larger of its own and the {kind} pool "
                           f"({len(errs)} runs of {len(used)} groups)")
    return {"log_halfwidth": sig(pooled), "runs": len(errs), "groups": used}
