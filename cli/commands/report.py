"""`costgap report` and `costgap demo`: render the static site from the warehouse.

    costgap report --warehouse costgap.duckdb --site site [--baseline h200-sxm]
    costgap demo --warehouse demo.duckdb --site demo-site

`report` reads one snapshot of the warehouse, renders every page and publishes atomically to a
directory or any fsspec URL (s3://..., memory://...). `demo` first builds a warehouse from the
committed sample bundles (plus a labelled synthetic history and illustrative prices), then renders it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from cli.commands import say
from runtime.settings import site_url, warehouse_path

WAREHOUSE_HELP = "DuckDB file (default: $COSTGAP_WAREHOUSE, then ./costgap.duckdb)."
SITE_HELP = "Directory or fsspec URL to publish to (default: $COSTGAP_SITE, then ./site)."
DEMO_WAREHOUSE = ".costgap/demo.duckdb"  # git-ignored; the demo never touches the main warehouse
DEMO_SITE = ".costgap/demo-site"  # git-ignored; the demo never overwrites the real report in ./site


def report(
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help=WAREHOUSE_HELP),
    site: Optional[str] = typer.Option(None, "--site", help=SITE_HELP),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Target the gap is measured against "
                                           "(default: the cheapest priced target)."),
    images: bool = typer.Option(True, "--images/--no-images", help="Also export every chart as PNG and SVG "
                                "(charts/ in the site)."),
) -> None:
    """Render the offline static report from the warehouse and publish it atomically."""
    from flows.report import build_site

    t0 = time.perf_counter()
    index = build_site(warehouse_path(warehouse), site_url(site), baseline=baseline, images=images)
    typer.echo(f"report: {index} ({time.perf_counter() - t0:.1f} s)")


def demo(
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help="DuckDB file for the demo "
                                            f"(default: {DEMO_WAREHOUSE}; replaced if it exists)."),
    site: Optional[str] = typer.Option(None, "--site", help="Where to publish the demo report "
                                       f"(default: {DEMO_SITE}, so the real ./site is left alone)."),
    samples: Optional[Path] = typer.Option(None, "--samples", help="Directory of sample bundles "
                                           "(default: the committed warehouse/samples)."),
    images: bool = typer.Option(True, "--images/--no-images", help="Also export every chart as PNG and SVG."),
) -> None:
    """Build a demo warehouse from the committed sample bundles and render its report."""
    from tasks.errors import UserError
    from flows.report import build_site
    from tasks.demo import build_demo
    from warehouse.db import writing

    path = Path(warehouse or DEMO_WAREHOUSE)
    if path.exists():
        if not _is_demo(path):
            raise UserError(f"--warehouse {path}: exists and is not a demo warehouse (it has runs that "
                            "`costgap demo` did not make); pick a new path, the demo replaces its file")
        path.unlink()
        Path(f"{path}.wal").unlink(missing_ok=True)
    t0 = time.perf_counter()
    with writing(str(path)) as con:  # the demo's own file: no other writer, so no write slot is needed
        summary = build_demo(con, samples, progress=say)
    typer.echo(summary.as_text())
    say(f"demo: rendering the report{' and exporting every chart as PNG and SVG' if images else ''}")
    index = build_site(str(path), site or DEMO_SITE, images=images)
    typer.echo(f"report: {index} ({time.perf_counter() - t0:.0f} s)")


def _is_demo(path: Path) -> bool:
    """True for a file `costgap demo` made (every run it holds came from a demo landing), or an empty one."""
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        return con.execute("select count(*) from land_batches where source <> 'demo'").fetchone()[0] == 0
    except duckdb.Error:
        return False
    finally:
        con.close()


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("demo")(demo)
