"""Render the static report and publish it atomically to a directory or fsspec URL.

    costgap report --warehouse costgap.duckdb --site site      # or: --site memory://report, s3://bucket/report

Pages are rendered from the report's data (reports.data.load, over one read-only snapshot that
flows/report.py opens) into a fresh temporary directory. Only a complete
build is published: a local directory is swapped in by rename; a remote URL gets the build under
builds/<id>/ and then its root index.html (one object, written last) is pointed at it. A failure at
any step leaves the previous site exactly as it was. The vega libraries are one shared local file
(assets/vega.js), so no page references anything outside the site.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import logging
import os
import re
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path

import fsspec
import vl_convert as vlc

from reports.data import ReportData
from reports.pages.page import ASSET_JS, SCRIPTS, TABLES_JS, render
from reports.pages.overview import all_pages
from reports.pages.candidates import candidates_page

log = logging.getLogger(__name__)

PAGE_BUDGET_BYTES = 3 * 1024 * 1024  # issue 7: each page (HTML + the scripts it loads) <= 3 MB
KEEP_REMOTE_BUILDS = 3  # older builds under builds/ are pruned after a successful publish
PNG_SCALE = 2.0  # slides and chat want crisp images; 2x of a 640 px chart is 1280 px
EXPORT_WORKERS = 2  # this box has 2 cores; vl-convert mostly serialises, the 2nd thread overlaps file I/O
CHART_CACHE_FILES = 2000  # ~1000 charts (SVG + PNG) kept in COSTGAP_HOME/chart-cache, newest first
_URL = re.compile(r"https?://", re.IGNORECASE)


def _cache_dir() -> Path:
    return Path(os.environ.get("COSTGAP_HOME") or "~/.cache/costgap").expanduser()


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """vega + vega-lite + vega-embed as one script (from vl-convert), cached on disk per version.

    The bundle's only URL-looking strings are XML namespaces and editor/issue links inside string
    literals; `://` is written as `:\\/\\/` there (the same string in JS), so no page text carries a URL.
    """
    key = f"vega-bundle-{vlc.get_vegalite_versions()[-1]}-{vlc.get_vega_embed_version()}.js"
    path = _cache_dir() / key
    if path.exists():
        return path.read_text(encoding="utf-8")
    js = vlc.javascript_bundle()
    js = _URL.sub(lambda m: m.group(0).replace("//", "\\/\\/"), js)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{uuid.uuid4().hex}.tmp")
        tmp.write_text(js, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:  # a read-only home only costs the next build 2 s
        log.info("report: could not cache the vega bundle at %s: %s", path, e)
    return js


def _export_one(out: Path, chart_id: str, spec: dict, cache: Path | None) -> bool:
    """Write <id>.svg and <id>.png; reuse a cached pair for an identical spec. Returns True on a cache hit."""
    key = hashlib.sha256(json.dumps([spec, PNG_SCALE, vlc.get_vegalite_versions()[-1]], sort_keys=True,
                                    default=str).encode()).hexdigest()[:32]
    hit = cache is not None and (cache / f"{key}.png").exists() and (cache / f"{key}.svg").exists()
    if hit:
        svg_bytes, png = (cache / f"{key}.svg").read_bytes(), (cache / f"{key}.png").read_bytes()
    else:
        svg_bytes = vlc.vegalite_to_svg(spec).encode("utf-8")
        png = vlc.svg_to_png(svg_bytes.decode("utf-8"), scale=PNG_SCALE)
    (out / f"{chart_id}.svg").write_bytes(svg_bytes)
    (out / f"{chart_id}.png").write_bytes(png)
    if cache is not None and not hit:
        try:
            for suffix, data in ((".svg", svg_bytes), (".png", png)):
                tmp = cache / f"{key}{suffix}.{uuid.uuid4().hex[:6]}.tmp"
                tmp.write_bytes(data)
                tmp.replace(cache / f"{key}{suffix}")
        except OSError as e:  # the cache only saves time
            log.info("report: chart cache write failed: %s", e)
    return hit


def _prune(cache: Path, keep: int = CHART_CACHE_FILES) -> None:
    files = sorted(cache.glob("*.*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for p in files[keep:]:
        p.unlink(missing_ok=True)


def export_images(specs: dict[str, dict], out: Path, workers: int = EXPORT_WORKERS, cache: bool = True) -> int:
    """Every chart as SVG (vl-convert) and PNG (rasterised from that SVG); returns the cache hits.

    A chart whose spec (data included) is unchanged since an earlier build is copied from the cache
    (COSTGAP_HOME/chart-cache): after one new run, most target pages and the quality charts are unchanged.
    """
    out.mkdir(parents=True, exist_ok=True)
    folder = _cache_dir() / "chart-cache" if cache else None
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            folder = None
    with ThreadPoolExecutor(max_workers=workers) as pool:
        hits = sum(f.result() for f in [pool.submit(_export_one, out, cid, spec, folder) for cid, spec in specs.items()])
    if folder is not None:
        _prune(folder)
    return hits


def _csv_value(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, float):
        return repr(v)  # full precision: the CSV reproduces the figure exactly
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, (list, dict)):
        return json.dumps(v, default=str)
    return str(v)


def write_csv(path: Path, rows: list[dict]) -> None:
    """One table's or chart's data; columns in first-seen order over all rows."""
    cols: dict[str, None] = {}
    for r in rows:
        cols.update(dict.fromkeys(r))
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(cols))
        w.writerows([[_csv_value(r.get(c)) for c in cols] for r in rows])


def render_site(data: ReportData, out: Path, *, images: bool = True) -> dict:
    """Write every page, its data (data/*.csv), the shared scripts and the chart exports into `out`."""
    t0 = time.perf_counter()
    (out / "assets").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    js = vega_bundle()
    (out / ASSET_JS).write_text(js, encoding="utf-8")
    script_bytes = {}
    for src, name in SCRIPTS.items():
        text = resources.files("reports.pages").joinpath(name).read_text(encoding="utf-8")
        (out / src).write_text(text, encoding="utf-8")
        script_bytes[src] = len(text.encode("utf-8"))
    js_bytes, tables_bytes = len(js.encode("utf-8")), script_bytes[TABLES_JS]
    pages, specs, written = [], {}, {}
    for page in [*all_pages(data), candidates_page(data)]:
        html = render(page, data)
        (out / page.filename).write_text(html, encoding="utf-8")
        for name, rows in page.data.items():
            if name in written:
                raise RuntimeError(f"data/{name}.csv is written by both {written[name]} and {page.filename}")
            written[name] = page.filename
            write_csv(out / "data" / f"{name}.csv", rows)
        weight = (len(html.encode("utf-8")) + (js_bytes if page.charts else 0) + (tables_bytes if page.data else 0)
                  + sum(script_bytes[src] for src in page.scripts))
        pages.append({"file": page.filename, "title": page.title, "charts": len(page.charts), "bytes": weight,
                      "data": sorted(page.data)})
        specs.update(page.charts)
    t_pages = time.perf_counter() - t0
    t1 = time.perf_counter()
    hits = export_images(specs, out / "charts") if images else 0
    t_export = time.perf_counter() - t1
    heavy = [p for p in pages if p["bytes"] > PAGE_BUDGET_BYTES]
    for p in heavy:
        log.warning("report: page %s weighs %d bytes (budget %d)", p["file"], p["bytes"], PAGE_BUDGET_BYTES)
    manifest = {
        "generated_at": data.generated_at.isoformat(), "baseline": data.baseline, "pages": pages,
        "charts": len(specs), "images": images, "max_page_bytes": max(p["bytes"] for p in pages),
        "render_s": round(t_pages, 3), "export_s": round(t_export, 3), "export_cache_hits": hits, "total_s": round(time.perf_counter() - t0, 3),
    }
    (out / "site.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def _is_local(site: str) -> bool:
    return "://" not in site or site.startswith("file://")


def _publish_local(build: Path, dest: Path) -> None:
    """Swap the finished build in by rename; on any failure the old site is put back."""
    old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
    had_old = dest.exists()
    if had_old:
        dest.rename(old)
    try:
        build.rename(dest)
    except BaseException:
        if had_old:
            old.rename(dest)
        raise
    if had_old:
        shutil.rmtree(old, ignore_errors=True)


def _publish_remote(build: Path, site: str) -> str:
    """Upload under builds/<id>/, then point the root index.html at it (one object, last)."""
    fs, root = fsspec.core.url_to_fs(site)
    root = root.rstrip("/")
    build_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    prefix = f"{root}/builds/{build_id}"
    for path in sorted(build.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{prefix}/{path.relative_to(build).as_posix()}", path.read_bytes())
    target = f"builds/{build_id}/index.html"
    pointer = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0; url={target}"><title>costgap report</title></head>'
        f'<body><p><a href="{target}">Open the costgap report</a></p></body></html>'
    )
    fs.pipe_file(f"{root}/index.html", pointer.encode("utf-8"))
    fs.pipe_file(f"{root}/latest.json", json.dumps({"build": build_id, "index": target}).encode("utf-8"))
    try:
        builds = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(f"{root}/builds", detail=False))
        for old in [b for b in builds if b != build_id][: max(0, len(builds) - KEEP_REMOTE_BUILDS)]:
            fs.rm(f"{root}/builds/{old}", recursive=True)
    except (OSError, FileNotFoundError) as e:  # pruning is housekeeping; the new site is live already
        log.warning("report: could not prune old builds under %s: %s", site, e)
    return f"{site.rstrip('/')}/index.html"


def publish(data: ReportData, site: str, *, images: bool = True) -> str:
    """Render every page from `data` and publish atomically; returns index.html's path or URL.

    A failure at any step (a bug in a page included) raises, and the previous site stays as it was."""
    if _is_local(site):
        dest = Path(site.removeprefix("file://")).resolve()
        dest.parent.mkdir(parents=True, exist_ok=True)
        build = dest.parent / f".{dest.name}.build-{uuid.uuid4().hex[:8]}"
        try:
            render_site(data, build, images=images)
            _publish_local(build, dest)
        finally:
            if build.exists():
                shutil.rmtree(build, ignore_errors=True)
        return str(dest / "index.html")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="costgap-site-") as tmp:
        render_site(data, Path(tmp), images=images)
        return _publish_remote(Path(tmp), site)
