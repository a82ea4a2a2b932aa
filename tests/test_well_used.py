"""Is this server well used? The rules (table-driven, pure), then over a real warehouse: bundles from before the
change land and read "not measured" for what they lack; new bundles are judged; the shared cost is its own row.

    .venv/bin/pytest -q tests/test_well_used.py
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tasks.cost import well_used as wu
from tasks.cost.model import CostOptions, effective_cost
from tasks.cost.shared import shared_costs
from tasks.landing.land import land_paths
from tasks.probe.host import busy
from tasks.probe.host.numa import Layout
from tasks.probe.record import measurement
from tests.cost_support import add_price, add_target
from tests.factories import BASE_TIME, bundle_doc, write_bundle
from warehouse.db import connect

ROOT = Path(__file__).resolve().parents[1]
OLD_H100 = ROOT / "warehouse/samples/h100/4b2ffb80bb42717c77b3d01fcb320e8ae53f34f906154f3a076454f425cb91be.json"
OLD_CPU = ROOT / "warehouse/samples/cpu/6eb9d90bcb66a30073d6319f8df3c8e6859490a3d54035c2204f7ed220e690d9.json"
NEW_TIME = datetime(2026, 12, 5, tzinfo=timezone.utc)  # inside the samples' cost window (they ran 2026-12-02..06)
GPU = {"gpu_count": 1}
CPU = {"gpu_count": 0}


FEED = {"batch_size": 32, "item_shape": [3, 224, 224]}


def _feeds(*pairs):
    return [(t, ms, "32 x 3x224x224") for t, ms in pairs]


def _row(benchmark, metric, value, params=None, **extra):
    return {"benchmark": benchmark, "metric": metric, "value": value, "params": json.dumps(params or {}),
            "run_id": "r" * 64, "started_at": BASE_TIME, **extra}


def _busy_row(utils, preset="1b", reasons=None):
    rows = [{"t": i * 0.1, "util": u, "sm_clock_mhz": 1900.0, "reasons": (reasons or [0] * len(utils))[i]}
            for i, u in enumerate(utils)]
    s = busy.summary(rows, 1980.0)
    return _row("gpu_busy", "util_mean_pct", s.pop("util_mean_pct"), {"preset": preset, **s})


def _facts(**kw):
    base = {
        "gpu_busy/util_mean_pct": [_busy_row([99.0] * 10)],
        "gemm/bf16_tflops": [_row("gemm", "bf16_tflops", 700.0, efficiency=700 / 989, peak=989.0)],
        "storage/read4k_qd1_p50_ms": [_row("storage", "read4k_qd1_p50_ms", 0.09, {"filesystem": "ext4",
                                                                                   "device": "/dev/nvme0n1",
                                                                                   "page_cache_bypassed": True})],
        "storage/read4k_qd1_p99_ms": [_row("storage", "read4k_qd1_p99_ms", 0.4)],
        "feed/next_latency_ms_mean": [_row("feed", "next_latency_ms_mean", 10.0, FEED)],
        "feed/wait_share": [_row("feed", "wait_share", 0.05, {"step_ms": 12.0})],
        "numa/numa_nodes": [_row("numa", "numa_nodes", 2.0, {"verdict": "bound", "reason": "all local"})],
        "sharing/sharing_gain": [_row("sharing", "sharing_gain", 0.12, {
            "preset": "bert-large", "jobs": 2, "alone_tokens_per_s": 40000.0, "aggregate_tokens_per_s": 44800.0})],
    }
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


def _by(verdicts):
    return {v["rule"]: v for v in verdicts}


def test_every_rule_has_its_threshold_reason_and_source():
    assert [r.key for r in wu.RULES] == ["gpu_busy", "await", "gemm", "feed", "numa", "sharing"]
    for r in wu.RULES:
        assert r.name and r.threshold_text and len(r.reason) > 60 and r.source
    assert (wu.RULE["gpu_busy"].threshold, wu.RULE["await"].threshold, wu.RULE["gemm"].threshold,
            wu.RULE["feed"].threshold) == (92.0, 1.0, 0.65, 15.0)


CASES = [  # (what, host, facts overrides, fastest feed, rule, verdict)
    ("all good", GPU, {}, _feeds(("gpu-a", 10.0)), None, wu.PASS),
    ("busy below", GPU, {"gpu_busy/util_mean_pct": [_busy_row([99.0] * 5 + [60.0] * 5)]}, None, "gpu_busy", wu.FAIL),
    ("busy: the worst preset", GPU, {"gpu_busy/util_mean_pct": [_busy_row([99.0] * 4), _busy_row([80.0] * 4, "8b")]},
     None, "gpu_busy", wu.FAIL),
    ("busy at 92 exactly", GPU, {"gpu_busy/util_mean_pct": [_busy_row([92.0] * 4)]}, None, "gpu_busy", wu.PASS),
    ("gemm at 64%", GPU, {"gemm/bf16_tflops": [_row("gemm", "bf16_tflops", 640.0, efficiency=0.64, peak=1000.0)]},
     None, "gemm", wu.FAIL),
    ("gemm without a peak", GPU, {"gemm/bf16_tflops": [_row("gemm", "bf16_tflops", 640.0, efficiency=None)]}, None,
     "gemm", wu.NOT_MEASURED),
    ("await 1 ms is not under 1 ms", GPU, {"storage/read4k_qd1_p50_ms": [_row("storage", "read4k_qd1_p50_ms", 1.0)]},
     None, "await", wu.FAIL),
    ("await on tmpfs", GPU, {"storage/read4k_qd1_p50_ms": [_row("storage", "read4k_qd1_p50_ms", 0.01,
                                                                 {"filesystem": "tmpfs"})]}, None, "await",
     wu.NOT_MEASURED),
    ("feed 15 ms behind", GPU, {"feed/next_latency_ms_mean": [_row("feed", "next_latency_ms_mean", 25.0, FEED)]},
     _feeds(("other", 10.0)), "feed", wu.PASS),
    ("feed 15.1 ms behind", GPU, {"feed/next_latency_ms_mean": [_row("feed", "next_latency_ms_mean", 25.1, FEED)]},
     _feeds(("other", 10.0)), "feed", wu.FAIL),
    ("feed: another batch size is not compared", GPU, {"feed/next_latency_ms_mean": [
        _row("feed", "next_latency_ms_mean", 25.1, FEED)]}, [("cpu", 2.0, "16 x 3x64x64")], "feed", wu.PASS),
    ("unbound", GPU, {"numa/numa_nodes": [_row("numa", "numa_nodes", 2.0, {"verdict": "unbound", "reason": "x"})]},
     None, "numa", wu.FAIL),
    ("single node passes", GPU, {"numa/numa_nodes": [_row("numa", "numa_nodes", 1.0, {"verdict": "single node"})]},
     None, "numa", wu.PASS),
    ("numa unknown", GPU, {"numa/numa_nodes": [_row("numa", "numa_nodes", 2.0, {"verdict": "unknown"})]}, None,
     "numa", wu.NOT_MEASURED),
    ("sharing 4%", GPU, {"sharing/sharing_gain": [_row("sharing", "sharing_gain", 0.04, {
        "preset": "bert-large", "jobs": 2, "alone_tokens_per_s": 1.0, "aggregate_tokens_per_s": 1.04})]}, None,
     "sharing", wu.FAIL),
    ("old bundle on a GPU host", GPU, {k: None for k in ("gpu_busy/util_mean_pct", "storage/read4k_qd1_p50_ms",
                                                         "numa/numa_nodes", "sharing/sharing_gain")},
     _feeds(("gpu-a", 10.0)), ("gpu_busy", "await", "numa", "sharing"), wu.NOT_MEASURED),
]


@pytest.mark.parametrize("what, host, facts, fastest, rule, expected", CASES, ids=[c[0] for c in CASES])
def test_judge(what, host, facts, fastest, rule, expected):
    got = _by(wu.judge(host, _facts(**facts), fastest or _feeds(("gpu-a", 10.0))))
    rules = [rule] if isinstance(rule, str) else list(rule or got)
    for r in rules:
        assert got[r]["verdict"] == expected, (r, got[r])
        assert got[r]["threshold_text"] == wu.RULE[r].threshold_text and got[r]["source"] == wu.RULE[r].source
        if expected != wu.NOT_MEASURED:
            assert got[r]["value_text"] and f"/{got[r]['figure'].split('/')[1].split(',')[0]}" and ", run " in got[r]["figure"]


def test_a_host_without_a_gpu_is_never_pass_on_a_gpu_rule():
    got = _by(wu.judge(CPU, _facts(), _feeds(("gpu-a", 10.0))))
    for r in wu.RULES:
        if r.gpu:
            assert got[r.key]["verdict"] == wu.NOT_MEASURED and got[r.key]["value_text"] == "no GPU on this host"
        else:
            assert got[r.key]["verdict"] == wu.PASS
    assert all(v["verdict"] == wu.NOT_MEASURED for v in wu.judge(None, _facts(), []))


def test_values_read_as_a_person_reads_them():
    got = _by(wu.judge(GPU, _facts(), _feeds(("gpu-b", 4.0), ("gpu-a", 10.0))))
    assert got["gpu_busy"]["value_text"].startswith("99.0% mean (1b); 100% of samples >= 92%; SM clock 96% of max")
    assert got["gemm"]["value_text"] == "71% of peak: 700.0 of 989 TFLOP/s (bf16, burst)"
    assert got["feed"]["value_text"] == "10.0 ms mean next() for batches of 32 x 3x224x224; +6.0 ms behind gpu-b (4.0 ms)"
    assert got["feed"]["note"] == "5% of a 12 ms step spent waiting for the next batch"
    assert got["sharing"]["value_text"].startswith("+12.0%: 44,800 tokens/s from 2 jobs against 40,000 alone")
    assert "e+" not in json.dumps([v["value_text"] for v in got.values()])


def test_busy_share_from_the_histogram():
    counts = [0] * 101
    counts[91], counts[92], counts[100] = 1, 1, 2
    assert wu.busy_share(counts) == 0.75 and wu.busy_share(counts, 95) == 0.5 and wu.busy_share([]) is None


def _new_gpu_bundle(target: str, seq: int, *, verdict: str, p50_ms: float, util: float, gain: float):
    """A probe-0.5.0-style GPU bundle whose new figures come from the probe's own builders."""
    rows = [{"t": i * 0.1, "util": util, "sm_clock_mhz": 1900.0, "reasons": 0} for i in range(20)]
    s = busy.summary(rows, 1980.0)
    lay = Layout(node_cpus={0: [0, 1], 1: [2, 3]}, gpu_node=0, gpu_local_cpus=[0, 1], affinity=[0, 1, 2, 3],
                 verdict=verdict, reason="stated by the test")
    ms = [
        measurement("gpu_busy", "1", "util_mean_pct", s.pop("util_mean_pct"), "%", params={"preset": "1b", **s},
                    repeats=20, statistic="mean"),
        measurement("numa", "1", "numa_nodes", 2.0, "nodes", params={**lay.params(), "copies": "measured"}),
        measurement("storage", "1", "read4k_qd1_p50_ms", p50_ms, "ms", params={"filesystem": "ext4"}, repeats=9),
        measurement("storage", "1", "read4k_qd1_p99_ms", p50_ms * 4, "ms", repeats=9, statistic="p99"),
        measurement("feed", "1", "next_latency_ms_mean", 1.0 + (seq - 1) * 40, "ms", params=FEED, repeats=9,
                    statistic="mean"),
        measurement("gemm", "5", "bf16_tflops", 800.0, "TFLOP/s", peak=989.0, peak_source="datasheet", repeats=9),
        measurement("sharing", "1", "sharing_gain", gain, "fraction", params={
            "preset": "bert-large", "jobs": 2, "alone_tokens_per_s": 40000.0,
            "aggregate_tokens_per_s": 40000.0 * (1 + gain), "micro_batch": 32}),
    ]
    atts = [{"task": "sharing:bert-large", "attempt": 1, "state": "failed", "error_kind": "oom",
             "duration_s": 1.0},
            {"task": "sharing:bert-large", "attempt": 2, "state": "completed", "duration_s": 40.0}]
    when = NEW_TIME + timedelta(hours=seq)
    doc = bundle_doc(target=target, seq=seq, gpu_name="NVIDIA H100 80GB HBM3", probe_version="0.5.0", started_at=when)
    return bundle_doc(target=target, seq=seq, gpu_name="NVIDIA H100 80GB HBM3", probe_version="0.5.0", started_at=when,
                      measurements=doc["measurements"] + ms, attempts=doc["attempts"] + atts)


