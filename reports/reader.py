"""The reader's own question: the cost model's inputs per (currency, billing mode) for the overview's
picker, which applies tasks.cost.model's formulas in the page (assets/picker.js), without a server.

    costgap targets --currency EUR --billing monthly --f 0.25 --json     # what the picker shows for those choices
    costgap tiers --currency EUR --billing monthly --f 0.25 --tokens 2e9 --json   # its total cost and hours

For every offered (currency, billing) the inputs come from tasks.cost.table.costs, the function
`costgap targets` calls, over the same window: per (target, preset) the blended price P, the median
tokens/s X and the failed/counted fine-tune attempts k/n. The page computes p = k/n, R = 1 + f p/(1 - p),
C = P/(3600 X) 1e6 R, the cost of N tokens C (N/1e6) and the hours N/(3600 X) R in that order, so
its doubles are the CLI's bit for bit; both round once, with reports.pages.html.sig (picker.js mirrors it).
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from tasks.cost.inputs import Span
from tasks.cost.model import F_LOST, CostOptions
from tasks.cost.table import cheapest_first, costs
from tasks.pricing.base import BILLING_MODES, CURRENCIES
from tasks.pricing.fx import FxError

# f choices the picker offers: no work lost (checkpoint every step) ... the whole attempt lost
F_CHOICES = (0.0, 0.1, 0.25, F_LOST, 1.0)
DEFAULT_TOKENS = 1e9  # a billion tokens: a small fine-tune; the reader types their own
MAX_CURRENCIES = 4  # each offered currency is one more pass over the window: bounded at any FX history
PREFERRED = ("USD", "EUR", "GBP", "CNY", "JPY", "INR")  # offered first when the warehouse can convert them
DRAWS = 100  # the picker shows point figures only; the fewest draws CostOptions allows keeps this cheap


def offered_currencies(con: duckdb.DuckDBPyConnection, report_currency: str) -> list[str]:
    """The report's currency, then those the price book quotes in or has FX rates for (preferred first)."""
    have = {c for (c,) in con.execute("select currency from fx_rates union select currency from prices").fetchall()}
    have = (have | {"USD"}) & CURRENCIES
    rest = sorted(have - {report_currency}, key=lambda c: (PREFERRED.index(c) if c in PREFERRED else 99, c))
    return [report_currency, *rest][:MAX_CURRENCIES]


def offered_billings(con: duckdb.DuckDBPyConnection, report_billing: str) -> list[str]:
    """The report's billing mode, then every other mode the price book has a price for."""
    have = {b for (b,) in con.execute("select distinct billing_mode from prices").fetchall()}
    return [report_billing, *[b for b in BILLING_MODES if b in have and b != report_billing]]


def reader_inputs(con: duckdb.DuckDBPyConnection, span: Span, today: datetime, currency: str = "USD",
                  billing: str = "on_demand", have: dict | None = None) -> dict:
    """{currencies, billings, f_choices, presets, inputs: {"CUR|billing": [[target, preset, P, X, k, n, runs], ...]}}.

    A currency the warehouse cannot convert every price of the window into (a missing FX rate) is not
    offered; `skipped` says which and why. `have`: {(currency, billing): rows of tasks.cost.table.costs}
    already computed over this span (the report's own), reused rather than computed again."""
    billings = offered_billings(con, billing)
    inputs: dict[str, list] = {}
    currencies, skipped = [], []
    for cur in offered_currencies(con, currency):
        try:
            got = {b: (have or {}).get((cur, b)) or costs(con, span, CostOptions(billing=b, currency=cur, draws=DRAWS),
                                                           today=today)[0] for b in billings}
        except FxError as e:
            skipped.append(f"{cur}: {e}")
            continue
        currencies.append(cur)
        for b, rows in got.items():
            inputs[f"{cur}|{b}"] = [[r["target"], r["preset"], r["price_per_hour"], r["tokens_per_s"],
                                     r["failed_attempts"], r["attempts"], r["runs"]] for r in cheapest_first(rows)]
    presets = sorted({row[1] for rows in inputs.values() for row in rows})
    start, end = span.bounds(0)
    return {"currencies": currencies, "billings": billings, "f_choices": list(F_CHOICES), "presets": presets,
            "defaults": {"currency": currency, "billing": billing, "f": F_LOST, "tokens": DEFAULT_TOKENS},
            "window": [start.isoformat(), end.isoformat()], "inputs": inputs, "skipped": skipped}


def input_rows(reader: dict) -> list[dict]:
    """The exported inputs as CSV rows (data/reader-inputs.csv): one per (currency, billing, target, preset)."""
    out = []
    for key, rows in reader.get("inputs", {}).items():
        cur, billing = key.split("|")
        out += [{"currency": cur, "billing": billing, "target": t, "preset": s, "price_per_hour": p,
                 "tokens_per_s": x, "failed_attempts": k, "attempts": n, "runs": runs}
                for t, s, p, x, k, n, runs in rows]
    return out
