"""HTML building blocks. Every value that reaches a page goes through `esc` or `cell`: target names,
GPU names and price sources are free text, so `<script>alert(1)</script>` must arrive as text.

    python -c "from reports.pages.html import esc, sig; print(esc('<script>alert(1)</script>'), sig(0.0152384))"

Numbers are shown to SIG significant figures (3-4: enough to compare, not false precision); the
full-precision value stays in the cell's data-v attribute (what the table sorts on) and in the
table's CSV. A missing value is always MISSING, on every page.
"""

from __future__ import annotations

import html
import json
import math
from datetime import date, datetime
from typing import Any, Iterable, Sequence

MISSING = "—"  # the one rendering of a missing value
SIG = 4  # significant figures shown


def esc(value: Any) -> str:
    """Escape any value for HTML text or a double-quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def script_json(obj: Any) -> str:
    """JSON safe to place inside <script type="application/json">: no '<', '>' or '&' survives."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)
    return (
        text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def sig(value: float, digits: int = SIG) -> str:
    """A number to `digits` significant figures, with thousands separators and no exponent in 1e-4..1e15."""
    if value == 0:
        return "0"
    mag = math.floor(math.log10(abs(value)))
    if mag < -4:
        return f"{value:.{digits - 1}e}"
    decimals = max(0, digits - 1 - mag)
    return f"{round(value, decimals):,.{decimals}f}"


def pct(value: float | None, digits: int = 1) -> str:
    """A signed percentage ('+10.5%'), or MISSING."""
    return MISSING if missing(value) else f"{value * 100:+.{digits}f}%"


ARROW = "→"  # the one arrow between a before and an after, on every page


def p_text(failed: int, attempts: int) -> str:
    """The failed-attempt rate as shown everywhere: '8.3% (1/12)' (assets/picker.js mirrors it)."""
    if not attempts:
        return "none recorded"
    return f"{failed / attempts * 100:.1f}% ({failed}/{attempts})"


def interval_text(lo: float | None, hi: float | None, as_pct: bool = False) -> str:
    """The one format of a 90% interval: '90% 0.0150 to 0.0178' or '90% +5.4% to +47.2%'."""
    if missing(lo) or missing(hi):
        return MISSING
    return f"90% {pct(lo)} to {pct(hi)}" if as_pct else f"90% {sig(lo)} to {sig(hi)}"


def fmt(value: Any, digits: int = SIG) -> str:
    """A readable, escaped rendering of one cell value (MISSING for a missing one)."""
    if missing(value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return sig(value, digits)
    if isinstance(value, datetime):
        return f'<span class="nw">{esc(value.strftime("%Y-%m-%d %H:%M"))}</span>'
    if isinstance(value, date):
        return esc(value.isoformat())
    if isinstance(value, (list, tuple)):
        return esc(", ".join(str(v) for v in value))
    return esc(value)


def sort_key(value: Any) -> str:
    """What a cell sorts on (its data-v): full-precision numbers, ISO times, text; '' for missing."""
    if missing(value):
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return repr(float(value))
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return str(value)


class Raw(str):
    """Markup built by this package (already escaped); `cell` passes it through. `sort` is what it sorts on."""

    sort: Any = None

    def __new__(cls, markup: str, sort: Any = None) -> "Raw":
        obj = super().__new__(cls, markup)
        obj.sort = sort
        return obj


def cell(value: Any, digits: int = SIG) -> str:
    return str(value) if isinstance(value, Raw) else fmt(value, digits)


def badge(text: str, kind: str = "") -> Raw:
    return Raw(f'<span class="badge {esc(kind)}">{esc(text)}</span>', sort=text)


def link(href: str, text: Any) -> Raw:
    return Raw(f'<a href="{esc(href)}">{esc(text)}</a>', sort=text)


def table(
    columns: Sequence[tuple[str, str]],
    rows: Iterable[dict[str, Any]],
    *,
    numeric: Iterable[str] = (),
    row_class: Any = None,
    table_id: str | None = None,
) -> str:
    """columns: (key, heading). Numeric columns are right-aligned. row_class(row) -> css class or ''.
    With a table_id the table is sortable (click a heading) and filterable (reports/pages/tables.js)."""
    nums = set(numeric)
    head = "".join(f'<th class="{"num" if k in nums else ""}" scope="col">{esc(h)}</th>' for k, h in columns)
    body = []
    for row in rows:
        cls = row_class(row) if row_class else ""
        tds = []
        for k, _ in columns:
            v = row.get(k)
            key = sort_key(v.sort if isinstance(v, Raw) else v)
            tds.append(f'<td class="{"num" if k in nums else ""}" data-v="{esc(key)}">{cell(v)}</td>')
        body.append(f'<tr class="{esc(cls)}">{"".join(tds)}</tr>')
    attrs = f' id="{esc(table_id)}" class="data"' if table_id else ""
    return f"<div class=\"scroll\"><table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"


def empty(message: str) -> str:
    """The explicit 'no data yet' state: a section renders this instead of a table or chart."""
    return f'<p class="empty">{esc(message)}</p>'
