"""Build the demo warehouse: the committed real sample bundles, a labelled synthetic history and
illustrative prices, so that a newcomer sees a full report in one command.

    costgap demo --warehouse demo.duckdb --site demo-site

What is measured and what is not:
- every bundle in warehouse/samples/*.json lands exactly as committed (measured, e.g. H200 + CPU);
- for each sample, `weeks` earlier runs are derived from it (time-shifted, throughput scaled by a
  small jitter, an "older stack" image with lower throughput in the first half, some injected OOM
  attempts). They land through the normal path (tasks.landing.land: parsed, validated) and are recorded
  in `provenance` as synthetic;
- prices are illustrative figures (not quotes) with one price cut, recorded as illustrative;
- one target is estimated first (DemoConfig.estimated_first, the H100): the estimator's estimates for it
  are recorded from the other targets' runs before its own bundles land, then its real samples land
  alone and score those estimates (tasks.estimate.estimate_track), then its synthetic history lands. The
  Candidates page draws that track record: estimates against a real measurement.
The report prints every provenance label on every page.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import statistics
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import duckdb

from tasks.errors import UserError
from tasks.bundle import BundleError, read_bundle
from tasks.canonical import canonical_json, seal

SYNTHETIC_NOTE = ("derived by costgap demo from a committed, measured sample bundle: time-shifted, throughput "
                  "scaled by a small jitter; every other target ran an 'older stack' (older driver, 8% slower) "
                  "early on and got more OOM reruns late; not measured")
PRICE_NOTE = ("illustrative prices for the demo (not a quote from any provider): every other target 8% cheaper, "
              "the others cut 15% part-way; monthly at 70% of on-demand; EUR and GBP at fixed illustrative rates")
TARGET_NOTE = "provider, region and instance type invented by costgap demo so that the price book can join"
# Illustrative on-demand USD/h by GPU family: rough public list-price levels seen in 2025-2026, not quotes.
ILLUSTRATIVE_USD_PER_HOUR = {"H200": 3.80, "H100": 2.99, "A100": 1.79, "L40S": 1.25, "A10": 0.75, None: 0.12}
# The seed's question (issue 25, `costgap estimate`): the A10 and V100 types of deploy/targets.toml, priced at
# deploy/prices/examples/illustrative-cn.csv's ILLUSTRATIVE CNY figures (12.00 and 13.00 CNY/h) converted at
# deploy/fx_rates.csv's 2026-10-30 ECB cross rate (6.6529 CNY/USD). Not quotes: replace with real prices.
ILLUSTRATIVE_CANDIDATES = (("alibaba", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", 1.8037),
                           ("tencent", "ap-guangzhou", "GN10Xp.2XLARGE40", 1.9540))



DISCRETE_UNITS = ("bool", "nodes")  # measurements the synthetic runs copy as measured (io_uring, NUMA nodes)

@dataclass(frozen=True)
class DemoConfig:
    """How the synthetic history is made: a story in which each of the three terms moves the gap once.
    Targets take turns (sorted: index 0, 2, ... are "even", 1, 3, ... "odd"). Every field labels itself
    on the page via provenance."""

    weeks: int = 12  # history length: enough weekly points for the over-time and why-it-moved pages
    runs_per_week: int = 2  # per sample; two points a week keep the weekly medians visibly noisy
    jitter: float = 0.02  # +-2% run-to-run throughput: the spread real quick runs show on one host
    older_stack_factor: float = 0.92  # even targets start on an "older stack" 8% slower (throughput term) ...
    upgrade_at: float = 0.35  # ... until 35% of the history: a driver and image change to find
    older_driver: str = "570.124.06"  # the older stack's driver (the measured bundle keeps its own)
    failure_every: int = 8  # on average one synthetic run in n gets an injected OOM attempt ...
    late_failure_every: int = 2  # ... and on even targets one in 2 in the last part (reliability term)
    late_failures_at: float = 0.8  # ... from 80% of the history on
    even_price_factor: float = 0.92  # even targets rent 8% cheaper (another provider, illustratively)
    price_cut: float = 0.85  # odd targets' price drops 15% (price term) ...
    monthly_factor: float = 0.7  # a monthly commitment at 70% of on-demand: the picker's second billing mode
    fx_rates: tuple = (("EUR", 0.92), ("GBP", 0.79))  # ILLUSTRATIVE units per USD: the picker's other currencies
    price_cut_at: float = 0.6  # ... at 60% of the history
    seed: int = 7  # the demo is reproducible from its name alone
    # The target whose estimates are recorded before its bundles land, then scored against its real samples:
    # the H100, the second real GPU type of the committed samples, so the estimator's track record is an H100
    # predicted from H200 runs alone, scored on a real H100 measurement (issue 35.4). No samples: step skipped.
    estimated_first: str | None = "h100-sxm-1x"

    def __post_init__(self) -> None:
        if self.weeks < 2:
            raise ValueError(f"DemoConfig.weeks = {self.weeks}: expected >= 2 (two windows to compare)")
        if self.runs_per_week < 1 or self.failure_every < 1 or self.late_failure_every < 1:
            raise ValueError("DemoConfig.runs_per_week, failure_every and late_failure_every must be >= 1")
        if not 0 <= self.jitter < 0.5:
            raise ValueError(f"DemoConfig.jitter = {self.jitter}: expected 0 <= jitter < 0.5")
        for name in ("older_stack_factor", "price_cut", "price_cut_at", "upgrade_at", "late_failures_at",
                     "even_price_factor"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"DemoConfig.{name} = {getattr(self, name)}: expected a value in (0, 1]")


@dataclass
class DemoSummary:
    samples: list[str] = field(default_factory=list)  # measured bundles landed (run ids)
    synthetic: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    price_rows: int = 0
    estimated_first: str | None = None  # the target estimated before its bundles landed (None: step skipped)
    estimates: int = 0  # estimates recorded for it
    scored: list[dict] = field(default_factory=list)  # estimate_track.score rows against its real samples

    def as_text(self) -> str:
        text = (f"demo: {len(self.samples)} measured sample bundle(s), {len(self.synthetic)} synthetic run(s) "
                f"(labelled), {self.price_rows} illustrative price row(s), targets {', '.join(self.targets)}")
        return text + (f"\n{score_line(self.estimated_first, self.estimates, self.scored)}" if self.estimated_first else "")


def score_line(target: str, recorded: int, scored: list[dict]) -> str:
    """One line on the estimates of `target` scored against its real samples (their tokens/s scores)."""
    scored = [r for r in scored if r.get("kind") != "scaling"]
    if not scored:
        return f"demo: {recorded} estimate(s) for {target} recorded; none scored (no measurement of their presets)"
    median = statistics.median(abs(r["error"]) for r in scored)
    return (f"demo: {len(scored)} of {recorded} estimate(s) for {target} scored against its measured samples: "
            f"median |error| {median:.1%}, {sum(bool(r['inside']) for r in scored)}/{len(scored)} inside "
            "their 90% interval")


CURRENT_STACK = "demo-synthetic:current-stack"  # the image synthetic runs after the upgrade record, when unknown


def sample_dir() -> Path:
    return Path(str(resources.files("warehouse").joinpath("samples")))


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _t(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def synthesize(sample: dict[str, Any], cfg: DemoConfig, rng: random.Random, even: bool = True,
               image: str | None = None) -> list[dict[str, Any]]:
    """Earlier runs derived from one measured bundle (plain dicts, sealed; newest last). `even` targets
    start on the older stack and get more reruns late (DemoConfig). Runs on the current stack record
    `image`, the target's newest sample's container image, so that samples measured by different probe
    versions do not read as image changes back and forth."""
    out = []
    n = cfg.weeks * cfg.runs_per_week
    for k in range(n, 0, -1):
        position = 1.0 - k / n  # 0 = the oldest synthetic run
        # the telemetry (most of a bundle) is never changed here: shared, not copied (a deep copy of it
        # per synthetic run was most of the demo's synthesis time)
        doc = {key: value if key == "telemetry" else copy.deepcopy(value) for key, value in sample.items()}
        doc.pop("bundle_id", None)
        shift = timedelta(days=7 * k / cfg.runs_per_week, hours=rng.uniform(-6, 6))
        for key in ("started_at", "finished_at"):
            doc[key] = _iso(_t(doc[key]) - shift)
        for a in doc.get("attempts", []):
            if a.get("started_at"):
                a["started_at"] = _iso(_t(a["started_at"]) - shift)
        older = even and position < cfg.upgrade_at
        factor = (cfg.older_stack_factor if older else 1.0) * (1 + rng.uniform(-cfg.jitter, cfg.jitter))
        doc["environment"]["container_image"] = image
        if older:
            doc["environment"]["container_image"] = "demo-synthetic:older-stack"
            if doc["environment"].get("driver"):
                doc["environment"]["driver"] = cfg.older_driver
        for ft in doc.get("finetune", []):
            if ft.get("tokens_per_s"):
                ft["tokens_per_s"] *= factor
                for name in ("step_time_median_s", "step_time_p10_s", "step_time_p90_s"):
                    if ft.get(name):
                        ft[name] /= factor
                ft["step_time_s"] = [s / factor for s in ft.get("step_time_s", [])]
                ft["window_tokens_per_s"] = [w * factor for w in ft.get("window_tokens_per_s", [])]
                for name in ("mfu", "j_per_token", "kwh_per_mtok"):
                    if ft.get(name):
                        ft[name] = min(1.0, ft[name] * factor) if name == "mfu" else ft[name] / factor
        for m in doc.get("measurements", []):
            if m.get("unit") in DISCRETE_UNITS:  # a yes/no or a count is what the host is, not a noisy figure
                continue
            m["value"] *= min(1.0, 1 + rng.uniform(-cfg.jitter, cfg.jitter / 4))  # never above the measured
        late = even and position >= cfg.late_failures_at
        if rng.random() < 1.0 / (cfg.late_failure_every if late else cfg.failure_every):
            done = [a for a in doc["attempts"] if str(a["task"]).startswith("finetune") and a["state"] == "completed"]
            if done:  # a failed try before a fine-tune that completed (never for a skipped one)
                first = done[0]
                for a in doc["attempts"]:
                    if a["task"] == first["task"]:
                        a["attempt"] += 1
                doc["attempts"].insert(doc["attempts"].index(first), {
                    "task": first["task"], "attempt": 1, "state": "failed", "error_kind": "oom",
                    "message": "synthetic OOM injected by costgap demo", "duration_s": 3.0})
        doc["origin"] = {"kind": "import", "host": "costgap-demo (synthetic)"}
        out.append(seal(doc))
    return out


def _family(gpu_name: str | None) -> str | None:
    for fam in ILLUSTRATIVE_USD_PER_HOUR:
        if fam and gpu_name and fam in gpu_name.upper():
            return fam
    return None


def _prices(con: duckdb.DuckDBPyConnection, targets: dict[str, str | None], start: datetime, end: datetime,
            cfg: DemoConfig) -> int:
    from tasks.pricing.base import PriceRow
    from tasks.pricing.book import import_rows

    fetched = end
    cut = start + (end - start) * cfg.price_cut_at
    rows = []
    for i, (target, gpu) in enumerate(sorted(targets.items())):
        usd = ILLUSTRATIVE_USD_PER_HOUR[_family(gpu)]
        key = dict(provider="demo", region="demo-1", instance_type=f"{target}.1x", billing_mode="on_demand",
                   currency="USD", original_period="hour", source="costgap demo (illustrative)", fetched_at=fetched)
        if i % 2 == 0:  # even: cheaper throughout
            rows.append(PriceRow(original_amount=round(usd * cfg.even_price_factor, 4),
                                 effective_from=start - timedelta(days=30), **key))
            continue
        rows.append(PriceRow(original_amount=usd, effective_from=start - timedelta(days=30), effective_to=cut, **key))
        rows.append(PriceRow(original_amount=round(usd * cfg.price_cut, 4), effective_from=cut, **key))
    # a monthly commitment beside each on-demand price, quoted per month, so the report's billing choice has
    # something to choose (illustrative, like the rest)
    rows += [dataclasses.replace(r, billing_mode="monthly", original_period="month",
                                 original_amount=round(r.original_amount * cfg.monthly_factor * 730, 2))
             for r in list(rows)]
    for provider, region, itype, usd in ILLUSTRATIVE_CANDIDATES:
        rows.append(PriceRow(provider=provider, region=region, instance_type=itype, billing_mode="on_demand",
                             currency="USD", original_amount=usd, original_period="hour",
                             effective_from=start - timedelta(days=30), fetched_at=fetched,
                             source="costgap demo (illustrative; deploy/prices/examples/illustrative-cn.csv at the "
                                    "2026-10-30 FX rate)"))
    summary = import_rows(con, rows, source_kind="demo", source="costgap demo (illustrative)", fetched_at=fetched)
    for currency, units_per_usd in cfg.fx_rates:  # dated before every run, so any window converts
        con.execute("insert or replace into fx_rates values (?, ?, ?, 'costgap demo (illustrative rate, not a quote)')",
                    [currency, (start - timedelta(days=31)).date(), units_per_usd])
    con.execute("insert or replace into provenance (scope, key, label, note) values ('price_import', ?, 'illustrative', ?)",
                [summary.import_id, PRICE_NOTE])
    return len(rows)


def _label_targets(con: duckdb.DuckDBPyConnection, targets) -> None:
    """Give each landed target the invented provider, region and instance type the price book joins on."""
    for target in targets:
        con.execute("update targets set provider = 'demo', region = 'demo-1', instance_type = ?, "
                    "billing_mode = 'on_demand' where target = ? and provider is null", [f"{target}.1x", target])
        con.execute("insert or replace into provenance (scope, key, label, note) values ('target', ?, 'illustrative', ?)",
                    [target, TARGET_NOTE])


def _estimate_first(con: duckdb.DuckDBPyConnection, target: str, docs: list[dict[str, Any]],
                    say: Callable[[str], None]) -> int:
    """Record the estimator's estimates for `target` (not landed yet) from the runs already in the warehouse,
    as `costgap estimate --record` would: the target joins the catalog as an extra row with its samples' GPU,
    priced by the demo's illustrative price book. Returns the estimates recorded."""
    from tasks.estimate import calibrate as cal_
    from tasks.estimate.candidates import candidates
    from tasks.estimate.estimate_track import record
    from tasks.cost.table import options

    env = max(docs, key=lambda d: d["started_at"])["environment"]
    ws = cal_.workloads(con)
    cal = cal_.calibrate(ws, cal_.efficiencies(con))
    if cal is None or not env.get("gpu_name"):
        say(f"demo: not estimating {target} first: " + ("its samples record no GPU" if cal is not None else
            "the other targets' runs have no fine-tune with GEMM and memory-copy figures to calibrate on"))
        return 0
    presets = sorted(cal.reference)
    say(f"demo: estimating {target} from the other targets' runs ({len(presets)} presets) before its bundles land")
    extra = [{"target": target, "provider": "demo", "region": "demo-1", "instance_type": f"{target}.1x",
              "gpu_model": env["gpu_name"], "gpu_count": max(1, int(env.get("gpu_count") or 1))}]
    at = datetime.now(timezone.utc)
    opts = options()
    rows = [r for p in presets for r in candidates(con, p, opts, at, extra=extra, cal=cal, workloads=ws)
            if r["target"] == target]
    return record(con, rows, at)


