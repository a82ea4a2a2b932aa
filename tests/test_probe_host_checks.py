"""Issue 45's probe parts on a CPU host: NUMA layout and verdict, the storage path, the feed's wait share,
the GPU-busy summary and the sharing part's plan.

    .venv/bin/pytest -q tests/test_probe_host_checks.py

The sharing part is not_applicable on a CPU host (no card to share), so the quick probe that many tests and
`make run` start pays nothing for it; its two processes run end to end here once, on the `tiny` preset with
`on_cpu` set (test_sharing_two_processes_end_to_end_on_cpu).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dataclasses import replace

from tasks.probe.finetune.sharing import measure_sharing, plan
from tasks.probe.hardware.feed import measure_feed
from tasks.probe.hardware.numa_copy import measure_numa
from tasks.probe.hardware.storage import measure_storage
from tasks.probe.hardware.storage_path import io_uring, mount_of, random_reads
from tasks.probe.host import busy
from tasks.probe.host.numa import cpu_list, layout, parse_cpulist, sysfs_bdf, verdict
from tasks.probe.profiles import QUICK, STANDARD, FeedConfig, NumaConfig, SharingConfig, StorageConfig
from tasks.probe.record import NotApplicable

TWO = {0: list(range(0, 8)), 1: list(range(8, 16))}


@pytest.mark.parametrize("text, cpus", [("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]), ("", []), ("5", [5]),
                                         ("0-1,1-2", [0, 1, 2])])
def test_cpulist_round_trip(text, cpus):
    assert parse_cpulist(text) == cpus
    assert parse_cpulist(cpu_list(cpus)) == cpus


def test_bad_cpulist_names_the_text():
    with pytest.raises(ValueError, match="a-b"):
        parse_cpulist("a-b")


@pytest.mark.parametrize("nodes, gpu_node, local, affinity, has_gpu, expected", [
    ({0: [0, 1]}, None, [], [0, 1], False, "single node"),  # this CI box: one node, no GPU
    ({0: [0, 1]}, 0, [0, 1], [0, 1], True, "single node"),
    ({}, None, [], [0], True, "single node"),  # no sysfs nodes: a kernel without NUMA
    (TWO, 0, list(range(8)), [0, 1, 2, 3], True, "bound"),
    (TWO, 1, [], list(range(8, 16)), True, "bound"),  # local CPUs from the node when sysfs has none
    (TWO, 0, list(range(8)), list(range(16)), True, "unbound"),
    (TWO, 1, list(range(8, 16)), [0], True, "unbound"),
    (TWO, None, [], list(range(16)), True, "unknown"),  # numa_node -1
    (TWO, None, [], list(range(16)), False, "unknown"),  # no GPU on a two-node host
])
def test_numa_verdict(nodes, gpu_node, local, affinity, has_gpu, expected):
    got, why = verdict(nodes, gpu_node, local, affinity, has_gpu=has_gpu)
    assert got == expected and why


def test_unbound_names_the_cpus_that_cross():
    _, why = verdict(TWO, 0, list(range(8)), [6, 7, 8, 9], has_gpu=True)
    assert "2 of the 4" in why and "8-9" in why


@pytest.mark.parametrize("bus, bdf", [("00000000:18:00.0", "0000:18:00.0"), ("0000:AF:00.0", "0000:af:00.0"),
                                      ("18:00.0", None), (None, None), ("00000001:3B:00.1", "0001:3b:00.1")])
def test_sysfs_bdf(bus, bdf):
    assert sysfs_bdf(bus) == bdf


def _fake_sysfs(root: Path, gpu_node: str, local: str | None) -> tuple[Path, Path]:
    nodes, pci = root / "node", root / "pci"
    for n, cpus in (("node0", "0-7"), ("node1", "8-15")):
        (nodes / n).mkdir(parents=True)
        (nodes / n / "cpulist").write_text(cpus + "\n")
    (nodes / "node2").mkdir()  # a memory-only node (CXL, HBM): no CPUs, not counted
    (nodes / "node2" / "cpulist").write_text("\n")
    dev = pci / "0000:18:00.0"
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text(gpu_node + "\n")
    if local is not None:
        (dev / "local_cpulist").write_text(local + "\n")
    return nodes, pci


def test_layout_from_sysfs_bound_and_its_params(tmp_path):
    nodes, pci = _fake_sysfs(tmp_path, "1", "8-15")
    lay = layout("00000000:18:00.0", has_gpu=True, node_root=nodes, pci_root=pci, affinity=[8, 9, 10])
    assert (lay.verdict, lay.gpu_node, lay.remote_node(), lay.affinity_nodes) == ("bound", 1, 0, [1])
    p = lay.params()
    assert p["node_cpus"] == ["0:0-7", "1:8-15"] and p["gpu_local_cpus"] == "8-15" and p["nodes"] == 2


def test_layout_numa_node_minus_one_is_unknown(tmp_path):
    nodes, pci = _fake_sysfs(tmp_path, "-1", None)
    lay = layout("00000000:18:00.0", has_gpu=True, node_root=nodes, pci_root=pci, affinity=list(range(16)))
    assert lay.verdict == "unknown" and lay.gpu_node is None and lay.remote_node() is None


def test_measure_numa_on_cpu_records_the_layout_and_says_copies_not_measured():
    (head,) = measure_numa(NumaConfig(), device="cpu")
    assert head["benchmark"] == "numa" and head["metric"] == "numa_nodes" and head["value"] >= 0
    assert head["params"]["verdict"] in ("single node", "bound", "unbound", "unknown")
    assert head["params"]["copies"] == "not measured: no CUDA device"
    assert head["params"]["affinity_cpus"] == cpu_list(os.sched_getaffinity(0))


def test_random_reads_two_depths(tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(os.urandom(2 * 2**20))
    rows = random_reads(str(f), depths=(1, 8), reads=64, max_s=5.0)
    assert [r["depth"] for r in rows] == [1, 8]
    for r in rows:
        assert r["reads"] == 64 and 0 < r["p50_ms"] <= r["p99_ms"] <= r["max_ms"] and r["iops"] > 0
        assert r["method"] in ("o_direct", "fadvise_random")


def test_random_reads_refuse_an_empty_file(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    with pytest.raises(ValueError, match="smaller than one"):
        random_reads(str(tmp_path / "e"), depths=(1,), reads=1, max_s=1)


def test_io_uring_state_is_one_of_the_words():
    got = io_uring()
    assert got["state"] in ("available", "disabled", "not in kernel", "unknown") and got["check"]


def test_mount_of_reads_mountinfo(tmp_path):
    st = os.stat(tmp_path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    info = tmp_path / "mountinfo"
    info.write_text(f"22 1 {dev} / / rw - ext4 /dev/nvme0n1p1 rw\n"
                    f"40 22 {dev} / {tmp_path} rw shared:9 - xfs /dev/md0 rw\n"
                    "50 22 0:99 / /proc rw - proc proc rw\n")
    assert mount_of(str(tmp_path), str(info)) == {"filesystem": "xfs", "device": "/dev/md0",
                                                  "mount_point": str(tmp_path), "st_dev": dev}
    assert mount_of(str(tmp_path))["filesystem"]  # this host's own /proc/self/mountinfo


def test_storage_records_4k_latency_at_both_depths_and_io_uring(tmp_path):
    cfg = StorageConfig(big_file_mib=4, chunk_mib=1, small_files=20, repeats=1, random_reads=50,
                        random_max_s=5.0, queue_depth=4, data_dir=str(tmp_path))
    by = {m["metric"]: m for m in measure_storage(cfg)}
    for d in (1, 4):
        p50, p99 = by[f"read4k_qd{d}_p50_ms"], by[f"read4k_qd{d}_p99_ms"]
        assert 0 < p50["value"] <= p99["value"] and p99["statistic"] == "p99" and p50["unit"] == "ms"
        assert p50["params"]["queue_depth"] == d and p50["params"]["block_bytes"] == 4096
        assert p50["params"]["page_cache_bypassed"] == (p50["params"]["method"] == "o_direct")
    io = by["io_uring"]
    assert io["value"] in (0.0, 1.0) and io["params"]["random_reads"] == "measured"
    assert io["params"]["filesystem"] and io["params"]["data_dir"] == str(tmp_path)
    assert {"seq_read_gbps", "small_files_per_s"} <= set(by)
    assert os.listdir(tmp_path) == []


def test_feed_wait_share():
    cfg = FeedConfig(warmup_batches=2, timed_batches=6, batch_size=4, item_shape=(3, 16, 16), workers=0,
                     step_ms=5.0, step_warmup=1)
    by = {m["metric"]: m for m in measure_feed(cfg, device="cpu")}
    w = by["wait_share"]
    assert 0 < w["value"] < 1 and w["unit"] == "share" and w["repeats"] == 6
    assert w["params"]["step_ms"] == 5.0 and w["params"]["step_ms_measured"] >= 5.0


def _rows(utils, reasons=None, clock=1900.0, phase="finetune:1b"):
    return [{"t": i * 0.1, "gpu": 0, "util": u, "sm_clock_mhz": clock, "reasons": (reasons or [None] * len(utils))[i],
             "phase": phase} for i, u in enumerate(utils)]


def test_busy_summary_histogram_clock_and_throttle():
    s = busy.summary(_rows([100.0, 99.0, 91.0, 50.0], reasons=[0, 0x4, 0x4, 0x1]), 1980.0)
    assert s["samples"] == 4 and s["util_mean_pct"] == 85.0 and sum(s["util_counts"]) == 4
    assert s["util_counts"][100] == 1 and s["util_counts"][91] == 1 and sum(s["util_counts"][92:]) == 2
    assert s["sm_clock_share"] == round(1900 / 1980, 4) and s["throttle_reasons"] == ["sw_power_cap"]
    assert s["throttled_share"] == 0.5 and s["window_s"] == 0.3
    assert busy.summary([], 1980.0) is None


class _FakeSampler:
    nv = object()
    max_clock_mhz = [1980.0]

    def __init__(self, rows):
        self._rows = rows

    def rows(self):
        return list(self._rows)


def test_measure_busy_per_finetune_window_only():
    rows = _rows([100.0] * 5) + _rows([10.0] * 5, phase="finetune") + _rows([95.0] * 3, phase="finetune:8b-lora")
    fts = [{"preset": "1b", "status": "ok", "device": "cuda"}, {"preset": "8b-lora", "status": "unstable",
                                                                "device": "cuda"},
           {"preset": "7b-full", "status": "not_applicable", "device": "cuda"}]
    out = busy.measure_busy(_FakeSampler(rows), fts)
    assert [(m["params"]["preset"], m["value"], m["params"]["samples"]) for m in out] == [("1b", 100.0, 5),
                                                                                          ("8b-lora", 95.0, 3)]
    assert out[0]["benchmark"] == "gpu_busy" and out[0]["unit"] == "%"


def test_measure_busy_not_applicable_without_nvml():
    with pytest.raises(NotApplicable, match="no NVML"):
        busy.measure_busy(None, [])


def test_sharing_plan_on_cpu():
    with pytest.raises(NotApplicable, match="no GPU: two fine-tunes on one card need a card to share"):
        plan(QUICK.sharing, "tiny", "cpu")
    assert plan(replace(QUICK.sharing, on_cpu=True), "tiny", "cpu")[:2] == (1, None)
    with pytest.raises(NotApplicable, match="needs a CUDA GPU"):
        plan(replace(STANDARD.sharing, on_cpu=True), "bert-large", "cpu")  # a GPU-only preset


def test_sharing_config_names_the_field():
    with pytest.raises(ValueError, match="jobs"):
        SharingConfig(jobs=1)
    with pytest.raises(ValueError, match="presets"):
        SharingConfig(presets=())


@pytest.mark.slow
def test_sharing_two_processes_end_to_end_on_cpu():
    """The two plain processes start, train alone then together, and report the three figures (CI's only
    run of the machinery: the quick probe marks the part not_applicable on a CPU)."""
    cfg = replace(QUICK.sharing, on_cpu=True, timeout_s=240.0)
    out = measure_sharing(cfg, "tiny", device="cpu")
    got = {m["metric"]: m for m in out}
    assert {"alone_tokens_per_s", "aggregate_tokens_per_s", "sharing_gain"} <= set(got)
    alone, agg = got["alone_tokens_per_s"]["value"], got["aggregate_tokens_per_s"]["value"]
    assert alone > 0 and agg > 0
    assert got["sharing_gain"]["value"] == pytest.approx(agg / alone - 1.0, rel=1e-6)
    assert got["aggregate_tokens_per_s"]["params"]["mps"] is False  # plain processes: nothing changed on the host
