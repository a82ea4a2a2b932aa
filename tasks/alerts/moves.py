"""The cost-based changes, one kind per cause, each between two windows of the one grid (tasks.cost.grid).

    .venv/bin/pytest -q tests/test_alerts_decide.py tests/test_alerts_kinds.py

Input: the cost model's rows and figures over a tasks.cost.grid.compare_span (period 0 = the overview's
window, period j+1 = the non-overlapping window before period j). Only presets where at least two
targets have a cost in both windows are considered: a preset one target ran has no gap and no choice,
so nothing is told for it. Per preset, oldest window first:
- cheapest changed: the cheapest target (lowest C, the headline's) differs from the one that was the
  cheapest, and the old one now costs more over the whole 90% interval of its gap (noise is no change).
  Before = the last window in which the old one was the cheapest; after = this window.
- gap shifted: no cheapest change was told for the later window, and a dearer target's gap against the
  cheapest (of the later window, in both windows) left the earlier window's 90% interval by at least
  `min_gap_move`. (If the two swapped places inside the noise, the earlier gap is negative: still the
  same way round.)
- throughput shifted: a target's tokens/s moved between the two windows by the change-point test
  (tasks.cost.changepoint.window_shift: permutation test on the runs, alpha, min_shift).
- failure rate shifted: a target's failed-attempt rate k/n moved (two-sided Fisher exact test at
  `failure_alpha`) and its rerun factor R by at least `min_reliability_move`.
One cause, one told change: a throughput or failure-rate shift of a target that is already told as a
cheapest change or a gap shift for the same preset and windows is evidence there, not a change of its own.
Every gap is told the headline's way round: the dearer target against the cheapest (each in its own
window), so `costgap gap <a> <b> --between <before> --and <after>` reproduces a row's figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from tasks.alerts.config import (CHEAPEST_CHANGED, FAILURE_RATE_SHIFTED, GAP_SHIFTED, THROUGHPUT_SHIFTED, AlertConfig,
                                 Change)
from tasks.cost.changepoint import window_shift
from tasks.estimate.evidence import MIN_TERM_MOVE, TERMS, evidence, evidence_text, main_term, moved, pct, sig, span_text
from tasks.cost.model import Figure, gap_figure
from tasks.cost.table import cheapest_first

SIDE = ("price_per_hour", "tokens_per_s", "failed_attempts", "attempts", "p", "R", "cost_per_mtok", "cost_lo",
        "cost_hi", "runs")
Env = Callable[[str, str, tuple, tuple], list]


@dataclass
class Facts:
    """What the decisions read beside the costs: price periods, environment shifts, change-point steps."""

    price_periods: list[dict]  # [{target, at, old, new, currency}] (tasks.alerts.evaluate)
    env: Env  # (target, preset, window1, window2) -> tasks.estimate.evidence.env_shift
    steps: list[dict]  # tasks.cost.changepoint.detect findings over the span
    samples: dict  # {(period, target, preset): each run's tokens/s}


def _iso(t) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _window(rows_by: dict, figs: dict, period: int, a: str, b: str, preset: str) -> dict:
    """One window of a told change: its bounds, the pair (a against b), both sides' figures and the gap."""
    ra, rb = rows_by[(period, a, preset)], rows_by[(period, b, preset)]
    g = gap_figure(figs[(period, a, preset)], figs[(period, b, preset)])
    return {"start": _iso(ra["window_start"]), "end": _iso(ra["window_end"]), "a": a, "b": b,
            "cost_a": ra["cost_per_mtok"], "cost_b": rb["cost_per_mtok"], "gap": g.gap, "gap_lo": g.gap_lo,
            "gap_hi": g.gap_hi, "terms": g.terms, "figures": {"a": {k: ra[k] for k in SIDE}, "b": {k: rb[k] for k in SIDE}},
            "_bounds": (ra["window_start"], ra["window_end"])}


def _as(w: dict, a: str) -> dict:
    """A window's sides keyed so that "a" is target `a` (the told pair's dearer side in the later window)."""
    f = w["figures"]
    return f if w["a"] == a else {"a": f["b"], "b": f["a"]}


def _terms_as(w: dict, a: str) -> dict:
    return w["terms"] if w["a"] == a else {k: -v for k, v in w["terms"].items()}


def _payload(preset: str, target: str, currency: str, before: dict, after: dict, facts: Facts,
             terms: tuple[str, ...] = TERMS, **extra) -> dict:
    a, b = after["a"], after["b"]
    delta = moved(_terms_as(before, a), after["terms"])
    span = (before["_bounds"][0], after["_bounds"][1])
    env = ({t: facts.env(t, preset, before["_bounds"], after["_bounds"]) for t in (a, b)}
           if "throughput" in terms and abs(delta["throughput"]) > MIN_TERM_MOVE else {})  # read only when told
    ev = evidence({"a": a, "b": b}, _as(before, a), _as(after, a), delta, span, price_periods=facts.price_periods,
                  env=env, steps=[s for s in facts.steps if s["preset"] == preset], terms=terms)
    clean = {k: {x: y for x, y in w.items() if x != "_bounds"} for k, w in (("before", before), ("after", after))}
    return {"preset": preset, "target": target, "currency": currency, **clean, "delta_terms": delta,
            "main_term": main_term(delta), "evidence": ev, **extra}


