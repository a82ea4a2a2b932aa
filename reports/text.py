"""Small tables as text: the headline cost table for the terminal and for a Prefect artifact.

    python -c "import polars as pl; from reports.text import frame_text; print(frame_text(pl.DataFrame({'a': [1.5]})))"

Numbers are written by figure(), the one rule the command line uses too (cli/format.py): significant
digits, thousands separators, never e-notation.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

SIG = 4  # significant digits of a figure below 1,000 (the cost model's intervals are wider than 0.1%)
# The headline columns, in order (tasks.cost.table's names; missing ones are left out): the window's
# cost with its interval and price, today's price and the cost at it, then X, p = k/n and R, and whether the
# runs' steady-state rule did not converge, with their window spread (issue 37.5).
HEADLINE_COLUMNS = ("target", "preset", "cost_per_mtok", "cost_lo", "cost_hi", "currency", "price_per_hour",
                    "price_now_per_hour", "cost_now_per_mtok", "price_stale", "tokens_per_s", "p",
                    "failed_attempts", "attempts", "R", "runs", "unstable", "window_spread")


def figure(x: float | int | None, sig: int = SIG) -> str:
    """A number for a person, never in e-notation: 159,458 / 824.8 / 2.751 / 0.004792 / 0; '-' for none.
    `sig` significant digits below 10**(sig-1), whole numbers with thousands separators from there."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (sig - 1):
        return f"{x:,.0f}"
    decimals = sig - 1 - math.floor(math.log10(abs(x)))
    text = f"{x:.{decimals}f}"
    if abs(float(text)) >= 10 ** (sig - 1):  # 999.96 rounds up to 1000.0
        return f"{x:,.0f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _cell(v: Any) -> str:
    if isinstance(v, float) or v is None:
        return figure(v)
    return str(v)


def _rows(df, columns: Iterable[str] | None) -> tuple[list[str], list[list[str]]]:
    rows = df.to_dicts() if hasattr(df, "to_dicts") else list(df)
    have = list(df.columns) if hasattr(df, "columns") else (list(rows[0]) if rows else [])
    cols = [c for c in (columns or have) if c in have]
    return cols, [[_cell(r.get(c)) for c in cols] for r in rows]


def frame_text(df, columns: Iterable[str] | None = None) -> str:
    """A fixed-width text table (what `costgap run` prints)."""
    cols, rows = _rows(df, columns)
    if not rows:
        return "(no rows)"
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(x.ljust(w) for x, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(cols), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def frame_markdown(df, columns: Iterable[str] | None = None) -> str:
    """A markdown table (Prefect markdown artifacts render it)."""
    cols, rows = _rows(df, columns)
    if not rows:
        return "_no rows_"
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(esc(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def findings_markdown(findings: list[dict]) -> str:
    """Change-point findings (tasks.cost.changepoint.detect) as a bullet list of their summaries."""
    if not findings:
        return "_no significant change points_"
    return "\n".join(f"- **{f.get('target')}** / {f.get('preset')}: {f.get('summary')}" for f in findings)


def unpriced_note(df) -> str:
    """A hint naming the targets that have no price yet (their cost per token cannot be computed)."""
    rows = df.to_dicts() if hasattr(df, "to_dicts") else list(df)
    missing = sorted({str(r.get("target")) for r in rows if r.get("price_per_hour") is None})
    if not missing:
        return ""
    return (f"no price for: {', '.join(missing)} - cost per 1M tokens needs one; add it with "
            "`costgap prices import FILE` (see deploy/prices/ for the format)")


def headline_text(df) -> str:
    """The terminal headline: the cost table, then a hint for targets without a price."""
    note = unpriced_note(df)
    return frame_text(df, HEADLINE_COLUMNS) + (f"\n{note}" if note else "")