def build_demo(con: duckdb.DuckDBPyConnection, samples: Path | None = None, cfg: DemoConfig | None = None,
               progress: Callable[[str], None] | None = None) -> DemoSummary:
    """Land samples + labelled synthetic history + illustrative prices through an open writer connection.
    The target cfg.estimated_first (when it has samples) is estimated before its bundles land, then its real
    samples land alone and score those estimates, then its synthetic history lands (module docstring)."""
    from tasks.estimate.estimate_track import score
    from tasks.landing.land import land_paths

    say = progress or (lambda _line: None)
    cfg = cfg or DemoConfig()
    folder = samples or sample_dir()
    files = sorted(folder.rglob("*.json")) if folder.is_dir() else []
    if not files:
        raise UserError(f"{folder}: no sample bundles (*.json) to build the demo from; "
                        "commit measured bundles there or pass --samples DIR")
    docs = []
    for f in files:
        try:
            read_bundle(f)
        except BundleError as e:
            raise UserError(f"sample bundle {e}") from None
        docs.append(json.loads(f.read_bytes()))
    rng = random.Random(cfg.seed)
    summary = DemoSummary()
    order = {t: i for i, t in enumerate(sorted({d["target"] for d in docs}))}
    first = cfg.estimated_first if cfg.estimated_first in order and len(order) > 1 else None
    with tempfile.TemporaryDirectory(prefix="costgap-demo-") as tmp:
        # a sample that recorded no image (an older probe, a bare host) still gets a named current stack,
        # so the older-stack -> current change is one between two known values, as the report counts them
        images = {d["target"]: d["environment"].get("container_image") or CURRENT_STACK
                  for d in sorted(docs, key=lambda d: d["started_at"])}
        synth = [d for doc in docs for d in synthesize(doc, cfg, rng, even=order[doc["target"]] % 2 == 0,
                                                         image=images[doc["target"]])]
        dirs = {False: Path(tmp) / "others", True: Path(tmp) / "first"}
        for d in dirs.values():
            d.mkdir()
        for d in synth:
            (dirs[d["target"] == first] / f"{d['bundle_id']}.json").write_bytes(canonical_json(d))
        mine = [f for f, d in zip(files, docs) if d["target"] == first]
        others = [f for f in files if f not in mine]
        n_synth = sum(d["target"] != first for d in synth)
        landings = []  # (summary, what)

        def land(paths: list[str], what: str, **kw) -> None:  # stops at the first landing that is not clean
            got = land_paths(con, paths, source="demo", **kw)
            if not got.ok:
                raise UserError(f"demo: a {what} bundle did not land cleanly:\n{got.as_text()}")
            landings.append((got, what))

        say(f"demo: landing {len(others)} measured sample bundle(s) from {folder}"
            + (f" (all but {first}'s, which is estimated first)" if first else ""))
        land([str(f) for f in others], "sample")
        say(f"demo: landing {n_synth} synthetic run(s) derived from them ({cfg.weeks} weeks, labelled)")
        land([str(dirs[False])], "synthetic", progress=say)
        gpus = {d["target"]: d["environment"].get("gpu_name") for d in docs}
        _label_targets(con, sorted({d["target"] for d in docs} - {first}))
        times = [_t(d["started_at"]) for d in synth + docs]
        say("demo: adding illustrative prices")
        summary.price_rows = _prices(con, gpus, min(times), max(times), cfg)
        if first:
            summary.estimated_first = first
            summary.estimates = _estimate_first(con, first, [d for d in docs if d["target"] == first], say)
            # its real samples land alone, before its synthetic history: an estimate is scored against the
            # first landing after it (estimate_first_landing.sql), so that landing holds measurements only
            say(f"demo: landing {first}'s {len(mine)} measured sample bundle(s) and scoring its estimates against them")
            land([str(f) for f in mine], "sample")
            _label_targets(con, [first])
            summary.scored = score(con, datetime.now(timezone.utc))
            say(f"demo: landing {len(synth) - n_synth} synthetic run(s) derived from {first}'s samples (labelled)")
            land([str(dirs[True])], "synthetic", progress=say)
    summary.samples = [rid for s, what in landings if what == "sample" for rid in s.landed + s.duplicates]
    summary.synthetic = [d["bundle_id"] for d in synth]
    con.executemany("insert or replace into provenance (scope, key, label, note) values ('run', ?, 'synthetic', ?)",
                    [[rid, SYNTHETIC_NOTE] for rid in summary.synthetic])
    summary.targets = sorted(gpus)
    return summary
