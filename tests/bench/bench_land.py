"""Load benchmark: land 1,000 and 10,000 bundles (with telemetry); bundles/s and peak memory.

    .venv/bin/python -m tests.bench.bench_land            # 1k and 10k (about 5 minutes on 2 cores)
    .venv/bin/python -m tests.bench.bench_land 200 1000   # other sizes

Each size is landed by a fresh child process (`costgap ingest`'s code path: flows.landing.land_into,
500 bundles per transaction, GX validation per batch) into a fresh warehouse, so its peak RSS
(ru_maxrss) is its own. Target (issue 8): >= 50 bundles/s on this 2-core box, and memory flat:
peak RSS at 10k within 1.5x of peak RSS at 1k (streaming batches, never everything at once).
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_BUNDLES_PER_S = 50.0  # issue 8, "Load"
MAX_MEMORY_GROWTH = 1.5  # peak RSS(10k) / peak RSS(1k); flat memory means ~1.0
SAMPLES = 120  # NVML samples per bundle: ~2 minutes of 1 Hz telemetry, one GPU
SIZES = (1000, 10000)


def _telemetry(i: int) -> dict:
    t = [float(s) for s in range(SAMPLES)]
    return {"t": t, "gpu": [0] * SAMPLES, "util": [float((s * 7 + i) % 100) for s in range(SAMPLES)],
            "mem_util": [40.0] * SAMPLES, "power_w": [250.0 + (s % 10) for s in range(SAMPLES)],
            "sm_clock_mhz": [1410.0] * SAMPLES, "temp_c": [60.0 + (s % 5) for s in range(SAMPLES)],
            "phase": ["finetune"] * SAMPLES}


def write_bundles(folder: Path, n: int) -> float:
    """n distinct valid bundles with telemetry, in the results-store layout. Returns MB written."""
    from datetime import timedelta

    from tests.factories import BASE_TIME, bundle_doc, write_bundle

    total = 0
    for i in range(n):
        target = f"target-{i % 8}"
        doc = bundle_doc(target=target, seq=i, tokens_per_s=900.0 + i % 200,
                         started_at=BASE_TIME - timedelta(minutes=i), gpu_name="NVIDIA A10G",
                         failed_attempts=i % 3 == 0, telemetry=_telemetry(i))
        total += write_bundle(folder / target / f"run-{i // 8}", doc).stat().st_size
    return total / 1e6


def child(folder: str, warehouse: str) -> None:
    """Land everything under `folder`; print one JSON line of figures."""
    t0 = time.perf_counter()
    from flows.landing import land_into
    from tasks.landing.validate import _context

    _context()  # imports GX and builds the suites: a fixed cost per process, reported apart
    startup = time.perf_counter() - t0
    use0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = use0.ru_utime + use0.ru_stime
    t0 = time.perf_counter()
    summary = land_into(warehouse, [folder], source="bench")
    secs = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = use.ru_utime + use.ru_stime - cpu0
    print(json.dumps({"landed": len(summary.landed), "problems": len(summary.quarantined) + len(summary.rejected),
                      "seconds": secs, "cpu_s": cpu_s, "startup_s": startup, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_size(n: int, root: Path) -> dict:
    folder, wh = root / f"bundles-{n}", root / f"wh-{n}.duckdb"
    mb = write_bundles(folder, n)
    out = subprocess.run([sys.executable, "-m", "tests.bench.bench_land", "--child", str(folder), str(wh)],
                         capture_output=True, text=True, check=True)
    fig = json.loads(out.stdout.strip().splitlines()[-1])
    fig.update(n=n, mb=mb, bundles_per_s=fig["landed"] / fig["seconds"],
               warehouse_mib=wh.stat().st_size / 2**20)
    shutil.rmtree(folder)
    return fig


def main(sizes: tuple[int, ...] = SIZES) -> int:
    root = Path(tempfile.mkdtemp(prefix="bench_land-"))
    try:
        figs = []
        for n in sizes:
            f = run_size(n, root)
            figs.append(f)
            print(f"{n:>6} bundles ({f['mb']:.0f} MB, {SAMPLES} telemetry samples each): "
                  f"{f['seconds']:.1f} s (+{f['startup_s']:.1f} s imports/GX setup), {f['bundles_per_s']:.0f} bundles/s "
                  f"({f['landed'] / f['cpu_s']:.0f} per CPU-second; the box is shared), peak RSS {f['peak_rss_mib']:.0f} MiB, "
                  f"warehouse {f['warehouse_mib']:.0f} MiB, landed {f['landed']}, problems {f['problems']}",
                  flush=True)
        ok = all(f["bundles_per_s"] >= TARGET_BUNDLES_PER_S and f["landed"] == f["n"] for f in figs)
        growth = figs[-1]["peak_rss_mib"] / figs[0]["peak_rss_mib"]
        ok = ok and growth <= MAX_MEMORY_GROWTH
        print(f"target >= {TARGET_BUNDLES_PER_S:.0f} bundles/s: min {min(f['bundles_per_s'] for f in figs):.0f}; "
              f"peak RSS {figs[-1]['n']}/{figs[0]['n']} = {growth:.2f}x (target <= {MAX_MEMORY_GROWTH}x): "
              f"{'met' if ok else 'MISSED'}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
        raise SystemExit(main(sizes))
