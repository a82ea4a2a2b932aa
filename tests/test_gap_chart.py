"""The gap-over-time chart never hides its band: the y axis holds every 90% band (and 0), or stops past a
far-reaching band of a thin window and marks the cut end with its value; per-day run points sit behind
the line.

    .venv/bin/pytest -q tests/test_gap_chart.py
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from reports.charts_gap import gap_chart, gap_domain

END = datetime(2026, 12, 4, tzinfo=timezone.utc)


def _rows(bands: list[tuple[float, float, float]]) -> list[dict]:
    return [{"period_end": END - timedelta(days=7 * (len(bands) - 1 - i)), "target": "a", "gap": g, "gap_lo": lo,
             "gap_hi": hi, "runs": 9, "baseline_runs": 9} for i, (lo, g, hi) in enumerate(bands)]


def test_every_band_fits_when_none_reaches_far():
    rows = _rows([(0.054, 0.182, 0.472), (-0.156, -0.09, 0.093), (-0.1, 0.0, 0.3)])  # the 1b band
    (lo, hi), cut = gap_domain(rows)
    assert cut == [] and lo <= min(r["gap_lo"] for r in rows) and hi >= max(r["gap_hi"] for r in rows) and lo < 0 < hi


def test_a_far_band_is_cut_and_its_end_marked_with_its_value():
    rows = _rows([(-0.2, 0.1, 1.57), (-0.05, 0.0, 0.1), (0.05, 0.18, 0.47)])
    (lo, hi), cut = gap_domain(rows)
    assert [(m["value"], m["label"]) for m in cut] == [(1.57, "▲ +157%")] and cut[0]["y"] == hi
    for r in rows:  # every other band end is inside the axis
        assert (lo <= r["gap_lo"] and (r["gap_hi"] <= hi or any(m["value"] == r["gap_hi"] for m in cut)))
    points = [{"target": "a", "preset": "1b", "at": END - timedelta(days=3), "gap": 0.2, "runs": 1}]
    spec = json.dumps(gap_chart(rows, [], "b", "1b", {"a": "#2563eb", "b": "#f59e0b"}, points), default=str,
                      ensure_ascii=False)
    assert "▲ +157%" in spec and '"circle"' in spec  # the marker and the run points are drawn
