"""The collective and step models (tasks/estimate/scaling.py, collective.py), the link data they read, the
fabric vocabulary and the probe's fingerprint mapped onto it (issue 42). Table-driven, no warehouse.

    .venv/bin/pytest -q tests/test_scaling.py
"""

from __future__ import annotations

import math

import pytest

from tasks.estimate import collective, links, public_rows as pr
from tasks.estimate.scaling import expected_max, predict_busbw, predict_scaling
from tasks.fabric import check_fabric, parse_network
from tasks.probe.host import interconnect

# A fit written out by hand so the arithmetic below is exact: the committed one is checked apart.
FIT = {"fabrics": {
    "nvlink": {"fraction": 0.8, "hop_us": 3.4, "log_halfwidth": 0.1, "rows": ["a", "b", "d"]},  # switch, bridge, mesh
    "nvlink+nvls": {"fraction": 1.05, "hop_us": 3.4, "log_halfwidth": 0.1, "rows": ["c"]},
    "pcie-host": {"fraction": 0.15, "hop_us": 5.7, "log_halfwidth": 0.3, "rows": ["e"]}},
    "pooled_p2p": {"fraction": 0.6, "hop_us": 5.7, "log_halfwidth": 0.5, "rows": ["a", "d"], "fabrics": ["nvswitch", "nvlink"]},
    "networks": {"rdma": {"fraction": 0.6, "hop_us": 9.6, "log_halfwidth": 0.2, "rows": ["f"]}},
    "step": {"overlap": 0.5, "jitter": 0.03, "jitter_lo": 0.0, "jitter_hi": 0.2, "rows": ["g"]}}
WORK = dict(params=7e9, trainable_params=7e9, tokens_per_gpu_step=16384, tokens_per_s_1=3000.0)


@pytest.mark.parametrize("gpu, fabric, raw", [
    ("H100-SXM", "nvswitch", 450.0), ("A100-SXM4-80GB", "nvswitch", 300.0), ("V100-SXM2-32GB", "nvlink", 150.0),
    ("A10", "pcie", 16 * 128 / 130 * 16 / 8), ("H100-SXM", "pcie-host", 32 * 128 / 130 * 16 / 8),
    ("V100-SXM2", "pcie-host", 8 * 128 / 130 * 16 / 8),
])
def test_links_raw_bandwidth_from_the_datasheet(gpu, fabric, raw):
    got, fact = links.fabric_gbps(links.links_of(gpu), fabric)
    assert got == pytest.approx(raw) and "gpu_specs.json" in fact


@pytest.mark.parametrize("gpu, fabric, why", [
    ("A10", "nvlink", "has no NVLink"), ("RTX 4090", "pcie", "cannot do peer-to-peer"), ("A10", "wires", "unknown"),
])
def test_links_refuse_a_fabric_the_card_cannot_have(gpu, fabric, why):
    got, reason = links.fabric_gbps(links.links_of(gpu), fabric)
    assert got is None and why in reason


@pytest.mark.parametrize("text, kind, gbps", [("efa:3200", "efa", 3200.0), ("RDMA:400", "rdma", 400.0),
                                               ("ib:200", "rdma", 200.0), (" tcp : 25 ", "tcp", 25.0)])
def test_network_strings(text, kind, gbps):
    net = parse_network(text)
    assert (net.kind, net.gbps, net.gbytes_per_s) == (kind, gbps, gbps / 8)


@pytest.mark.parametrize("bad", ["wifi:10", "tcp", "tcp:-1", "efa:fast"])
def test_bad_network_or_fabric_is_refused(bad):
    with pytest.raises(ValueError, match="expected KIND:GBPS"):
        parse_network(bad)
    with pytest.raises(ValueError, match="expected one of nvswitch"):
        check_fabric("fast")


@pytest.mark.parametrize("n, size, want", [
    # a large message: busbw is the raw bandwidth x the fraction; latency is nothing
    (8, 2**34, 450 * 0.8), (2, 2**34, 450 * 0.8),
    # a small one: alpha(n) = 2(n-1) hops dominates, busbw collapses
    (8, 2**16, 2**16 * 2 * 7 / 8 / (14 * 3.4e-6 + 2**16 * 2 * 7 / 8 / (360e9)) / 1e9),
])
def test_ring_all_reduce_busbw(n, size, want):
    got = predict_busbw("H100-SXM", n, "nvswitch", size_bytes=size, nvls=False, fit=FIT)
    assert got.gbps == pytest.approx(want, rel=1e-3)
    assert got.lo == pytest.approx(got.gbps / math.exp(0.1), rel=1e-3) or size < 2**20
    assert "predicted from nvswitch, busbw" in got.label


