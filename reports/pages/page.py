"""Page building blocks shared by every report page: the Page, its HTML shell, and common tables.

    python -c "from reports.pages.page import slug; print(slug('<script>alert(1)</script>'))"

Every value is escaped unless it is Markup (reports.pages.html). Charts are Vega-Lite dicts placed in one JSON block per page
and drawn by the shared local assets/vega.js; each links its data (CSV), PNG and SVG. Tables are
sortable and filterable (assets/tables.js) and link their data as CSV. A page's `data` maps each
CSV name to its rows; reports.site writes them under data/ (names are unique across the site).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from reports.data import ReportData, Rows, Section
from reports.pages.html import Markup, Sorted, badge, empty, escape, link, pct, script_json, sig, table
from reports.theme import CSS

NAV = [("index.html", "Overview"), ("over-time.html", "Gap over time"), ("why.html", "Why it moved"),
       ("hardware.html", "Hardware efficiency"), ("reliability.html", "Reliability"), ("quality.html", "Data quality"),
       ("candidates.html", "Candidates")]
ASSET_JS = "assets/vega.js"
TABLES_JS = "assets/tables.js"
PICKER_JS = "assets/picker.js"
SCRIPTS = {TABLES_JS: "tables.js", PICKER_JS: "picker.js"}  # site path -> file in the reports package
_EMBED = """
(function(){var specs=JSON.parse(document.getElementById('chart-specs').textContent);
Object.keys(specs).forEach(function(id){var el=document.getElementById('c-'+id);
vegaEmbed(el,specs[id],{actions:false,renderer:'svg'}).then(function(){el.setAttribute('data-rendered','1');})
.catch(function(e){el.setAttribute('data-error',String(e));console.error('chart '+id+': '+e);});});})();
"""


def slug(target: str) -> str:
    """A file-safe, collision-free page name for any (free-text) target id."""
    base = re.sub(r"[^a-z0-9]+", "-", str(target).lower()).strip("-")[:40] or "target"
    return f"target-{base}-{hashlib.sha1(str(target).encode()).hexdigest()[:8]}.html"


def plain(value: Any) -> Any:
    """A cell's value for a CSV: what it sorts on (markup never reaches a CSV)."""
    return value.sort if isinstance(value, Sorted) else value


@dataclass
class Page:
    filename: str
    title: str
    lede: str
    parts: list[Markup] = field(default_factory=list)  # plain text added here is escaped
    charts: dict[str, dict] = field(default_factory=dict)
    data: dict[str, list[dict]] = field(default_factory=dict)  # CSV name -> rows (data/<name>.csv)
    scripts: list[str] = field(default_factory=list)  # more local scripts the page loads (keys of SCRIPTS)

    def h2(self, text: str, anchor: str | None = None) -> None:
        self.parts.append(Markup('<h2 id="{}">{}</h2>').format(anchor, text) if anchor else Markup("<h2>{}</h2>").format(text))

    def card(self, html: Markup) -> None:
        self.parts.append(Markup('<section class="card">{}</section>').format(html))

    def chart(self, chart_id: str, build: Callable[[], dict], caption: str = "", rows: list[dict] | None = None) -> Markup:
        """A chart, with links to its data (rows, as data/<chart_id>.csv), PNG and SVG."""
        self.charts[chart_id] = build()
        csv = Markup("")
        if rows is not None:
            self.data[chart_id] = rows
            csv = Markup('<a href="data/{}.csv" download>CSV</a> · ').format(chart_id)
        return Markup('<div class="chart" id="c-{id}" role="img" aria-label="{label}"></div><div class="exports">{cap}'
                      'Data: {csv}<a href="charts/{id}.png">PNG</a> · <a href="charts/{id}.svg">SVG</a></div>').format(
            id=chart_id, label=caption or chart_id, cap=f"{caption} " if caption else "", csv=csv)

    def table(self, name: str, columns: list[tuple[str, str]], rows: list[dict], *, numeric=(), row_class=None,
              csv: list[dict] | None = None) -> Markup:
        """A sortable, filterable table; its rows (or `csv`) as data/<name>.csv, linked above it."""
        self.data[name] = csv if csv is not None else [{k: plain(r.get(k)) for k, _ in columns} for r in rows]
        tid = f"t-{name}"
        tools = Markup('<div class="tools"><input class="filter" type="search" placeholder="Filter rows" '
                       'data-for="{tid}" aria-label="Filter {name}"><span data-count-for="{tid}"></span>'
                       '<a href="data/{name}.csv" download>CSV</a></div>').format(tid=tid, name=name)
        return tools + table(columns, rows, numeric=numeric, row_class=row_class, table_id=tid)


