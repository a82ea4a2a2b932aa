"""HTML building blocks. Every value that reaches a page goes through `esc` or `cell`: target names,
GPU names and price sources are free text, so `<script>alert(1)</script>` must arrive as text.

    python -c "from reports.html import esc; print(esc('<script>alert(1)</script>'))"
"""

from __future__ import annotations

import html
import json
import math
from datetime import date, datetime
from typing import Any, Iterable, Sequence


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


def fmt(value: Any, digits: int = 3) -> str:
    """A readable, escaped rendering of one cell value ('—' for missing)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10 ** -(digits - 1):
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return f'<span class="nw">{esc(value.strftime("%Y-%m-%d %H:%M"))}</span>'
    if isinstance(value, date):
        return esc(value.isoformat())
    if isinstance(value, (list, tuple)):
        return esc(", ".join(str(v) for v in value))
    return esc(value)


class Raw(str):
    """Markup built by this package (already escaped); `cell` passes it through."""


def cell(value: Any, digits: int = 3) -> str:
    return str(value) if isinstance(value, Raw) else fmt(value, digits)


def badge(text: str, kind: str = "") -> Raw:
    return Raw(f'<span class="badge {esc(kind)}">{esc(text)}</span>')


def link(href: str, text: Any) -> Raw:
    return Raw(f'<a href="{esc(href)}">{esc(text)}</a>')


def table(
    columns: Sequence[tuple[str, str]],
    rows: Iterable[dict[str, Any]],
    *,
    numeric: Iterable[str] = (),
    row_class: Any = None,
    scroll: bool = False,
) -> str:
    """columns: (key, heading). Numeric columns are right-aligned. row_class(row) -> css class or ''."""
    nums = set(numeric)
    head = "".join(f'<th class="{"num" if k in nums else ""}">{esc(h)}</th>' for k, h in columns)
    body = []
    for row in rows:
        cls = row_class(row) if row_class else ""
        tds = "".join(
            f'<td class="{"num" if k in nums else ""}">{cell(row.get(k))}</td>' for k, _ in columns
        )
        body.append(f'<tr class="{esc(cls)}">{tds}</tr>')
    inner = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="scroll">{inner}</div>' if scroll else inner


def empty(message: str) -> str:
    """The explicit 'no data yet' state: a section renders this instead of failing."""
    return f'<p class="empty">{esc(message)}</p>'
