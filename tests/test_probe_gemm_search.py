"""The GEMM shape search (tasks/probe/hardware/gemm_search.py) against synthetic landscapes: no GPU needed.

    .venv/bin/pytest -q tests/test_probe_gemm_search.py

A fake `measure` stands in for the GPU: each landscape maps a shape to TFLOP/s, with or without
reading noise; the search must land within 2% of the landscape's best inside the grid while
measuring a small share of it, and the sweep must try every grid shape.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from tasks.probe.hardware import gemm_search as gs
from tasks.probe.profiles import STANDARD, GemmConfig

CFG = replace(STANDARD.gemm, budget_s=60.0)  # the fake measures instantly: the cap binds, not time


def fake(landscape, noise: float = 0.0, seed: int = 0):
    rng = random.Random(seed)
    calls = []

    def measure(shape, iters, spinup_s, max_timed_s):
        calls.append((shape, iters))
        v = landscape(shape) * (1 + rng.uniform(-noise, noise))
        return {"shape": list(shape), "tflops": v, "tflops_median": v * 0.99, "tflops_max": v,
                "tflops_iqr": 0.0, "iters": iters, "statistic": "median_top5"}
    return measure, calls


def tiled(shape):  # the model itself, scaled: the search's own prior is right
    return 880 * gs.model_score(shape, 132)


def l2_penalised(shape):  # big outputs lose L2 reuse (up to 10%): the model's order is off
    m, n, k = shape
    return 900 * gs.model_score(shape, 132) * (1 - 0.1 * m * n / 2**27)


def far_peak(shape):  # one smooth hill far from every seed
    m, n, k = shape
    return 850 - 0.002 * ((m - 5120) ** 2 / 1024 + (n - 7168) ** 2 / 4096 + (k - 4096) ** 2 / 1024)


def best_in_grid(landscape, dtype="bf16"):
    return max(landscape(s) for s in gs.grid(dtype))


@pytest.mark.parametrize("m, n, sms, want", [
    (3072, 11264, 132, 1.0),  # 24 x 44 = 1056 tiles = 8 full waves
    (8192, 2048, 132, 512 / 528),  # 3.88 waves
    (2048, 7168, 132, 448 / 528),  # the reference shape: 85% of the SM slots busy
    (1024, 1024, 132, 32 / 132),  # one small wave
    (4096, 4096, 108, 512 / 540),  # A100: 108 SMs
])
def test_wave_efficiency(m, n, sms, want):
    assert gs.wave_efficiency(m, n, sms) == pytest.approx(want)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_seeds_start_with_known_good_and_stay_in_the_grid(dtype):
    seeds = gs.seed_shapes(dtype, 132, 16)
    family = "tensor" if dtype == "bf16" else "fp32"
    assert seeds[: len(gs.KNOWN_GOOD[family])] == gs.KNOWN_GOOD[family]
    assert len(seeds) == len(set(seeds)) == 16 and set(seeds) <= set(gs.grid(dtype))


@pytest.mark.parametrize("shape, seen, want", [
    ((1024, 1024, 1024), set(), {(1024, 2048, 1024), (2048, 1024, 1024), (1024, 1024, 2048)}),
    ((8192, 16384, 8192), set(), {(8192, 15360, 8192), (7168, 16384, 8192), (8192, 16384, 7168)}),
    ((4096, 4096, 4096), {(4096, 5120, 4096), (5120, 4096, 4096)},
     {(4096, 3072, 4096), (3072, 4096, 4096), (4096, 4096, 5120), (4096, 4096, 3072)}),
])
def test_neighbours_stay_in_the_grid_and_skip_the_measured(shape, seen, want):
    assert set(gs.neighbours(shape, "bf16", seen)) == want


@pytest.mark.parametrize("landscape", [tiled, l2_penalised, far_peak])
@pytest.mark.parametrize("noise", [0.0, 0.01])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_lands_within_2pct_of_the_grid_best(landscape, noise, seed):
    measure, calls = fake(landscape, noise, seed)
    res = gs.search("bf16", CFG, "cpu", measure=measure)
    truth = best_in_grid(landscape)
    assert landscape(tuple(res["shape"])) >= 0.98 * truth, (res["shape"], truth)
    assert res["shapes_tried"] <= gs.MAX_SEARCH_SHAPES
    assert len(calls) == res["shapes_tried"] + CFG.refine_top  # then the refine re-measures the top
    assert [c[1] for c in calls[-CFG.refine_top:]] == [CFG.refine_iters] * CFG.refine_top
    assert all(tuple(c[0]) in set(gs.grid("bf16")) for c in calls)
    assert res["top"][0]["shape"] == res["shape"] and len(res["top"]) == CFG.refine_top


def test_sweep_tries_every_grid_shape():
    measure, calls = fake(far_peak)
    res = gs.search("bf16", replace(CFG, exhaustive=True), "cpu", measure=measure)
    assert res["shapes_tried"] == len(gs.grid("bf16")) == 1024 and res["complete"]
    assert len(res["all"]) == 1024 and res["shape"] == [5120, 7168, 4096]


def test_budget_stops_the_search_but_one_shape_is_always_measured():
    measure, _ = fake(tiled)
    res = gs.search("bf16", replace(CFG, budget_s=1e-9), "cpu", measure=measure)
    assert res["shapes_tried"] == 1 and not res["complete"]


@pytest.mark.parametrize("field, value", [("seeds", 0), ("climb_from", 0)])
def test_config_names_the_bad_field(field, value):
    with pytest.raises(ValueError, match=field):
        GemmConfig(**{field: value})


def test_rank_capped_times_every_candidate_on_cpu():
    from tasks.probe.hardware.gemm_sustained import rank_capped
    from tasks.probe.profiles import SustainedConfig

    cfg = SustainedConfig(pick_ramp_s=0.01, pick_window_s=0.01, pick_rounds=2)
    rates = rank_capped([[64, 64, 64], [128, 128, 128]], cfg, device="cpu")
    assert len(rates) == 2 and all(r > 0 and math.isfinite(r) for r in rates)