def render(page: Page, data: ReportData) -> str:
    here = page.filename
    nav = Markup("").join(Markup('<a href="{}" class="{}">{}</a>').format(h, "here" if h == here else "", t)
                          for h, t in NAV)
    script = Markup('<script src="{}"></script>')
    # script_json leaves no '<', '>' or '&' in the JSON, and _EMBED and CSS are this module's own text
    scripts = (script.format(ASSET_JS) + Markup('<script type="application/json" id="chart-specs">')
               + Markup(script_json(page.charts)) + Markup("</script><script>") + Markup(_EMBED) + Markup("</script>")
               if page.charts else Markup(""))
    scripts += script.format(TABLES_JS) if page.data else ""
    scripts += Markup("").join(script.format(src) for src in page.scripts)
    return str(Markup(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>{title} · costgap</title><style>{css}</style></head><body>'
        '<header><span class="brand">costgap</span><nav>{nav}</nav></header><main>'
        '<h1>{title}</h1><p class="lede">{lede}</p>{banner}{parts}</main>'
        "<footer>{basis}Generated {at} from the costgap warehouse. "
        "Bundles are the source of truth; every figure here is derived from them.</footer>"
        "{scripts}</body></html>").format(
        title=page.title, css=Markup(CSS), nav=nav, lede=page.lede, banner=_provenance_banner(data),
        parts=Markup("").join(page.parts), basis=_basis(data),
        at=data.generated_at.strftime("%Y-%m-%d %H:%M %Z"), scripts=scripts))


def _basis(data: ReportData) -> Markup:
    """What every cost on the page assumes, said once per page (the overview's picker changes it)."""
    d = data.reader.get("defaults") if data.reader else None
    if not d:
        return Markup("")
    return Markup("Costs in {} at {} prices, f = {:g} (the share of an attempt's work lost per failure); "
                  '<a href="index.html#your-workload">pick others</a>. ').format(
        d["currency"], d["billing"].replace("_", "-"), d["f"])


_SCOPES = {"run": "run(s)", "price_import": "price import(s)", "target": "target description(s)"}


def _provenance_banner(data: ReportData) -> Markup:
    if not data.provenance.rows:
        return Markup("")
    items = Markup("").join(Markup("<li><b>{}: {} {}</b> — {}</li>").format(
        r["label"].capitalize(), r["items"], _SCOPES.get(r["scope"], r["scope"]), r["note"]) for r in data.provenance.rows)
    return Markup('<div class="banner"><b>Not everything here was measured.</b><ul>{}</ul></div>').format(items)


def _section(sec: Section, html: Callable[[], Markup], what: str, none: str | None = None) -> Markup:
    """The section's HTML, or why it has none: `note` (not computable) or `none`/"no data yet: no <what>"."""
    if sec.note:
        return empty(sec.note)
    if not sec.rows:
        return empty(none or f"no data yet: no {what} in this warehouse")
    return html()


def row(items) -> Markup:
    """Charts (or any markup) side by side: <div class="row"><div>item</div>...</div>."""
    return Markup('<div class="row">{}</div>').format(Markup("").join(Markup("<div>{}</div>").format(x) for x in items))


def gpu_count(data: ReportData, target: Any) -> int | None:
    """A target's GPU count, from one place on every page: the targets table (report_targets.sql); 0 = CPU only."""
    return next((t.get("gpu_count") for t in data.targets if t["target"] == target), None)


def unstable_badge(r: dict) -> Markup:
    """The flag of a figure built on fine-tunes whose steady-state rule did not converge (issue 37.5), with
    their window spread (tasks.cost.table.window_spread); empty for a steady one."""
    if not r.get("unstable"):
        return Markup("")
    spread = f", window spread {r['window_spread']:.1%}" if r.get("window_spread") is not None else ""
    return Markup(' {}<span class="sub">{} of {} runs did not settle{}</span>').format(
        badge("unstable", "warn"), r["unstable_runs"], r["runs"], spread)


def _target_link(t: Any) -> Sorted:
    return link(slug(t), t)


def pct_cell(v: Any, digits: int = 1) -> Any:
    """A signed percentage cell that sorts on the value itself."""
    return None if v is None else Sorted(escape(pct(v, digits)), sort=v)


def interval_cell(lo: Any, hi: Any, as_pct: bool = False) -> Any:
    """'lo – hi' (percentages when as_pct), sorting on lo."""
    if lo is None or hi is None:
        return None
    text = f"{pct(lo)} to {pct(hi)}" if as_pct else f"{sig(lo)} – {sig(hi)}"
    return Sorted(escape(text), sort=lo)


def changes_table(p: "Page", name: str, rows: Rows, limit: int = 30) -> Markup:
    """Change-point findings (tasks.cost.changepoint.detect): size, confidence and what changed at that point."""
    shown = []
    for r in rows[-limit:][::-1]:
        changed = r.get("changed") or []
        what = "; ".join(f"{c.get('field')} {c.get('before')} → {c.get('after')}" for c in changed if isinstance(c, dict))
        at = r.get("at")
        shown.append({
            "at": datetime.fromisoformat(at) if isinstance(at, str) else at,
            "target": _target_link(r["target"]) if r.get("target") else None, "preset": r.get("preset"),
            "shift": pct_cell(r.get("shift")), "ci": interval_cell(r.get("shift_lo"), r.get("shift_hi"), as_pct=True),
            "p_value": r.get("p_value"), "confidence": r.get("confidence"), "changed": what or r.get("summary"),
            "before": r.get("runs_before"), "after": r.get("runs_after"),
        })
    more = Markup('<p class="empty">newest {} of {} shown</p>').format(limit, len(rows)) if len(rows) > limit else ""
    return p.table(name, [("at", "At"), ("target", "Target"), ("preset", "Preset"), ("shift", "Tokens/s shift"),
                          ("ci", "90% interval"), ("p_value", "p-value"), ("changed", "Environment change at that point"),
                          ("before", "Runs before"), ("after", "Runs after")],
                   shown, numeric=("shift", "ci", "p_value", "before", "after")) + more
