"""The report flow: read the warehouse once, publish the static site and the Prefect artifacts from it.

    prefect deployment run 'report/after-compare'
    python -c "from flows.report import build_site; print(build_site('costgap.duckdb', 'site'))"

One read-only snapshot feeds everything (reports.data.load): the site (reports.site.publish), the
answer per preset that `costgap run` prints (the site's answer rows, verdict included), the wide
headline table behind `costgap run --wide`, and the markdown artifact `costgap-headline`, so they all
show the same figures. The compare flow calls `report_and_artifacts` so that its artifacts attach
to the compare run, with a link artifact `costgap-report` to the site. A failure while building
(a bug in the cost model, say) fails the `build-report` task with its traceback in the log and
leaves the published site as it was; the landing that came before is kept.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb
from prefect import flow, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from runtime import settings
from tasks.estimate.candidates import catalog_entries
from tasks.cost.rules import today as rules_today
from reports.data import ReportConfig, ReportData, load
from reports.pages.answer import answer_rows
from reports.site import publish
from reports.text import HEADLINE_COLUMNS, findings_markdown, frame_markdown, headline_text
from warehouse.db import WarehouseNotReady, reading, writing


@contextmanager
def snapshot(warehouse: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only snapshot; a warehouse that predates a migration is migrated once first."""
    try:
        ctx = reading(warehouse)
        con = ctx.__enter__()
    except WarehouseNotReady:
        if not Path(warehouse).exists():
            raise
        with writing(warehouse):
            pass
        ctx = reading(warehouse)
        con = ctx.__enter__()
    try:
        yield con
    finally:
        ctx.__exit__(None, None, None)


def load_report(warehouse: str, config: ReportConfig | None = None) -> ReportData:
    """Everything the report shows, from one snapshot of the warehouse (closed before rendering)."""
    from reports.pages import candidates as pages_candidates

    cfg = config or ReportConfig()
    with snapshot(str(warehouse)) as con:
        data = load(con, cfg)
        # the Candidates page's estimates (issue 25): read here, beside the measured figures, never into them
        extra = catalog_entries(targets if (targets := settings.targets_path()).exists() else None)
        data.candidates = pages_candidates.load(con, data.today or rules_today(), cfg.currency, cfg.billing, extra)
        return data


def build_site(warehouse: str, site: str, *, baseline: str | None = None, images: bool = True,
               config: ReportConfig | None = None) -> str:
    """Read the warehouse, render every page and publish atomically; returns index.html's path/URL."""
    return publish(load_report(warehouse, config or ReportConfig(baseline=baseline)), site, images=images)


@task(name="build-report", cache_policy=NO_CACHE)
def build_report(warehouse: str, site: str) -> dict:
    """The site and the headline (text and markdown), from the same ReportData."""
    data = load_report(warehouse)
    index = publish(data, site)
    return {"index": index, "headline": headline_text(data.cost.rows), "answer": answer_rows(data),
            "currency": data.currency,
            "cost": [{k: r.get(k) for k in (*HEADLINE_COLUMNS, "no_cost_reason")}
                     for r in [*data.cost.rows, *data.cost.extra.get("unmeasured", [])]],
            "headline_md": frame_markdown(data.cost.rows, HEADLINE_COLUMNS),
            "changes": len(data.changes.rows), "changes_md": findings_markdown(data.changes.rows)}


def _link(index: str) -> str:
    return index if "://" in index else Path(index).resolve().as_uri()


def report_and_artifacts(warehouse: str, site: str, outcomes_md: str = "", message: str = "") -> dict:
    """Rebuild the site, then attach the headline and a link to it to the current flow run.
    Returns index, headline text, number of change points, and `errors` (empty when all worked)."""
    errors: list[str] = []
    state = build_report(warehouse, site, return_state=True)
    if state.is_completed():
        out = state.result()
    else:  # the traceback is in the task's log; the landing before it is kept, the old site stays
        errors.append(f"report failed (the published site was left as it was): {state.message}")
        out = {"index": None, "headline": "(report failed: see the log)", "headline_md": "_report failed_",
               "answer": [], "cost": [], "currency": None, "changes": 0, "changes_md": "_not computed_"}
    md = "\n\n".join(p for p in (
        f"# costgap\n\n{message}" if message else "# costgap",
        "## Effective cost per million tokens\n\n" + out["headline_md"],
        "## Change points\n\n" + out["changes_md"],
        "## Targets in this run\n\n" + outcomes_md if outcomes_md else "",
        "## Errors\n\n" + "\n".join(f"- {e}" for e in errors) if errors else "",
    ) if p)
    create_markdown_artifact(key="costgap-headline", markdown=md, description="costgap headline table")
    if out["index"]:
        create_link_artifact(key="costgap-report", link=_link(out["index"]), link_text="costgap report",
                             description="the static costgap site")
    return {"index": out["index"], "headline": out["headline"], "answer": out["answer"], "cost": out["cost"],
            "currency": out["currency"], "changes": out["changes"], "errors": errors}


@flow(name="report", log_prints=True)
def report(warehouse: str | None = None, site: str | None = None) -> str | None:
    """Rebuild the site from the warehouse; returns index.html's path or URL."""
    out = report_and_artifacts(settings.warehouse_path(warehouse), settings.site_url(site))
    print(out["headline"])
    if out["errors"]:
        raise RuntimeError("; ".join(out["errors"]))
    return out["index"]
