"""The estimator's scores on the committed measurements (issue 25): leave-one-out and held-out published figures.

    .venv/bin/python -m tests.bench estimate

Lands warehouse/samples/ (real bundles only, no synthetic history) into a fresh warehouse, calibrates the
estimator, and prints: each measured H200 preset predicted from the others (predicted, measured, error, runs
inside the 90% interval), each measured target predicted from the other targets' runs, each measured GPU
type predicted from the other types alone (leave-one-GPU-out: the H100 from the H200, the H200 from the
H100; issue 35 targets median |error| <= 10% and every run inside its interval), the held-out
published figures, and the seed's question (A10 gn7i against V100 GN10Xp for 1b and 8b-lora) as estimates.
Target: at least 80% of measured runs inside their leave-one-out 90% interval.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tasks.estimate import calibrate as cal_
from tasks.estimate import estimate as est
from tasks.estimate import estimate_track as track
from tasks.demo import sample_dir

SEED = (("alibaba ecs.gn7i-c8g1.2xlarge", "A10"), ("tencent GN10Xp.2XLARGE40", "V100-SXM2-32GB"))


def calibration(samples: Path | None = None, by_gpu: bool = False):
    """The calibration on the committed samples (with `by_gpu`: and the leave-one-GPU-out score)."""
    from tasks.landing.land import land_paths
    from warehouse.db import connect

    with tempfile.TemporaryDirectory(prefix="costgap-bench-estimate-") as tmp:
        con = connect(str(Path(tmp) / "w.duckdb"))
        try:
            land_paths(con, [str(samples or sample_dir())], source="bench")
            ws = cal_.workloads(con)
            cal = cal_.calibrate(ws, cal_.efficiencies(con))
            if not by_gpu:
                return cal
            eff = lambda t: cal_.efficiencies(con, leave_out=t)  # noqa: E731
            return cal, track.leave_one_target_out(ws, eff), track.leave_one_gpu_out(ws, eff)
        finally:
            con.close()


def main() -> int:
    cal, by_gpu, gpu_out = calibration(by_gpu=True)
    print(f"efficiencies (measured, achieved / datasheet): " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(cal.eff.items())))
    print(f"kappa per preset: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(cal.kappa.items())))
    loo = track.leave_one_out(cal)
    print(f"\nleave-one-out over the measured presets (90% interval x/÷ {2.718281828 ** cal.log_halfwidth:.3f}):")
    for r in loo["rows"]:
        print(f"  {r['preset']:<11} {r['gpu']:<12} predicted {r['predicted_tokens_per_s']:>9.0f}  measured "
              f"{r['measured_tokens_per_s']:>9.0f}  error {r['error']:+.1%}  runs inside {r['inside']}/{r['runs']}")
    print(f"  median |error| {loo['median_abs_error']:.1%}; runs inside their 90% interval {loo['inside']}/{loo['runs']}"
          f" = {loo['share_inside']:.0%} (target >= 80%)")
    print(f"\nleave-one-target-out (each measured target predicted from the other targets' runs): {by_gpu['note']}")
    for r in by_gpu["rows"]:
        print(f"  {r['target']:<12} {r['preset']:<11} {r['gpu']:<12} predicted {r['predicted_tokens_per_s']:>9.0f}  measured "
              f"{r['measured_tokens_per_s']:>9.0f}  error {r['error']:+.1%}  runs inside {r['inside']}/{r['runs']}")
    if by_gpu["rows"]:
        inside, runs = sum(r["inside"] for r in by_gpu["rows"]), sum(r["runs"] for r in by_gpu["rows"])
        print(f"  median |error| {by_gpu['median_abs_error']:.1%}; runs inside {inside}/{runs}")
    print(f"\nleave-one-GPU-out (each GPU type predicted from the other types' runs alone; issue 35 targets: median "
          f"|error| <= 10%, every run inside its 90% interval): {gpu_out['note']}")
    for r in gpu_out["rows"]:
        print(f"  {r['gpu'][:22]:<22} {r['preset']:<11} from {','.join(x[:14] for x in r['from']):<16} predicted "
              f"{r['predicted_tokens_per_s']:>9.0f} ({r['lo']:.0f}..{r['hi']:.0f})  measured {r['measured_tokens_per_s']:>9.0f}"
              f"  error {r['error']:+.1%}  runs inside {r['inside']}/{r['runs']}  config predicted mb {r['configuration'][0]}"
              f"{' ckpt' if r['configuration'][1] else ''}, measured mb {r['measured_configuration'][0]}"
              f"{' ckpt' if r['measured_configuration'][1] else ''}")
    if gpu_out["rows"]:
        print(f"  median |error| {gpu_out['median_abs_error']:.1%}; every run inside: {gpu_out['all_inside']}")
    held = track.held_out(cal)
    print("\nheld-out published figures (never calibrated on):")
    for r in held["rows"]:
        if r["predicted_tokens_per_s"] is None:
            print(f"  {r['preset']:<11} {r['gpu']:<16} {r['reason']}")
            continue
        print(f"  {r['preset']:<11} {r['gpu']:<16} predicted {r['predicted_tokens_per_s']:>9.0f} (90% {r['lo']:.0f}.."
              f"{r['hi']:.0f})  published {r['per_gpu_tokens_per_s']:>9.0f}  error {r['error']:+.1%}  "
              f"{'inside' if r['inside'] else 'outside'}  [{r['source'][:60]}..., {r['date']}]")
    print(f"  median error {held['median_error']:+.1%}, median |error| {held['median_abs_error']:.1%}, "
          f"inside {held['inside']}/{held['scored']}")
    print("\nthe seed's question, as estimates (tokens/s per instance, 90% interval):")
    for preset in ("1b", "8b-lora"):
        for name, gpu in SEED:
            p = est.predict(cal.reference[preset], cal_.match_gpu(gpu), 1, cal, gpu)
            print(f"  {preset:<8} {name:<32} {p.tokens_per_s:>7.0f} ({p.lo:.0f}..{p.hi:.0f}) {p.precision}, {p.fit}, "
                  f"micro-batch {p.micro_batch}")
    return 0 if (loo["share_inside"] or 0) >= 0.8 else 1


if __name__ == "__main__":
    raise SystemExit(main())
