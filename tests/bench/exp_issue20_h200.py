"""Device experiment (issue 20): NF4 backends, the bf16 sweep against the new search.

    python3 -m tests.bench.exp_issue20_h200 explore --out $OUT/explore.json   # env, sweep, 3 searches
    python3 -m tests.bench.exp_issue20_h200 backends --out $OUT/nf4.json      # 1.3B LoRA vs QLoRA per backend
    python3 -m tests.bench.exp_issue20_h200 sweep --out $OUT/sweep.json       # the exhaustive sweep alone
    python3 -m tests.bench.exp_issue20_h200 compare --sweep S.json BUNDLE...  # here: search / sweep

Needs a GPU for `explore` and `sweep`; not part of `make bench`. `explore` rewrites its JSON after
every stage, so a run cut short still brings back what it measured. The sweep stores every
shape's figure (the landscape the search is tuned against); `compare` reads the standard bundles'
bf16 measurement and prints search ÷ sweep for the figure and for the time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

IMAGE_HINTS = re.compile(r"IMAGE|CONTAINER|KUBERNETES|DOCKER|OCI|NVIDIA_.*VERSION|PYTORCH")


def _log(msg: str) -> None:
    print(f"[exp {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def env_report() -> dict:
    """Versions, which NF4 backend works on the GPU, what the container detection sees."""
    import importlib.metadata as md

    import torch

    from tasks.probe.finetune import qlora
    from tasks.probe.host import container

    out = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0)}
    for pkg in ("transformers", "peft", "bitsandbytes", "torchao", "accelerate"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    checks = {}
    for name, check in qlora.CHECKS.items():
        try:
            check(torch.device("cuda:0"))
            checks[name] = "ok"
        except Exception as e:
            checks[name] = f"{type(e).__name__}: {e}"[:300]
    out["nf4_checks"] = checks
    out["backend"] = qlora.backend("cuda:0")
    out["container"] = container.detect()
    out["env_names"] = sorted(k for k in os.environ if IMAGE_HINTS.search(k))  # names only
    out["dockerenv"] = os.path.exists("/.dockerenv")
    return out


def backend_runs() -> dict:
    """A Llama-shaped 1.3B base (hidden 2048, 16 layers, vocab 1024) as LoRA and as QLoRA through
    each working NF4 backend, micro-batch 2, 6 fixed steps: peak memory and tokens/s."""
    from tasks.probe.finetune import presets as fpresets, qlora
    from tasks.probe.finetune.run import run_finetunes

    big = dict(hidden=2048, layers=16, heads=16, kv_heads=8, ffn=8192, vocab=1024, seq_len=256,
               micro_batch_max=2, gpu_only=None)
    q = dataclasses.replace(fpresets.get_preset("8b-qlora"), name="qlora-1b3", **big)
    lo = dataclasses.replace(q, name="lora-1b3", mode="lora")
    fpresets.PRESETS.update({"qlora-1b3": q, "lora-1b3": lo})
    opts = {"steps": 6, "warmup_steps": 2, "warmup_min_s": 0.0, "micro_batch": 2}
    keep = ("preset", "status", "message", "tokens_per_s", "peak_mem_allocated_gib", "mfu",
            "params_non_embedding", "params_trainable", "loss_first", "loss_last")
    fts, _ = run_finetunes(["lora-1b3"], device="cuda:0", sampler=None, budget_s=120, options=opts)
    out = {"lora": {k: fts[0].get(k) for k in keep}}
    every = dict(qlora.CHECKS)
    for name in every:
        qlora.CHECKS = {name: every[name]}  # force this backend
        try:
            fts, _ = run_finetunes(["qlora-1b3"], device="cuda:0", sampler=None, budget_s=120, options=opts)
            out[name] = {k: fts[0].get(k) for k in keep}
        finally:
            qlora.CHECKS = every
        _log(f"qlora-1b3 via {name}: {out[name]}")
    return out


def run_sweep() -> dict:
    import torch

    from tasks.probe.hardware.gemm_search import search
    from tasks.probe.profiles import STANDARD

    cfg = dataclasses.replace(STANDARD.gemm, exhaustive=True, budget_s=900.0)
    res = search("bf16", cfg, "cuda:0")
    torch.cuda.synchronize()
    _log(f"sweep: {res['tflops']:.1f} at {res['shape']} in {res['total_s']:.1f} s")
    return res


def run_searches(n: int) -> list[dict]:
    from tasks.probe.hardware.gemm_search import search
    from tasks.probe.profiles import STANDARD

    out = []
    for i in range(n):
        r = search("bf16", STANDARD.gemm, "cuda:0")
        _log(f"search {i}: {r['tflops']:.1f} at {r['shape']}, {r['shapes_tried']} shapes, {r['total_s']:.2f} s")
        out.append(r)
        time.sleep(2)
    return out


def explore(out_path: Path) -> None:
    doc: dict = {}

    def save():
        out_path.write_text(json.dumps(doc, indent=1, default=str))

    for stage, fn in (("env", env_report), ("sweep", run_sweep), ("searches", lambda: run_searches(3))):
        t = time.perf_counter()
        try:
            doc[stage] = fn()
        except Exception as e:  # keep going: each stage is its own finding
            doc[stage] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        doc.setdefault("stage_s", {})[stage] = round(time.perf_counter() - t, 1)
        _log(f"{stage} done in {doc['stage_s'][stage]} s")
        save()
    if isinstance(doc.get("sweep"), dict) and "tflops" in doc["sweep"] and isinstance(doc.get("searches"), list):
        sw = doc["sweep"]
        doc["ratios"] = [{"figure": s["tflops"] / sw["tflops"], "time": s["total_s"] / sw["total_s"],
                          "shape": s["shape"]} for s in doc["searches"]]
        save()
    print(json.dumps({k: v for k, v in doc.items() if k not in ("sweep", "searches")}, default=str)[:6000])


def compare(sweep_path: Path, bundles: list[Path]) -> None:
    sw = json.loads(sweep_path.read_text())
    sweep = sw.get("sweep", sw)
    print(f"sweep: {sweep['tflops']:.1f} TFLOP/s at {sweep['shape']} in {sweep['total_s']:.1f} s")
    for p in bundles:
        d = json.loads(p.read_text())
        m = next(x for x in d["measurements"] if x["metric"] == "bf16_tflops")
        t = m["params"].get("search_total_s") or m["params"]["search_s"]
        print(f"{p.name[:12]}: {m['value']:.1f} at {m['params']['m']}x{m['params']['n']}x{m['params']['k']}"
              f" = {m['value'] / sweep['tflops']:.4f} of the sweep; search time {t:.2f} s"
              f" = {t / sweep['total_s']:.4f} of the sweep's")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["explore", "sweep", "backends", "compare"])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--sweep", type=Path)
    ap.add_argument("bundles", nargs="*", type=Path)
    a = ap.parse_args(argv)
    if a.what == "explore":
        explore(a.out)
    elif a.what == "backends":
        a.out.write_text(json.dumps(backend_runs(), indent=1, default=str))
    elif a.what == "sweep":
        res = run_sweep()
        a.out.write_text(json.dumps({"sweep": res}, default=str))
        print(json.dumps({k: v for k, v in res.items() if k != "all"}, default=str))
    else:
        compare(a.sweep, a.bundles)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
