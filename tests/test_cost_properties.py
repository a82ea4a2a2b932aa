"""Property tests (hypothesis) of the cost model: the decomposition is exact, R >= 1 with R = 1 at p = 0,
run order never changes C, and the order-statistic bootstrap matches brute-force resampling.

    .venv/bin/pytest -q tests/test_cost_properties.py
"""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.cost import stats
from tasks.cost.model import LEVEL, decompose, effective_cost, lost_fraction, rerun_factor
from tasks.cost.table import cost_table
from tests.cost_support import T0, add_env, add_price, add_run, add_target, warehouse

prices = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)
rates = st.floats(min_value=1e-2, max_value=1e7, allow_nan=False)
fails = st.floats(min_value=0.0, max_value=0.99)
fracs = st.floats(min_value=0.0, max_value=1.0)


@given(prices, rates, fails, prices, rates, fails, fracs)
def test_terms_sum_to_ln_cost_ratio(pa, xa, p_a, pb, xb, p_b, f):
    ra, rb = rerun_factor(p_a, f), rerun_factor(p_b, f)
    ln_ratio, terms = decompose((pa, xa, ra), (pb, xb, rb))
    assert abs(sum(terms.values()) - ln_ratio) <= 1e-9
    assert abs(ln_ratio - math.log(effective_cost(pa, xa, ra) / effective_cost(pb, xb, rb))) <= 1e-9


@given(fails, fracs)
def test_rerun_factor_is_at_least_one_and_one_without_failures(p, f):
    assert rerun_factor(p, f) >= 1.0
    assert rerun_factor(0.0, f) == 1.0
    assert rerun_factor(p, 0.0) == 1.0


@given(st.floats(min_value=1e-3, max_value=1.0))
def test_checkpoint_interval_sets_the_lost_fraction(c):
    assert lost_fraction(c) == c / 2 and lost_fraction(None) == 0.5


@settings(max_examples=10, deadline=None)
@given(values=st.lists(st.floats(min_value=10.0, max_value=1e5), min_size=1, max_size=9),
       failed=st.integers(min_value=0, max_value=4), order=st.randoms(use_true_random=False))
def test_run_order_never_changes_cost(values, failed, order):
    results = []
    for attempt in range(2):
        con = warehouse(":memory:")
        add_target(con, "A", "p", "r", "i")
        add_env(con, "env0")
        add_price(con, "p", "r", "i", 3.0)
        idx = list(range(len(values)))
        if attempt:
            order.shuffle(idx)  # other run ids, other times, other insertion order for the same runs
        for slot, i in enumerate(idx):
            add_run(con, f"run{slot}", "A", T0 + timedelta(hours=slot), values[i], failed=int(i == 0) * failed)
        row = cost_table(con, as_of=T0 + timedelta(days=2)).row(0, named=True)
        results.append(row)
        con.close()
    first, second = results
    for key in ("cost_per_mtok", "p", "R", "tokens_per_s", "price_per_hour", "runs", "attempts"):
        assert first[key] == second[key], key  # exactly: C is a function of the set of runs
    for key in ("cost_lo", "cost_hi"):  # the interval too, up to float summation order in the CV
        assert math.isclose(first[key], second[key], rel_tol=1e-9), key


def test_order_statistic_bootstrap_matches_brute_force_resampling():
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 4, 5, 8, 31, 100):
        x = np.sort(rng.lognormal(0, 0.1, n))
        fast = stats.bootstrap_medians(x, np.array([0, n]), 20000, np.random.default_rng(1))[0]
        slow = np.median(x[np.random.default_rng(2).integers(0, n, (20000, n))], axis=1)
        grid = np.unique(np.concatenate([fast, slow]))
        cdf_fast = np.searchsorted(np.sort(fast), grid, side="right") / fast.size
        cdf_slow = np.searchsorted(np.sort(slow), grid, side="right") / slow.size
        assert np.max(np.abs(cdf_fast - cdf_slow)) < 0.025, n  # Kolmogorov distance; noise ~0.01


_day = st.integers(min_value=0, max_value=60)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "y"]), _day, st.one_of(st.none(), st.integers(1, 30)),
                          st.sampled_from([1.0, 2.0, 3.0])), min_size=1, max_size=8))
def test_imports_never_leave_overlapping_periods(ops):
    from datetime import datetime, timezone

    from tasks.pricing import PriceError, PriceRow, import_rows

    con = warehouse(":memory:")
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for i, (itype, start, length, price) in enumerate(ops):
        begin = t0 + timedelta(days=start)
        row = PriceRow("p", "r", itype, "on_demand", "USD", price, "hour", begin, source=f"op{i}",
                       fetched_at=begin, effective_to=begin + timedelta(days=length) if length else None)
        try:
            import_rows(con, [row], source_kind="t", source=f"op{i}", fetched_at=begin)
        except PriceError as e:
            assert "overlaps" in str(e) and f"op{i}" in str(e)
    overlaps = con.execute("""
        select count(*) from prices a join prices b using (provider, region, instance_type, billing_mode)
        where a.effective_from < b.effective_from
          and (a.effective_to is null or a.effective_to > b.effective_from)""").fetchall()[0][0]
    assert overlaps == 0
    open_per_key = con.execute("select max(n) from (select count(*) n from prices where effective_to is null"
                               " group by instance_type)").fetchall()[0][0]
    assert open_per_key in (None, 1)


def test_interval_on_throughput_covers_the_truth_about_ninety_percent_of_the_time():
    hits, seeds, n = 0, 300, 25
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        x = np.sort(20000.0 * np.exp(rng.normal(0, 0.05, n)))  # true median 20000, 5% run-to-run spread
        cv = np.array([np.std(x, ddof=1) / np.mean(x)])
        draws = stats.smooth(stats.bootstrap_medians(x, np.array([0, n]), 2000, rng), cv, np.array([n]), rng)
        lo, hi = stats.interval(draws, np.array([np.median(x)]), LEVEL)
        hits += bool(lo[0] <= 20000.0 <= hi[0])
    assert 0.84 <= hits / seeds <= 0.97, hits / seeds
