"""How the command line writes a figure: the one formatting layer every command's text output goes through.

    costgap targets --warehouse .costgap/demo.duckdb     # 0.01405 USD/1M tokens, 3.23 USD/h, 63,842 tokens/s

Rules (STYLE.md 15): thousands separators; four significant digits, never e-notation (ENOTATION finds a
slip in a test); the currency on every price and cost; the unit on every figure; percentages signed; the
gap's terms in log points (100 x ln, as the alerts and the site's "why it moved" say them); windows to the
minute, in UTC. `--json` output does not come through here: scripts get the raw numbers.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from reports.text import SIG, figure

# what no text output may contain: 1.6e+05, 1e9, 2.751E-3 as a number of its own (not inside a hash like 491e0937b)
ENOTATION = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])")


def num(x: float | int | None, sig: int = SIG) -> str:
    """A figure for a person: 159,458 / 824.8 / 2.751 / 0.004792 / 0; '-' for a missing one (reports.text.figure,
    which the wide headline table of `costgap run --wide` uses too)."""
    return figure(x, sig)


def fixed(x: float | None, decimals: int) -> str:
    """A figure with a fixed number of decimals (R 1.000, p 0.250), thousands separated."""
    return "-" if x is None else f"{x:,.{decimals}f}"


def count(n: float | int | None) -> str:
    """A whole number with thousands separators: 13,777,123,456."""
    return "-" if n is None else f"{n:,.0f}"


def money(x: float | None, currency: str) -> str:
    """An amount: 4.792 USD, 1,234 USD."""
    return f"{num(x)} {currency}"


def per_hour(x: float | None, currency: str) -> str:
    """A price per instance-hour: 2.751 USD/h."""
    return f"{num(x)} {currency}/h"


def per_mtok(x: float | None, currency: str) -> str:
    """A cost per 1M tokens: 0.004792 USD/1M tokens."""
    return f"{num(x)} {currency}/1M tokens"


def tokens_per_s(x: float | None) -> str:
    """A throughput: 159,458 tokens/s."""
    return f"{num(x)} tokens/s"


def pct(x: float | None, decimals: int = 1) -> str:
    """A signed percentage: +5.5%, -14.0%."""
    return "-" if x is None else f"{x * 100:+,.{decimals}f}%"


def interval(lo: float | None, hi: float | None, show=num) -> str:
    """'(90% 0.004751..0.005364)', the figures written by `show`."""
    return f"(90% {show(lo)}..{show(hi)})"


def log_points(x: float) -> str:
    """A log term in log points (100 x ln): about the % it moves the cost ratio. +8.9, -24.0."""
    return f"{100 * x:+,.1f}"


def when(t: datetime | str | None) -> str:
    """A moment to the minute, in UTC: 2026-12-06 07:27."""
    if t is None:
        return "-"
    if isinstance(t, str):
        t = datetime.fromisoformat(t)
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc)
    return f"{t:%Y-%m-%d %H:%M}"


def window(start: datetime | str, end: datetime | str) -> str:
    """A window to the minute, as `--between`/`--and` take it back: 2026-11-06 07:27..2026-12-06 07:27 UTC."""
    return f"{when(start)}..{when(end)} UTC"


def table(rows: list[list[str]], head: list[str] | None = None, indent: str = "  ",
          right: tuple[int, ...] = ()) -> list[str]:
    """Fixed-width columns, figures (the `right` columns) right-aligned; returns the lines."""
    body = ([head] if head else []) + rows
    if not body:
        return []
    widths = [max(len(r[i]) for r in body) for i in range(len(body[0]))]

    def line(cells: list[str]) -> str:
        return indent + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                                  for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(r) for r in body]
