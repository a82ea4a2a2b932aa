"""HTML building blocks, on MarkupSafe: markup is a `Markup`, and everything else is text, escaped
wherever it meets markup (`Markup("<b>{}</b>").format(x)`, `Markup + x`, `Markup("").join(xs)`). Target
names, GPU names and price sources are free text, so `<script>alert(1)</script>` arrives as text unless
someone wrote `Markup(...)` around it on purpose.

    python -c "from reports.pages.html import escape, sig; print(escape('<script>alert(1)</script>'), sig(0.0152384))"

Numbers are shown to SIG significant figures (3-4: enough to compare, not false precision); the
full-precision value stays in the cell's data-v attribute (what the table sorts on) and in the
table's CSV. A missing value is always MISSING, on every page.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Iterable, Sequence

from markupsafe import Markup, escape

MISSING = "—"  # the one rendering of a missing value
SIG = 4  # significant figures shown
__all__ = ["Markup", "escape"]  # re-exported: the pages build their markup from these two


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


def fmt(value: Any, digits: int = SIG) -> Markup:
    """A readable, escaped rendering of one cell value (MISSING for a missing one)."""
    if missing(value):
        return Markup(MISSING)
    if isinstance(value, bool):
        return Markup("yes" if value else "no")
    if isinstance(value, int):
        return Markup(f"{value:,}")
    if isinstance(value, float):
        return Markup(sig(value, digits))
    if isinstance(value, datetime):
        return Markup('<span class="nw">{}</span>').format(value.strftime("%Y-%m-%d %H:%M"))
    if isinstance(value, date):
        return escape(value.isoformat())
    if isinstance(value, (list, tuple)):
        return escape(", ".join(str(v) for v in value))
    return escape(value)


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


@dataclass(frozen=True)
class Sorted:
    """A table cell shown as `html` and sorted (and written to a CSV) as `sort`. It is markup wherever it is
    placed (MarkupSafe's __html__ protocol), so `badge(...)` and `link(...)` drop into any Markup."""

    html: Markup
    sort: Any = None

    def __html__(self) -> Markup:
        return self.html

    def __str__(self) -> str:
        return str(self.html)


def cell(value: Any, digits: int = SIG) -> Markup:
    """One cell's HTML: markup as it is (Markup, Sorted), any other value formatted and escaped."""
    return Markup(value.__html__()) if hasattr(value, "__html__") else fmt(value, digits)


def badge(text: str, kind: str = "") -> Sorted:
    return Sorted(Markup('<span class="badge {}">{}</span>').format(kind, text), sort=text)


def link(href: str, text: Any) -> Sorted:
    return Sorted(Markup('<a href="{}">{}</a>').format(href, text), sort=text)


def table(
    columns: Sequence[tuple[str, str]],
    rows: Iterable[dict[str, Any]],
    *,
    numeric: Iterable[str] = (),
    row_class: Any = None,
    table_id: str | None = None,
) -> Markup:
    """columns: (key, heading). Numeric columns are right-aligned. row_class(row) -> css class or ''.
    With a table_id the table is sortable (click a heading) and filterable (reports/pages/tables.js)."""
    nums = set(numeric)

    def num(k: str) -> str:
        return "num" if k in nums else ""

    head = Markup("").join(Markup('<th class="{}" scope="col">{}</th>').format(num(k), h) for k, h in columns)
    body = []
    for row in rows:
        tds = []
        for k, _ in columns:
            v = row.get(k)
            key = sort_key(v.sort if isinstance(v, Sorted) else v)
            tds.append(Markup('<td class="{}" data-v="{}">{}</td>').format(num(k), key, cell(v)))
        body.append(Markup('<tr class="{}">{}</tr>').format(row_class(row) if row_class else "", Markup("").join(tds)))
    attrs = Markup(' id="{}" class="data"').format(table_id) if table_id else ""
    return Markup('<div class="scroll"><table{}><thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>').format(
        attrs, head, Markup("").join(body))


def empty(message: str) -> Markup:
    """The explicit 'no data yet' state: a section renders this instead of a table or chart."""
    return Markup('<p class="empty">{}</p>').format(message)
