"""Publishing the report: to a directory or an fsspec URL, atomically (a failed build changes nothing).

    .venv/bin/pytest -q tests/test_report_publish.py
"""

from __future__ import annotations

import re
from pathlib import Path

import fsspec
import pytest

import reports.site as site_mod
from flows.report import build_site
from tests.report_world import make_world


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> str:
    return make_world(str(tmp_path_factory.mktemp("pub") / "wh.duckdb"), runs=60, telemetry=600, targets=2)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_local_failed_build_leaves_old_site_untouched(world, tmp_path, monkeypatch):
    dest = tmp_path / "out" / "site"
    build_site(world, str(dest), images=False)
    before = _snapshot(dest)
    real_render = site_mod.render
    calls = {"n": 0}

    def flaky(page, data):  # third page fails after two were written into the build dir
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full (injected)")
        return real_render(page, data)

    monkeypatch.setattr(site_mod, "render", flaky)
    with pytest.raises(RuntimeError, match="injected"):
        build_site(world, str(dest), images=False)
    assert _snapshot(dest) == before
    assert sorted(p.name for p in dest.parent.iterdir()) == ["site"]  # no temp build left behind


def test_local_rebuild_replaces_whole_site(world, tmp_path):
    dest = tmp_path / "site"
    dest.mkdir()
    (dest / "stale-page.html").write_text("old")
    index = build_site(world, str(dest), images=False)
    assert Path(index) == dest / "index.html"
    assert not (dest / "stale-page.html").exists()


def _memory_index(url: str) -> str:
    fs, root = fsspec.core.url_to_fs(url)
    pointer = fs.cat_file(f"{root}/index.html").decode()
    return re.search(r'url=(builds/[^"]+/index\.html)', pointer).group(1)


def test_memory_url_publish_and_failed_upload(world, monkeypatch):
    url = "memory://costgap-test/report"
    index = build_site(world, url, images=False)
    assert index == f"{url}/index.html"
    fs, root = fsspec.core.url_to_fs(url)
    first = _memory_index(url)
    build_dir = f"{root}/{first.rsplit('/', 1)[0]}"
    assert fs.exists(f"{build_dir}/hardware.html") and fs.exists(f"{build_dir}/assets/vega.js")

    real_pipe = fs.pipe_file
    n = {"calls": 0}

    def failing_pipe(path, data, **kw):
        n["calls"] += 1
        if n["calls"] == 4:
            raise OSError("connection reset (injected)")
        return real_pipe(path, data, **kw)

    monkeypatch.setattr(type(fs), "pipe_file", lambda self, p, d, **kw: failing_pipe(p, d, **kw))
    with pytest.raises(OSError, match="injected"):
        build_site(world, url, images=False)
    monkeypatch.undo()
    assert _memory_index(url) == first  # readers still get the complete previous build
    assert fs.exists(f"{build_dir}/quality.html")

    build_site(world, url, images=False)
    assert _memory_index(url) != first
    fs.rm(f"{root}", recursive=True)
