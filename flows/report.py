"""The report flow: rebuild the static site from the warehouse and publish Prefect artifacts.

    prefect deployment run 'report/after-compare'
    python -c "from flows.report import report; print(report('costgap.duckdb', 'site'))"

The site is reports.site.build_site (helper E's); the headline table is tasks.cost.table.cost_table and
the findings tasks.cost.changepoint.detect (helper D's). The compare flow calls `report_and_artifacts`
so that its artifacts attach to the compare run: a markdown artifact `costgap-headline` (cost
table, change points, per-target outcome) and a link artifact `costgap-report` to the site.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows import settings
from reports.text import HEADLINE_COLUMNS, findings_markdown, frame_markdown, headline_text


@task(name="build-site", cache_policy=NO_CACHE)
def build_site(warehouse: str, site: str) -> str:
    from reports.site import build_site as build

    return build(warehouse, site)


@task(name="headline", cache_policy=NO_CACHE)
def headline(warehouse: str) -> dict:
    """The cost table and the significant change points, as text and markdown."""
    from tasks.cost.changepoint import detect
    from tasks.cost.table import cost_table
    from warehouse.db import reading

    with reading(warehouse) as con:
        df = cost_table(con)
        found = detect(con)
    return {"headline": headline_text(df), "headline_md": frame_markdown(df, HEADLINE_COLUMNS),
            "changes": len(found), "changes_md": findings_markdown(found)}


def _link(index: str) -> str:
    return index if "://" in index else Path(index).resolve().as_uri()


def _value(state, default, errors: list[str], what: str):
    """A task's result, or `default` with the error noted: a broken report must not lose the landing."""
    if state.is_completed():
        return state.result()
    errors.append(f"{what} failed: {state.message}")
    return default


def report_and_artifacts(warehouse: str, site: str, outcomes_md: str = "", message: str = "") -> dict:
    """Rebuild the site, then attach the headline and a link to it to the current flow run.
    Returns index, headline text, number of change points, and `errors` (empty when all worked)."""
    errors: list[str] = []
    index = _value(build_site(warehouse, site, return_state=True), None, errors, "report site")
    head = _value(headline(warehouse, return_state=True),
                  {"headline": "(headline table failed)", "headline_md": "_headline table failed_",
                   "changes_md": "_change points not computed_", "changes": 0}, errors, "headline")
    md = "\n\n".join(p for p in (
        f"# costgap\n\n{message}" if message else "# costgap",
        "## Effective cost per million tokens\n\n" + head["headline_md"],
        "## Change points\n\n" + head["changes_md"],
        "## Targets in this run\n\n" + outcomes_md if outcomes_md else "",
        "## Errors\n\n" + "\n".join(f"- {e}" for e in errors) if errors else "",
    ) if p)
    create_markdown_artifact(key="costgap-headline", markdown=md, description="costgap headline table")
    if index:
        create_link_artifact(key="costgap-report", link=_link(index), link_text="costgap report",
                             description="the static costgap site")
    return {"index": index, "headline": head["headline"], "changes": head["changes"], "errors": errors}


@flow(name="report", log_prints=True)
def report(warehouse: str | None = None, site: str | None = None) -> str | None:
    """Rebuild the site from the warehouse; returns index.html's path or URL."""
    out = report_and_artifacts(settings.warehouse_path(warehouse), settings.site_url(site))
    print(out["headline"])
    if out["errors"]:
        raise RuntimeError("; ".join(out["errors"]))
    return out["index"]