@pytest.mark.parametrize("gpu, nccl, nvls", [("H100-SXM", None, True), ("H100-SXM", "2.16.2", False),
                                            ("H100-SXM", "2.18.1", True), ("A100-SXM4-80GB", "2.21.5", False)])
def test_nvlink_sharp_where_the_switch_and_nccl_do_it(gpu, nccl, nvls):
    assert collective.nvls_auto(links.links_of(gpu), "nvswitch", nccl) is nvls
    got = predict_busbw(gpu, 8, "nvswitch", nccl_version=nccl, fit=FIT)
    assert got.nvls is nvls and ("NVLink SHARP" in got.label) is nvls


def test_multi_node_is_hierarchical_and_the_slower_phase_sets_the_pace():
    one = predict_busbw("A100-SXM4-40GB", 8, "nvswitch", size_bytes=2**32, fit=FIT)
    for nodes, gbps in ((2, 400), (4, 400), (2, 3200)):
        got = predict_busbw("A100-SXM4-40GB", 8, "nvswitch", nodes, f"rdma:{gbps}", size_bytes=2**32, fit=FIT)
        intra = 2 * 2**32 * 7 / 8 / (300 * 0.8e9)
        inter = 2**32 * 2 * (nodes - 1) / nodes / (gbps / 8 * 0.6e9)
        n = 8 * nodes
        assert got.gbps == pytest.approx(2**32 * 2 * (n - 1) / n / max(intra, inter) / 1e9, rel=1e-2)
        assert got.gbps < one.gbps * 2 and "hierarchical" in got.reason


@pytest.mark.parametrize("kw, why", [
    (dict(fabric=None), "fabric unknown"), (dict(fabric="pcie-host", gpu="Mystery GPU"), "no datasheet entry"),
    (dict(nodes=2), "network between them is unknown"), (dict(nodes=2, network="tcp:25"), "no public multi-node rows over tcp"),
    (dict(nodes=2, network="tcp"), "expected KIND:GBPS"),
])
def test_no_estimate_says_why(kw, why):
    args = dict(gpu="H100-SXM", count=8, fabric="nvswitch") | kw
    gpu, count, fabric = args.pop("gpu"), args.pop("count"), args.pop("fabric")
    for got in (predict_busbw(gpu, count, fabric, fit=FIT, **args),
                predict_scaling(gpu, count, fabric, fit=FIT, **WORK, **args)):
        assert why in got.reason and getattr(got, "gbps", getattr(got, "efficiency", None)) is None


def test_pcie_without_rows_of_its_own_borrows_the_peer_to_peer_pool_and_says_so():
    got = predict_busbw("A10", 2, "pcie", fit=FIT)
    assert got.gbps == pytest.approx(16 * 128 / 130 * 16 / 8 * 0.6, rel=1e-3) and "pooled over nvswitch, nvlink" in got.reason
    assert got.hi / got.lo == pytest.approx(math.exp(2 * 0.5), rel=1e-2)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 16])
def test_expected_max_of_normals(n):
    known = {1: 0.0, 2: 1 / math.sqrt(math.pi), 3: 1.5 / math.sqrt(math.pi), 4: 1.0294, 8: 1.4236, 16: 1.7660}
    assert expected_max(n) == pytest.approx(known[n], abs=2e-4)


def test_one_gpu_scales_perfectly():
    s = predict_scaling("H100-SXM", 1, None, fit=FIT, **WORK)
    assert (s.efficiency, s.lo, s.hi, s.comm_s) == (1.0, 1.0, 1.0, 0.0)


@pytest.mark.parametrize("gpu, count, fabric, nodes, network", [
    ("H100-SXM", 8, "nvswitch", 1, None), ("V100-SXM2", 2, "nvlink", 1, None), ("A10", 2, "pcie", 1, None),
    ("RTX 4090", 2, "pcie-host", 1, None), ("A100-SXM4-80GB", 8, "nvswitch", 4, "rdma:1600"),
])
def test_interval_brackets_the_point_and_the_reason_names_every_assumption(gpu, count, fabric, nodes, network):
    s = predict_scaling(gpu, count, fabric, nodes=nodes, network=network, fit=FIT, **WORK)
    assert 0 < s.lo <= s.efficiency <= s.hi <= 1
    assert s.compute_s == pytest.approx(16384 / 3000) and s.comm_s > 0 and s.busbw_gbps > 0
    for part in ("busbw", "DDP all-reduces", "ms of compute", "overlap 0.50", "jitter", "no overlap to full overlap"):
        assert part in s.reason
    assert "\n" not in s.reason


