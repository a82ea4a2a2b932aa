"""Statistics for the cost model (tasks.cost.model): bootstrap medians, Beta posterior draws, intervals.

    .venv/bin/pytest -q tests/test_cost_model.py

The bootstrap over runs is vectorised through order statistics instead of resample arrays. For n
sorted values x_(1..n) and a resample's m-th order statistic y_(m): y_(m) <= x_(k) exactly when at
least m of the n draws land in the first k values, so P(y_(m) <= x_(k)) = P(Binomial(n, k/n) >= m).
One uniform inverted through that CDF gives y_(m). Odd n: the median is y_((n+1)/2), done. Even n
(m = n/2): the median also needs y_(m+1). Given y_(m) = x_(k), y_(m+1) is x_(k) too unless exactly m
draws fell in the first k values, which has probability Bin(n, k/n).pmf(m) (1 - ((k-1)/k)^m) over
P(y_(m) = x_(k)); in that case the other n - m draws are uniform over the n - k values above, and the
first of them lies J values up with P(J > j) = (1 - j/(n-k))^(n-m), inverted in closed form.
So the bootstrap distribution of the median is drawn exactly, in O(n + B) per distinct n.
"""

from __future__ import annotations

import numpy as np

PRIOR_FAILED, PRIOR_OK = 0.5, 0.5  # Jeffreys prior for the failure rate: Beta(1/2, 1/2)


def _median_draws(x: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Exact bootstrap draws of the median for the rows of x (each row one sorted sample of size n)."""
    from scipy.stats import binom  # imported here: the CLI loads this module, and scipy takes a while

    groups, n = x.shape
    k = np.arange(1, n + 1)
    m = (n + 1) // 2 if n % 2 else n // 2
    sf = binom.sf(m - 1, n, k / n)  # P(y_(m) <= x_(k))
    k1 = np.minimum(np.searchsorted(sf, rng.random((groups, draws))), n - 1)  # 0-based index of y_(m)
    rows = np.arange(groups)[:, None]
    if n % 2:
        return x[rows, k1]
    p_at = np.diff(np.concatenate([[0.0], sf]))  # P(y_(m) = x_(k))
    p_split = binom.pmf(m, n, k / n) * (1.0 - ((k - 1) / k) ** m)  # ... and exactly m draws <= x_(k)
    q_same = np.where(p_at > 0, 1.0 - p_split / np.where(p_at > 0, p_at, 1.0), 1.0)
    same = rng.random((groups, draws)) < q_same[k1]
    above = (n - 1 - k1).astype(float)  # values above y_(m)
    u = rng.random((groups, draws))
    jump = np.maximum(1, np.ceil(above * (1.0 - u ** (1.0 / (n - m))))).astype(np.int64)
    k2 = np.where(same | (above == 0), k1, np.minimum(k1 + jump, n - 1))
    return 0.5 * (x[rows, k1] + x[rows, k2])


def bootstrap_medians(values: np.ndarray, offsets: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Resampled medians for many groups at once (the exact bootstrap distribution of the median).

    values: every group's sample, each group sorted ascending, groups back to back;
    offsets: start of each group in `values` plus the total length (len = groups + 1).
    Returns [groups, draws]. Groups of one value return that value.
    """
    sizes = np.diff(offsets)
    out = np.empty((len(sizes), draws))
    for n in np.unique(sizes):
        rows = np.nonzero(sizes == n)[0]
        x = values[offsets[rows][:, None] + np.arange(n)[None, :]]
        out[rows] = _median_draws(x, draws, rng)
    return out


def smooth(draws: np.ndarray, cv: np.ndarray, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Smoothed bootstrap: the run-to-run CV (repeatability, issue 10.4) as the kernel width.

    A smoothed bootstrap jitters every resampled run by a kernel of width h (Silverman: h = cv n^(-1/5),
    relative); the median of n jittered values moves by about h sqrt(pi / (2 n)), so each median draw
    is jittered by that much (lognormal, keeps draws positive). No CV (one run per environment): as is.
    """
    n = np.maximum(sizes, 1).astype(float)
    width = np.where(np.isfinite(cv), cv, 0.0) * n ** -0.2 * np.sqrt(np.pi / (2.0 * n))
    return draws * np.exp(rng.standard_normal(draws.shape) * width[:, None])


def unsteady(draws: np.ndarray, spreads: np.ndarray, runs: int, rng: np.random.Generator) -> np.ndarray:
    """Widen draws of X by the runs whose steady-state rule did not converge (issue 37.5).

    Each draw picks one of the `runs` runs at random. An unsteady run (its window spread s: (max - min) /
    median of its steady part's window tokens/s; `spreads` holds one per unsteady run) moves the draw by
    a uniform factor in [1 - s/2, 1 + s/2], the range its windows spanned around their median; a steady
    run (already bounded at 1% by the rule, and in the run-to-run CV) leaves it as is. All runs unsteady
    at spread s: the 90% interval of X spans about 0.9 s.
    """
    per_run = np.zeros(max(runs, len(spreads)))
    per_run[:len(spreads)] = spreads
    pick = per_run[rng.integers(0, len(per_run), size=draws.shape)]
    return draws * (1.0 + pick * (rng.random(draws.shape) - 0.5))


def failure_rate_draws(failed: np.ndarray, attempts: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Posterior draws of p per group: Beta(failed + 1/2, ok + 1/2). Returns [groups, draws]."""
    ok = attempts - failed
    a = (failed + PRIOR_FAILED)[:, None] * np.ones((1, draws))
    b = (ok + PRIOR_OK)[:, None] * np.ones((1, draws))
    return rng.beta(a, b)


def interval(draws: np.ndarray, point: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Central `level` interval of draws per row, widened to contain the point estimate."""
    lo_q, hi_q = (1 - level) / 2, 1 - (1 - level) / 2
    lo, hi = np.nanquantile(draws, [lo_q, hi_q], axis=1)
    return np.fmin(lo, point), np.fmax(hi, point)
