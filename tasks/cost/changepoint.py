"""Change detection: did tokens/s shift when the environment changed (driver, CUDA, cuDNN, torch, image)?

    costgap gap A B          # lists significant shifts for both targets under "changes"

For each (target, preset), successful runs are ordered in time and cut where any of ENV_FIELDS changes
between two known values (a run that did not record a field keeps its group's last known value).
At each cut, the runs before it (since the previous cut, at most `max_side` of them) are compared with
the runs after it (until the next cut) by a two-sided permutation test on the mean of log tokens/s.
A shift is significant when its p-value is below `alpha` AND its size is at least `min_shift` (a 0.5%
shift can be "significant" over enough runs and still not matter for cost). The size is the ratio of
geometric means minus one, with a 90% bootstrap interval. Level: alpha = 0.01 per cut by default;
tests/test_changepoint.py checks the false-alarm rate on pure noise over many seeds.
Vectorised: cuts with the same (runs before, runs after) share one random permutation matrix, so all
their permutation means are one matrix product (1,000 cuts of 30 + 30 runs take well under a second).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import polars as pl

from tasks.errors import UserError
from warehouse.sql import frame_numpy

ENV_FIELDS = ("driver", "cuda_driver", "cuda_runtime", "cudnn", "torch", "container_image")


@dataclass(frozen=True)
class DetectConfig:
    alpha: float = 0.01  # per-cut false-alarm level of the permutation test
    min_shift: float = 0.02  # smallest |shift| worth reporting: 2% of tokens/s moves cost by 2%
    min_runs: int = 3  # fewer runs on either side of a cut cannot support a test
    max_side: int = 30  # runs used on each side: the nearest ones, so old drift does not leak in
    permutations: int = 4000  # resolution of the p-value: the smallest is 1/4001
    boot: int = 2000  # bootstrap draws for the shift's 90% interval
    seed: int = 0  # fixed: the same history always gives the same findings

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise UserError(f"alpha = {self.alpha!r}: expected a level in (0, 1)")
        if self.min_shift < 0:
            raise UserError(f"min_shift = {self.min_shift!r}: expected >= 0")
        if self.min_runs < 2:
            raise UserError(f"min_runs = {self.min_runs!r}: expected >= 2")
        if self.permutations < 100 or self.boot < 100:
            raise UserError("permutations and boot: expected >= 100 each")


def _tests(logs: np.ndarray, nb: int, cfg: DetectConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Permutation test + bootstrap interval for C cuts at once; logs is [nb + na, C] (before rows first)."""
    n, na = logs.shape[0], logs.shape[0] - nb
    observed = logs[nb:].mean(axis=0) - logs[:nb].mean(axis=0)
    keys = rng.random((cfg.permutations, n))
    member = (np.argsort(keys, axis=1) < nb).astype(float)  # row: which pooled values play "before"
    before_sum = member @ logs
    diffs = (logs.sum(axis=0) - before_sum) / na - before_sum / nb
    p_value = (1 + (np.abs(diffs) >= np.abs(observed) - 1e-12).sum(axis=0)) / (cfg.permutations + 1)
    wb = rng.multinomial(nb, np.full(nb, 1.0 / nb), size=cfg.boot) / nb  # bootstrap weights per side
    wa = rng.multinomial(na, np.full(na, 1.0 / na), size=cfg.boot) / na
    boot = np.exp(wa @ logs[nb:] - wb @ logs[:nb]) - 1.0
    lo, hi = np.quantile(boot, [0.05, 0.95], axis=0)
    shift = np.exp(observed) - 1.0
    return {"shift": shift, "shift_lo": lo, "shift_hi": hi, "p_value": p_value,
            "significant": (p_value < cfg.alpha) & (np.abs(shift) >= cfg.min_shift)}


def _fmt(v) -> str:
    return "unknown" if v is None else str(v)


def _cuts(frame: pl.DataFrame, cfg: DetectConfig) -> list[tuple[int, int, int]]:
    """(start of before, cut, end of after) row indices for every testable environment change."""
    group = (frame["target"] + "\x1f" + frame["preset"]).to_numpy()
    sig = frame.select(pl.concat_str([pl.col(f).cast(pl.String).fill_null("\x00") for f in ENV_FIELDS],
                                     separator="\x1f")).to_series().to_numpy()
    n = len(group)
    new_group = np.r_[True, group[1:] != group[:-1]]
    cut = np.r_[False, (sig[1:] != sig[:-1]) & ~new_group[1:]]
    bounds = np.nonzero(new_group | cut)[0].tolist() + [n]  # segment starts, then the end
    out = []
    for j in range(1, len(bounds) - 1):
        i = bounds[j]
        if not cut[i]:
            continue
        lo, hi = max(bounds[j - 1], i - cfg.max_side), min(bounds[j + 1], i + cfg.max_side)
        if i - lo >= cfg.min_runs and hi - i >= cfg.min_runs:
            out.append((lo, i, hi))
    return out