def test_what_moves_the_efficiency():
    base = predict_scaling("A10", 2, "pcie", fit=FIT, **WORK)
    lora = predict_scaling("A10", 2, "pcie", fit=FIT, **(WORK | dict(trainable_params=4e7)))
    fsdp = predict_scaling("A10", 2, "pcie", strategy="fsdp", fit=FIT, **WORK)
    accum = predict_scaling("A10", 2, "pcie", fit=FIT, **(WORK | dict(tokens_per_gpu_step=16384 * 8)))
    fp32 = predict_scaling("A10", 2, "pcie", grad_bytes_per_param=4.0, fit=FIT, **WORK)
    assert lora.efficiency > base.efficiency and "adapter gradients" in lora.reason  # adapters only
    assert fsdp.comm_s > base.comm_s and "FSDP all-gathers" in fsdp.reason  # 1.5x the bytes at least
    assert accum.efficiency > base.efficiency  # the same gradients over 8x the compute
    assert fp32.comm_s == pytest.approx(2 * base.comm_s, rel=0.05) and fp32.efficiency < base.efficiency
    with pytest.raises(TypeError):
        predict_scaling("A10", 2, "pcie", fit=FIT)  # every workload figure is required


@pytest.mark.parametrize("fit", [FIT, None], ids=["hand fit", "committed fit"])
def test_a_pcie_pair_without_peer_to_peer_is_strictly_below_an_nvswitch_node(fit):
    """The same workload (a 7B full fine-tune step) on an NVSwitch node and on a PCIe pair without peer-to-peer:
    the pair scales strictly worse (its point, and its interval's low end: no overlap), however many GPUs."""
    switch = predict_scaling("H100-SXM", 8, "nvswitch", fit=fit, **WORK)
    pair = predict_scaling("RTX 4090", 2, "pcie-host", fit=fit, **WORK)
    assert pair.efficiency < switch.efficiency and pair.lo < switch.lo
    assert pair.comm_share > switch.comm_share and pair.busbw_gbps < switch.busbw_gbps / 10


TOPO_HEAD = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"


def _topo(codes: list[list[str]]) -> str:
    n = len(codes)
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\n"
    return head + "".join(f"GPU{i}\t" + "\t".join(row) + "\t0-15\n" for i, row in enumerate(codes))


@pytest.mark.parametrize("codes, p2p, active, fabric", [
    ([["X", "NV18", "NV18"], ["NV18", "X", "NV18"], ["NV18", "NV18", "X"]], True, [18, 18, 18], "nvswitch"),
    ([["X", "NV12"], ["NV12", "X"]], True, [12, 12], "nvlink"),  # a bridged pair: a switch or not, same links
    ([["X", "NV2", "SYS"], ["NV2", "X", "NV1"], ["SYS", "NV1", "X"]], True, [6, 6, 6], "nvlink"),  # cube mesh
    ([["X", "NV2", "NV2"], ["NV2", "X", "NV2"], ["NV2", "NV2", "X"]], True, [6, 6, 6], "nvlink"),  # links split
    ([["X", "PIX"], ["PIX", "X"]], True, None, "pcie"), ([["X", "PXB"], ["PXB", "X"]], None, None, "pcie"),
    ([["X", "SYS"], ["SYS", "X"]], True, None, "pcie"), ([["X", "PIX"], ["PIX", "X"]], False, None, "pcie-host"),
    ([["X", "PHB"], ["PHB", "X"]], None, None, "pcie-host"), ([["X", "NODE"], ["NODE", "X"]], None, None, "pcie-host"),
])
def test_fingerprint_maps_topology_onto_the_fabric_vocabulary(codes, p2p, active, fabric):
    _rows, got = interconnect.parse_topo(_topo(codes))
    assert interconnect.fabric_of(got, p2p, active) == fabric and fabric in interconnect.FABRICS
    assert interconnect.fabric_of({}, p2p, active) is None


