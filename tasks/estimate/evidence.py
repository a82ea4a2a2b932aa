"""What moved a gap between two windows, and only what moved: the evidence told beside every change.

    .venv/bin/pytest -q tests/test_alerts_kinds.py

The gap's log ratio is exactly price + throughput + reliability (tasks.cost.model.decompose); between
two windows each term moves by its own amount. A term is evidence only when it moved by more than
MIN_TERM_MOVE (one log point, ~1% of the cost ratio), and then only its facts that changed:
- price: the price periods that began between the windows' starts and the later end (the price book),
  else each side's blended price per hour before -> after;
- throughput: each side's tokens/s before -> after, the environment fields whose values differ between
  the two windows' runs (with how many runs had each value), and the change-point test's step dates;
- reliability: each side's failed fine-tune attempts k/n before -> after, and R.
A side is named when its own factor moved by more than half a log point (else both sides are, since
the term moved). Plain functions over figures the cost model computed (no SQL except `env_shift`).
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime

import duckdb

from tasks.cost.changepoint import ENV_FIELDS
from warehouse import sql

TERMS = ("price", "throughput", "reliability")  # the exact decomposition's terms, in its order
MIN_TERM_MOVE = 0.01  # a term that moved by less than one log point is not evidence
SIDE_MOVE = 0.005  # a side whose own factor moved by less than half a log point is not named


def sig(x: float | None, digits: int = 4) -> str:
    """4 significant figures, no exponent for the sizes costgap shows ('n/a' for none)."""
    if x is None:
        return "n/a"
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    exp = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - exp)
    return f"{x:,.{decimals}f}" if abs(x) >= 1000 else f"{x:.{decimals}f}"


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1%}"


def day(t: datetime) -> str:
    return f"{t:%b} {t.day}"


def span_text(start: datetime, end: datetime) -> str:
    """'Oct 1–Oct 31' (a window is (start, end])."""
    return f"{day(start)}–{day(end)}"


def moved(before_terms: dict, after_terms: dict) -> dict:
    """Each term's change, after minus before, in log units (they add up to the change of ln(1 + gap))."""
    return {t: after_terms[t] - before_terms[t] for t in TERMS}


def main_term(delta: dict) -> str:
    """The term that moved the gap most in the direction it moved (the largest if all cancel)."""
    net = sum(delta.values())
    same = {k: v for k, v in delta.items() if v != 0 and (v > 0) == (net > 0)} or delta
    return max(same, key=lambda k: abs(same[k]))


def _factor(side: dict, term: str) -> float | None:
    key = {"price": "price_per_hour", "throughput": "tokens_per_s", "reliability": "R"}[term]
    return side.get(key)


def _sides(term: str, names: dict, before: dict, after: dict) -> list[str]:
    out = []
    for s in ("a", "b"):
        x1, x2 = _factor(before[s], term), _factor(after[s], term)
        if x1 and x2 and abs(math.log(x2 / x1)) > SIDE_MOVE:
            out.append(s)
    return out or ["a", "b"]


def evidence(names: dict, before: dict, after: dict, delta: dict, window: tuple[datetime, datetime], *,
             price_periods: list[dict] = (), env: dict | None = None, steps: list[dict] = (),
             terms: tuple[str, ...] = TERMS) -> list[dict]:
    """[{term, log_points, lines}] for each term of `terms` that moved by more than MIN_TERM_MOVE.

    names: {"a": target, "b": target}; before/after: {"a": figures, "b": figures} (rows of
    tasks.cost.table.costs: price_per_hour, tokens_per_s, failed_attempts, attempts, R); delta: moved();
    window: (start of the earlier window, end of the later); price_periods: [{target, at, old, new,
    currency}] (the price book); env: {target: env_shift(...) rows, or {text} for a change already worded};
    steps: change-point findings."""
    out = []
    for term in terms:
        if abs(delta.get(term, 0.0)) <= MIN_TERM_MOVE:
            continue
        lines: list[str] = []
        sides = _sides(term, names, before, after)
        if term == "price":
            lines = [f"{p['target']} price {sig(p['old'])} → {sig(p['new'])} {p['currency']}/h from {day(p['at'])}"
                     for p in price_periods if p["target"] in names.values() and window[0] < p["at"] <= window[1]]
            if not lines:
                lines = [f"{names[s]} blended price {sig(before[s]['price_per_hour'])} → "
                         f"{sig(after[s]['price_per_hour'])} per hour" for s in sides]
        elif term == "throughput":
            for s in sides:
                t = names[s]
                lines.append(f"{t} {sig(before[s]['tokens_per_s'])} → {sig(after[s]['tokens_per_s'])} tokens/s")
                lines += [f"{t} {e['text']}" if "text" in e else f"{t} {e['field']} {e['before']} → {e['after']}"
                          for e in (env or {}).get(t, [])]
                lines += [f"{t} stepped {pct(f['shift'])} on {day(datetime.fromisoformat(f['at']))} "
                          f"(change-point test p = {f['p_value']:.4f})"
                          for f in steps if f["target"] == t and window[0] < datetime.fromisoformat(f["at"]) <= window[1]]
        else:
            lines = [f"{names[s]} failed attempts {before[s]['failed_attempts']}/{before[s]['attempts']} → "
                     f"{after[s]['failed_attempts']}/{after[s]['attempts']}, R {sig(before[s]['R'])} → "
                     f"{sig(after[s]['R'])}" for s in sides]
        out.append({"term": term, "log_points": 100.0 * delta[term], "lines": lines})
    return out


def evidence_text(items: list[dict]) -> str:
    """'price +16.3 log points (h200-sxm-1x price 3.800 → 3.230 USD/h from Oct 30); reliability +11.1 log
    points (...)'."""
    return "; ".join(f"{i['term']} {i['log_points']:+.1f} log points ({'; '.join(i['lines'])})" for i in items)


def _counts(values: list) -> str:
    c = Counter(v for v in values if v is not None)
    return ", ".join(f"{v} ×{n}" for v, n in sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def env_shift(con: duckdb.DuckDBPyConnection, target: str, preset: str | None, window1: tuple, window2: tuple) -> list[dict]:
    """Environment fields whose recorded values differ between two windows' runs of one target (and preset),
    each side as 'value ×runs, ...': [{field, before, after}]. A field a window did not record is no change."""
    got = sql.frame(con, "cost_env_history", {"since": min(window1[0], window2[0]), "until": max(window1[1], window2[1]),
                                              "targets": [target], "preset": preset})

    rows = got.to_dicts() if got.height else []

    def values(w) -> dict[str, list]:
        inside = [r for r in rows if w[0] < r["started_at"] <= w[1]]
        return {f: [r[f] for r in inside] for f in ENV_FIELDS}

    v1, v2 = values(window1), values(window2)
    out = []
    for f in ENV_FIELDS:
        s1, s2 = {v for v in v1[f] if v is not None}, {v for v in v2[f] if v is not None}
        if s1 and s2 and s1 != s2:
            out.append({"field": f, "before": _counts(v1[f]), "after": _counts(v2[f])})
    return out