def build_world(con, inbox: Path) -> None:
    """The committed H100 and CPU samples (probe 0.4.0) and two new-style GPU bundles, landed; gpu-a priced."""
    add_target(con, "gpu-a", "lambda", "us-east-1", "gpu_1x_h100_sxm5")
    add_price(con, "lambda", "us-east-1", "gpu_1x_h100_sxm5", 3.0)
    (inbox / "old").mkdir(parents=True)
    for p in (OLD_H100, OLD_CPU):
        (inbox / "old" / p.name).write_bytes(p.read_bytes())
    write_bundle(inbox, _new_gpu_bundle("gpu-a", 1, verdict="bound", p50_ms=0.1, util=98.0, gain=0.2))
    write_bundle(inbox, _new_gpu_bundle("gpu-b", 2, verdict="unbound", p50_ms=2.5, util=70.0, gain=0.01))
    got = land_paths(con, [str(inbox)])
    assert got.ok and len(got.landed) == 4, got.as_text()


@pytest.fixture()
def landed(tmp_path, warehouse_file):
    con = connect(str(warehouse_file))
    build_world(con, tmp_path / "in")
    yield con
    con.close()


def test_old_bundles_land_and_read_not_measured_for_what_they_lack(landed):
    v = {t: _by(vs) for t, vs in wu.verdicts(landed).items()}
    assert set(v) >= {"h100-sxm-1x", "local", "gpu-a", "gpu-b"}
    old = v["h100-sxm-1x"]
    for rule in ("gpu_busy", "await", "numa", "sharing"):
        assert old[rule]["verdict"] == wu.NOT_MEASURED and "before 0.5.0" in old[rule]["value_text"], rule
    assert old["gemm"]["verdict"] in (wu.PASS, wu.FAIL) and old["gemm"]["figure"].startswith("gemm/bf16_tflops")
    assert old["feed"]["verdict"] in (wu.PASS, wu.FAIL)
    cpu = v["local"]
    assert [cpu[r.key]["value_text"] for r in wu.RULES if r.gpu] == ["no GPU on this host"] * 3
    assert cpu["numa"]["verdict"] == cpu["await"]["verdict"] == wu.NOT_MEASURED