def _moved_text(p: dict) -> str:
    return f" What moved: {evidence_text(p['evidence'])}." if p["evidence"] else ""


def _pairs(by_period: dict) -> list[tuple[int, int]]:
    """(before, after) period pairs, oldest first, each after its non-overlapping predecessor."""
    ps = sorted(by_period, reverse=True)
    return [(p1, p0) for p1, p0 in zip(ps, ps[1:]) if p1 == p0 + 1]


def decide(rows: list[dict], figs: dict[tuple, Figure], facts: Facts, cfg: AlertConfig) -> list[Change]:
    """Every cost-based change over the span (module docstring), oldest window first per preset."""
    rows_by = {(r["period"], r["target"], r["preset"]): r for r in rows}
    out: list[Change] = []
    for preset in sorted({r["preset"] for r in rows}):
        costed = {}
        for r in rows:
            if r["preset"] == preset and r["cost_per_mtok"] is not None:
                costed.setdefault(r["period"], []).append(r)
        ranked = {p: [r["target"] for r in cheapest_first(rs)] for p, rs in costed.items() if len(rs) >= 2}
        told = _cheapest(preset, ranked, rows_by, figs, facts)
        for p1, p0 in _pairs(ranked):
            if ranked[p0][0] in ranked[p1] and not any(c.period == p0 for c in told):
                told += _gaps(preset, ranked, p1, p0, rows_by, figs, facts, cfg)
            taken = {(c.period, t) for c in told for t in (c.target, *c.related)}
            for t in (t for t in ranked[p0] if t in ranked[p1] and (p0, t) not in taken):
                told += _throughput(preset, t, ranked, p1, p0, rows_by, figs, facts, cfg)
                told += _failures(preset, t, ranked, p1, p0, rows_by, figs, facts, cfg)
        out += told
    return out


# -- cheapest changed -----------------------------------------------------------------------------------

def _cheapest(preset: str, ranked: dict, rows_by: dict, figs: dict, facts: Facts) -> list[Change]:
    out, held, held_at = [], None, None
    for period in sorted(ranked, reverse=True):  # oldest window first
        best = ranked[period][0]
        if held is None or best == held:
            held, held_at = best, period
            continue
        if held not in ranked[period]:
            continue  # the standing cheapest has no cost here: hold
        after = _window(rows_by, figs, period, held, best, preset)
        if after["gap_lo"] <= 0:
            continue  # cheaper only inside the interval: noise, not a change
        if (held_at, best, preset) not in rows_by or rows_by[(held_at, best, preset)]["cost_per_mtok"] is None:
            held, held_at = best, period  # the new cheapest had no cost when the old one led: nothing to compare
            continue
        before = _window(rows_by, figs, held_at, best, held, preset)
        cur = rows_by[(period, best, preset)]["currency"]
        p = _payload(preset, best, cur, before, after, facts, old_target=held, new_target=best,
                     old_cost_per_mtok=before["cost_b"], new_cost_per_mtok=after["cost_b"],
                     gap=after["gap"], gap_lo=after["gap_lo"], gap_hi=after["gap_hi"])
        summary = (f"{preset}: {best} is now the cheapest, {sig(after['cost_b'])} {cur} per 1M tokens "
                   f"({span_text(*after['_bounds'])}); {held} costs {pct(after['gap'])} more (90% "
                   f"{pct(after['gap_lo'])} to {pct(after['gap_hi'])}). Before ({span_text(*before['_bounds'])}) "
                   f"{held} was the cheapest, at {sig(before['cost_b'])}, and {best} cost {pct(before['gap'])} more."
                   f"{_moved_text(p)}")
        out.append(Change(CHEAPEST_CHANGED, f"cheapest/{preset}", best, best, after["_bounds"][1], summary, p,
                          related=(held,), period=period, noticed_at=after["_bounds"][1]))
        held, held_at = best, period
    return out


# -- gap shifted ----------------------------------------------------------------------------------------