def scan_frame(frame: pl.DataFrame, cfg: DetectConfig, rng: np.random.Generator) -> list[dict]:
    """Test every environment change; frame rows in (target, preset, time) order (cost_env_history.sql)."""
    if frame.is_empty():
        return []
    # A field a run did not record (NULL) takes its group's last known value (the first, before any):
    # "not recorded" is never an environment change.
    frame = frame.with_columns([pl.col(f).forward_fill().backward_fill().over("target", "preset") for f in ENV_FIELDS])
    cuts = _cuts(frame, cfg)
    logs = np.log(frame["tokens_per_s"].to_numpy().astype(float))
    results: dict[int, dict] = {}
    by_shape: dict[tuple[int, int], list[int]] = {}
    for k, (lo, i, hi) in enumerate(cuts):
        by_shape.setdefault((i - lo, hi - i), []).append(k)
    for (nb, na), ks in sorted(by_shape.items()):
        mat = np.stack([logs[cuts[k][0]:cuts[k][2]] for k in ks], axis=1)
        res = _tests(mat, nb, cfg, rng)
        for col, k in enumerate(ks):
            results[k] = {name: (bool(v[col]) if name == "significant" else float(v[col])) for name, v in res.items()}
    found = []
    tokens = frame["tokens_per_s"].to_numpy()
    for k, (lo, i, hi) in enumerate(cuts):
        prev, nxt = frame.row(i - 1, named=True), frame.row(i, named=True)
        res = results[k]
        changed = [{"field": f, "before": prev[f], "after": nxt[f]} for f in ENV_FIELDS if prev[f] != nxt[f]]
        what = ", ".join(f"{c['field']} {_fmt(c['before'])} -> {_fmt(c['after'])}" for c in changed)
        found.append({
            "target": nxt["target"], "preset": nxt["preset"], "at": nxt["started_at"].isoformat(),
            "run_before": prev["run_id"], "run_after": nxt["run_id"], "runs_before": i - lo, "runs_after": hi - i,
            "tokens_per_s_before": float(np.median(tokens[lo:i])), "tokens_per_s_after": float(np.median(tokens[i:hi])),
            **res, "confidence": 1.0 - res["p_value"], "changed": changed,
            "summary": (f"{nxt['target']}/{nxt['preset']} at {nxt['started_at']:%Y-%m-%d}: {what}: tokens/s "
                        f"{res['shift']:+.1%} (90% CI {res['shift_lo']:+.1%}..{res['shift_hi']:+.1%}), "
                        f"p = {res['p_value']:.4f}"),
        })
    return found


def _ranks(x: np.ndarray, n: int) -> np.ndarray:
    """At most n values: the sample itself, or n evenly spaced order statistics of it (same centre and
    spread), so a window of thousands of runs is tested like one of `max_side` (the test stays cheap)."""
    if x.size <= n:
        return x
    return np.sort(x)[np.round(np.linspace(0, x.size - 1, n)).astype(int)]


def window_shift(before, after, cfg: DetectConfig | None = None) -> dict | None:
    """The same test between two windows' runs (tokens/s of each run, any order): shift, 90% interval,
    p-value and `significant`, or None when either side has fewer than `min_runs` runs. A side of more
    than `max_side` runs is read as `max_side` evenly spaced order statistics. The alerts' "throughput
    shifted" (tasks.alerts.moves) reads it for two windows of the grid (tasks.cost.grid)."""
    cfg = cfg or DetectConfig()
    b, a = (_ranks(np.log(np.asarray(x, dtype=float)), cfg.max_side) for x in (before, after))
    if b.size < cfg.min_runs or a.size < cfg.min_runs:
        return None
    res = _tests(np.concatenate([b, a])[:, None], b.size, cfg, np.random.default_rng(cfg.seed))
    return {name: (bool(v[0]) if name == "significant" else float(v[0])) for name, v in res.items()}


def scan(rows: list[dict], cfg: DetectConfig, rng: np.random.Generator) -> list[dict]:
    """scan_frame for one history given as dicts in time order (tests, small callers)."""
    return scan_frame(pl.DataFrame(rows, infer_schema_length=None), cfg, rng)


def detect(con: duckdb.DuckDBPyConnection, *, targets: list[str] | None = None, preset: str | None = None,
           since: datetime | None = None, until: datetime | None = None, only_significant: bool = True,
           config: DetectConfig | None = None) -> list[dict]:
    """Findings for every (target, preset) in range, oldest first; significant ones only by default.

    Each finding: target, preset, at, run_before, run_after, runs_before, runs_after, tokens_per_s_before,
    tokens_per_s_after, shift, shift_lo, shift_hi, p_value, confidence, significant, changed
    ([{field, before, after}]), summary (one line for a report or an artifact).
    """
    cfg = config or DetectConfig()
    history = frame_numpy(con, "cost_env_history",
                          {"since": since, "until": until, "targets": targets, "preset": preset})
    found = scan_frame(history, cfg, np.random.default_rng(cfg.seed))
    if only_significant:
        found = [x for x in found if x["significant"]]
    return sorted(found, key=lambda x: (x["at"], x["target"], x["preset"]))