def test_new_bundles_are_judged_with_their_figures(landed):
    v = {t: _by(vs) for t, vs in wu.verdicts(landed).items()}
    a, b = v["gpu-a"], v["gpu-b"]
    assert {k: x["verdict"] for k, x in a.items()} == {r.key: wu.PASS for r in wu.RULES}
    assert {k: x["verdict"] for k, x in b.items()} == {"gpu_busy": wu.FAIL, "await": wu.FAIL, "gemm": wu.PASS,
                                                        "feed": wu.FAIL, "numa": wu.FAIL, "sharing": wu.FAIL}
    assert b["feed"]["value"] == pytest.approx(40.0) and "behind gpu-a (1.0 ms)" in b["feed"]["value_text"]
    assert a["feed"]["value_text"] == ("1.0 ms mean next() for batches of 32 x 3x224x224; the fastest of 3 "
                                       "targets measured at that size")
    assert a["gpu_busy"]["figure"].startswith("gpu_busy/util_mean_pct [1b], run ")


def test_the_shared_cost_is_its_own_labelled_figure(landed):
    rows = {r["target"]: r for r in shared_costs(landed, CostOptions())}
    assert set(rows) == {"gpu-a", "gpu-b"}  # never the CPU sample, never a cost-table row
    a = rows["gpu-a"]
    assert a["label"] == "shared" and a["jobs"] == 2 and (a["failed_attempts"], a["attempts"]) == (1, 2)
    assert a["R"] == pytest.approx(1.5)  # p = 1/2, f = 0.5
    assert a["cost_per_mtok_shared"] == pytest.approx(effective_cost(3.0, 48000.0, 1.5))
    assert a["cost_per_mtok_alone"] == pytest.approx(effective_cost(3.0, 40000.0, 1.5))
    b = rows["gpu-b"]
    assert b["cost_per_mtok_shared"] is None and b["no_cost_reason"] == "no price as of its run"