def _gaps(preset: str, ranked: dict, p1: int, p0: int, rows_by: dict, figs: dict, facts: Facts,
          cfg: AlertConfig) -> list[Change]:
    cheapest = ranked[p0][0]
    out = []
    for t in ranked[p0][1:]:
        if t not in ranked[p1]:
            continue
        before = _window(rows_by, figs, p1, t, cheapest, preset)
        after = _window(rows_by, figs, p0, t, cheapest, preset)
        outside = not before["gap_lo"] <= after["gap"] <= before["gap_hi"]
        if not outside or abs(after["gap"] - before["gap"]) < cfg.min_gap_move:
            continue
        cur = rows_by[(p0, t, preset)]["currency"]
        p = _payload(preset, t, cur, before, after, facts, cheapest=cheapest, gap=after["gap"],
                     gap_lo=after["gap_lo"], gap_hi=after["gap_hi"], previous_gap=before["gap"])
        summary = (f"{preset}: {t} against the cheapest, {cheapest}: {pct(after['gap'])} (90% {pct(after['gap_lo'])} "
                   f"to {pct(after['gap_hi'])}; {span_text(*after['_bounds'])}), was {pct(before['gap'])} "
                   f"({span_text(*before['_bounds'])}; 90% {pct(before['gap_lo'])} to {pct(before['gap_hi'])}); "
                   f"mostly {p['main_term']}.{_moved_text(p)}")
        out.append(Change(GAP_SHIFTED, f"gap/{preset}/{t}/{cheapest}", p["after"]["end"], t, after["_bounds"][1],
                          summary, p, related=(cheapest,), period=p0, noticed_at=after["_bounds"][1]))
    return out


# -- one target's throughput or failures ----------------------------------------------------------------

def _pair(t: str, ranked: dict, p1: int, p0: int) -> tuple[str, str] | None:
    """The pair a target's change is told in: it against the cheapest (or the runner-up against it)."""
    cheapest = ranked[p0][0]
    other = t if t != cheapest else ranked[p0][1]
    return (other, cheapest) if other in ranked[p1] and cheapest in ranked[p1] else None


def _throughput(preset, t, ranked, p1, p0, rows_by, figs, facts: Facts, cfg: AlertConfig) -> list[Change]:
    test = window_shift(facts.samples.get((p1, t, preset), []), facts.samples.get((p0, t, preset), []), cfg.throughput)
    pair = _pair(t, ranked, p1, p0)
    if test is None or not test["significant"] or pair is None:
        return []
    before, after = (_window(rows_by, figs, p, *pair, preset) for p in (p1, p0))
    cur = rows_by[(p0, t, preset)]["currency"]
    x1, x2 = rows_by[(p1, t, preset)]["tokens_per_s"], rows_by[(p0, t, preset)]["tokens_per_s"]
    p = _payload(preset, t, cur, before, after, facts, terms=("throughput",), tokens_per_s_before=x1,
                 tokens_per_s_after=x2, **{k: test[k] for k in ("shift", "shift_lo", "shift_hi", "p_value")})
    summary = (f"{preset}: {t} tokens/s {sig(x1)} ({span_text(*before['_bounds'])}) → {sig(x2)} "
               f"({span_text(*after['_bounds'])}), {pct(test['shift'])} (90% {pct(test['shift_lo'])} to "
               f"{pct(test['shift_hi'])}, p = {test['p_value']:.4f}); {pair[0]} against the cheapest, {pair[1]}: "
               f"{pct(before['gap'])} → {pct(after['gap'])}.{_moved_text(p)}")
    return [Change(THROUGHPUT_SHIFTED, f"throughput/{t}/{preset}", p["after"]["end"], t, after["_bounds"][1], summary,
                   p, related=tuple(x for x in pair if x != t), period=p0, noticed_at=after["_bounds"][1])]


def _failures(preset, t, ranked, p1, p0, rows_by, figs, facts: Facts, cfg: AlertConfig) -> list[Change]:
    from scipy.stats import fisher_exact

    r1, r2 = rows_by[(p1, t, preset)], rows_by[(p0, t, preset)]
    pair = _pair(t, ranked, p1, p0)
    if pair is None or not r1["attempts"] or not r2["attempts"] or r1["R"] is None or r2["R"] is None:
        return []
    k1, n1, k2, n2 = r1["failed_attempts"], r1["attempts"], r2["failed_attempts"], r2["attempts"]
    p_value = float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)
    if p_value >= cfg.failure_alpha or abs(math.log(r2["R"] / r1["R"])) < cfg.min_reliability_move:
        return []
    before, after = (_window(rows_by, figs, p, *pair, preset) for p in (p1, p0))
    cur = r2["currency"]
    p = _payload(preset, t, cur, before, after, facts, terms=("reliability",), failed_before=k1, attempts_before=n1,
                 failed_after=k2, attempts_after=n2, p_before=r1["p"], p_after=r2["p"], p_value=p_value)
    summary = (f"{preset}: {t} failed fine-tune attempts {k1}/{n1} ({span_text(*before['_bounds'])}) → {k2}/{n2} "
               f"({span_text(*after['_bounds'])}), Fisher p = {p_value:.4f}; R {sig(r1['R'])} → {sig(r2['R'])}; "
               f"{pair[0]} against the cheapest, {pair[1]}: {pct(before['gap'])} → {pct(after['gap'])}."
               f"{_moved_text(p)}")
    return [Change(FAILURE_RATE_SHIFTED, f"failure_rate/{t}/{preset}", p["after"]["end"], t, after["_bounds"][1],
                   summary, p, related=tuple(x for x in pair if x != t), period=p0, noticed_at=after["_bounds"][1])]


__all__ = ["Facts", "decide"]