def test_the_committed_fit_is_what_the_fit_rows_give_and_never_reads_a_holdout_row():
    from tasks.estimate import collective_fit

    fit = collective.load_fit()
    assert fit is not None and collective_fit.main(["--check"]) == 0
    holdout = {r["row_id"] for r in pr.busbw_rows("holdout")} | {r["row_id"] for r in pr.scaling_rows("holdout")}
    used = {x for g in (*fit["fabrics"].values(), *fit["networks"].values(), fit["step"]) for x in g["rows"]}
    assert used and not used & holdout
    assert all(r["row_id"] in used or r["unscoreable"] for r in pr.scaling_rows("fit"))


def test_every_nvlink_fabric_reads_one_fraction_and_sharp_its_own():
    """A bridged pair, a mesh and an NVSwitch board use the same links: one fitted fraction (collective.py)."""
    assert collective.fit_key("nvswitch", False) == collective.fit_key("nvlink", False) == "nvlink"
    assert collective.fit_key("nvswitch", True) == "nvlink+nvls" and collective.fit_key("pcie-host", False) == "pcie-host"
    bridged = predict_busbw("A40", 2, "nvlink", size_bytes=2**34, fit=FIT)
    assert bridged.gbps == pytest.approx(56.25 * 0.8, rel=1e-3) and "NVLink family" in bridged.reason


@pytest.mark.parametrize("gpu, count, fabric, nvls, ceiling", [
    ("A100-SXM4-80GB", 8, "nvswitch", False, 300.0),  # a ring never carries more than the line rate
    ("H100-SXM", 8, "nvswitch", True, 450 * 2 * 7 / 8),  # SHARP: algbw <= line rate, busbw <= 2(n-1)/n x it
])
def test_an_interval_never_passes_what_the_wire_allows(gpu, count, fabric, nvls, ceiling):
    wide = {**FIT, "fabrics": {k: {**v, "log_halfwidth": 3.0} for k, v in FIT["fabrics"].items()}}
    got = predict_busbw(gpu, count, fabric, size_bytes=2**36, nvls=nvls, fit=wide)
    assert got.lo < got.gbps < got.hi <= ceiling * 1.0001


def test_the_spread_comes_from_runs_predicted_with_their_source_left_out():
    """Three sources measuring 1, 2 and 4 x a raw of 1: each is predicted from the other two (the mean of their
    logs), so its residual is its distance from them; a group of fewer sources takes the pool's spread."""
    from tasks.estimate import collective_spread as sp

    items = [({"source": s, "system": s, "gpus_per_node": 2, "nodes": 1, "network": None, "fabric": "nvlink",
               "row_id": s, "busbw_gbps": v}, None) for s, v in (("a", 1.0), ("b", 2.0), ("c", 4.0))]
    geo = lambda its: math.exp(sum(math.log(r["busbw_gbps"]) for r, _ in its) / len(its))  # noqa: E731
    runs = sp.leave_one_source_out(items, geo, lambda te, x: [x] * len(te))
    assert [x["log_error"] for x in runs] == pytest.approx([1.5 * math.log(2), 0.0, -1.5 * math.log(2)], abs=1e-3)  # 4 significant digits
    entries = {"big": {"sources": ["a", "b", "c"]}, "small": {"sources": ["d"]}}
    pool = sp.attach(entries, {"big": runs}, "intra-node")
    assert entries["big"]["log_halfwidth"] == pytest.approx(sp.halfwidth([x["log_error"] for x in runs]), rel=1e-4)
    assert entries["small"]["log_halfwidth"] == pytest.approx(pool["log_halfwidth"]) and pool["log_halfwidth"] > 0
    assert sp.leave_one_source_out(items[:1], geo, lambda te, x: [x]) == []  # one source cannot say its spread


def test_the_committed_fit_leaves_out_the_rows_whose_source_reports_a_defect():
    fit = collective.load_fit()
    defect = {r["row_id"] for r in pr.busbw_rows("fit") if r["defect"]}
    used = {x for g in (*fit["fabrics"].values(), *fit["networks"].values()) for x in g["rows"]}
    assert defect and not defect & used
    assert all(any(line.startswith(f"{i}: defect:") for line in fit["left_out"]) for i in defect)
    assert not fit["host_paths"]["factor"] and "pcie-host" in fit["fabrics"]


@pytest.mark.parametrize("gbps, text", [(230.4, "230"), (1234.5, "1,234"), (57.2, "57"), (4.14, "4.1"), (0.26, "0.26")])
def test_a_busbw_label_never_reads_zero(gbps, text):
    assert collective.gbps_text(gbps) == text
