"""Device experiment for issue 10 (burst method, fine-tune drift). torch only; run on the GPU host:

    python3 -m tests.bench.exp_fidelity_h200 --out $OUT/exp.json

1. The same GEMM shapes timed with idle gaps of 1, 0.5, 0.25 and 0 x each call (burst method).
2. A coarse back-to-back grid sweep (64 shapes, L2 flushed, no gaps), like the reference's sweep.
3. The 1b fine-tune held for ~100 s after a 5 s warm-up, every 4 s window kept, with NVML samples,
   so warm-up policies can be checked offline against the per-window drift.
Not part of `make bench` (it needs a GPU and ~4 minutes); the raw output goes to docs/measurements/.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time

import torch

from tasks.probe.hardware.gemm import time_shape
from tasks.probe.hardware.timing import time_iters
from tasks.probe.host import nvml


def _window_stats(sampler, w) -> dict:
    c = w.conditions() or {}
    return {k: c.get(k) for k in ("sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_median",
                                  "throttle_reasons")}


def gemm_part(sampler, device: str) -> dict:
    flush = torch.empty(256 * 2**20, dtype=torch.uint8, device=device)
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    t = time.perf_counter() + 2.0
    while time.perf_counter() < t:  # leave idle clocks
        time_iters(lambda: a @ a, device=device, iters=5, idle_ratio=1.0)
    del a
    shapes = [(2048, 7168, 4096), (4096, 16384, 4096), (3072, 16384, 10240), (8192, 2048, 10240),
              (3072, 11264, 5120)]
    rows = []
    for shape in shapes:
        for idle in (1.0, 0.5, 0.25, 0.0):
            time.sleep(1.0)  # cool down between variants
            with sampler.window(gpus=[0]) as w:
                r = time_shape(*shape, "bf16", device, warmup=10, iters=100, flush=flush,
                               idle_ratio=idle, max_timed_s=0.6)
            rows.append({"shape": list(shape), "idle_ratio": idle, "median": round(r["tflops_median"], 1),
                         "max": round(r["tflops_max"], 1), "iters": r["iters"], **_window_stats(sampler, w)})
            print(json.dumps(rows[-1]), flush=True)
    sweep = []
    time.sleep(2.0)
    t0 = time.perf_counter()
    with sampler.window(gpus=[0]) as w:
        for m, n, k in itertools.product((2048, 4096, 6144, 8192), (4096, 8192, 12288, 16384),
                                         (2048, 4096, 6144, 8192)):
            r = time_shape(m, n, k, "bf16", device, warmup=5, iters=20, flush=flush, idle_ratio=0.0)
            sweep.append({"shape": [m, n, k], "median": round(r["tflops_median"], 1)})
    best = max(sweep, key=lambda x: x["median"])
    out = {"variants": rows, "sweep_b2b": {"seconds": round(time.perf_counter() - t0, 2), "best": best,
                                           "conditions": _window_stats(sampler, w),
                                           "near_ref_shape": next((s for s in sweep if s["shape"] == [2048, 8192, 4096]), None),
                                           "all": sweep}}
    print(json.dumps({"sweep_b2b": {k: v for k, v in out["sweep_b2b"].items() if k != "all"}}), flush=True)
    return out


def finetune_part(sampler, device: str) -> dict:
    from tasks.probe.finetune.run import run_finetunes

    t0 = time.time()
    recs, atts = run_finetunes(["1b"], device=device, sampler=sampler, budget_s=300,
                               options={"steady": {"window_s": 4.0, "min_s": 100.0, "max_s": 100.0}})
    r = recs[0]
    cols = sampler.columns()
    keep = [i for i, ph in enumerate(cols["phase"]) if ph.startswith("finetune")]
    return {"state": r.get("state"), "tokens_per_s": r.get("tokens_per_s"), "steady": r.get("steady"),
            "windows": r.get("window_tokens_per_s"), "steps_warmup": r.get("steps_warmup"),
            "conditions": r.get("conditions"), "since_s": round(time.time() - t0, 1),
            "nvml": {k: [cols[k][i] for i in keep] for k in ("t", "power_w", "sm_clock_mhz", "temp_c")}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip", default="")
    a = ap.parse_args()
    device = "cuda:0"
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    with nvml.Sampler(t0=time.time(), hz=20.0) as sampler:
        sampler.set_phase("gemm")
        if "gemm" not in a.skip:
            out["gemm"] = gemm_part(sampler, device)
        if "finetune" not in a.skip:
            out["finetune"] = finetune_part(sampler, device)
            print(json.dumps({k: v for k, v in out["finetune"].items() if k != "nvml"}), flush=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
