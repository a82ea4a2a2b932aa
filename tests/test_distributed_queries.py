"""scaling_efficiency.sql and scaling_allreduce.sql over bundles landed into a real DuckDB warehouse.

    .venv/bin/pytest -q tests/test_distributed_queries.py
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tasks.landing.land import land_paths
from tests.factories import BASE_TIME, bundle_doc, write_bundle
from warehouse.db import connect
from warehouse.sql import load_query


def _ft(n: int, tps: float, eff: float | None, preset: str = "1b") -> dict:
    return {"preset": preset, "status": "ok", "mode": "full", "precision": "bf16", "device": "cuda",
            "seq_len": 2048, "micro_batch": 16, "tokens_per_s": tps, "n_gpus": n,
            "scaling_efficiency": eff, "step_time_s": [1.0], "step_time_median_s": 1.0}


def _ar(size: int, algbw: float, n: int = 2) -> list[dict]:
    params = {"bytes": size, "n_gpus": n, "backend": "nccl", "dtype": "float32", "op": "sum"}
    return [{"benchmark": "allreduce", "metric": m, "value": v, "unit": "GB/s", "params": params,
             "repeats": 7, "statistic": "median", "spread": 1.0, "spread_kind": "iqr"}
            for m, v in (("algbw_gbps", algbw), ("busbw_gbps", algbw * 2 * (n - 1) / n))]


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundles")
    old, new = BASE_TIME, BASE_TIME + timedelta(days=7)
    docs = [
        # a 2-GPU host, two weeks: B's single-GPU row (not a series) + G's n=1 and n=2 rows
        bundle_doc(target="h200x2", started_at=old, gpu_name="NVIDIA H200", seq=1,
                   finetune=[_ft(1, 50_000.0, None), _ft(1, 48_000.0, 1.0), _ft(2, 86_400.0, 0.9)],
                   measurements=_ar(1 << 20, 40.0) + _ar(1 << 30, 350.0)),
        bundle_doc(target="h200x2", started_at=new, gpu_name="NVIDIA H200", seq=2,
                   finetune=[_ft(1, 50_000.0, 1.0), _ft(2, 95_000.0, 0.95)],
                   measurements=_ar(1 << 20, 42.0) + _ar(1 << 28, 330.0) + _ar(1 << 30, 360.0)),
        # a single-GPU host: no series at all
        bundle_doc(target="a10", gpu_name="NVIDIA A10", seq=3, finetune=[_ft(1, 9_000.0, None)]),
    ]
    for doc in docs:
        write_bundle(d, doc)
    c = connect(str(tmp_path_factory.mktemp("wh") / "wh.duckdb"))
    summary = land_paths(c, [str(d)])
    assert summary.ok and len(summary.landed) == 3, summary.as_text()
    yield c
    c.close()


def rows(con, name: str, target: str | None = None) -> list[dict]:
    cur = con.execute(load_query(name), {"target": target})
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def test_scaling_efficiency_latest_per_n_gpus(con):
    out = rows(con, "scaling_efficiency")
    assert [(r["target"], r["preset"], r["n_gpus"]) for r in out] == [
        ("h200x2", "1b", 1), ("h200x2", "1b", 2)]
    one, two = out
    assert (two["tokens_per_s"], two["scaling_efficiency"], two["runs"]) == (95_000.0, 0.95, 2)
    assert two["efficiency_median"] == pytest.approx(0.925)
    assert one["runs"] == 2 and one["tokens_per_s_median"] == pytest.approx(49_000.0)  # B's row excluded
    assert one["measured_at"] == two["measured_at"] == BASE_TIME + timedelta(days=7)  # the latest run
    assert two["gpu_name"] == "NVIDIA H200" and two["mode"] == "full"


def test_scaling_efficiency_target_filter(con):
    assert rows(con, "scaling_efficiency", "a10") == []
    assert len(rows(con, "scaling_efficiency", "h200x2")) == 2


def test_scaling_allreduce_latest_run_largest_size(con):
    out = rows(con, "scaling_allreduce")
    assert [r["bytes"] for r in out] == [1 << 20, 1 << 28, 1 << 30]  # the newer run only
    big = [r for r in out if r["is_largest"]]
    assert len(big) == 1 and big[0]["bytes"] == 1 << 30
    assert big[0]["busbw_gbps"] == pytest.approx(360.0) and big[0]["algbw_gbps"] == pytest.approx(360.0)
    assert (big[0]["n_gpus"], big[0]["backend"]) == (2, "nccl")
    assert rows(con, "scaling_allreduce", "a10") == []
