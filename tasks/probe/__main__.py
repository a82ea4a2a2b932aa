"""CLI: run the probe and write one bundle; the bundle's path is the last line of stdout.

    python -m tasks.probe --profile quick --target local --out results/ [--skip finetune,storage]
    python -m tasks.probe --profile standard --skip gemm,gemm_sustained,memory,hostdev,numa,storage,feed,allreduce,sharing \
        --presets 8b-qlora,bert-large --out results/      # fine-tune only, chosen presets
    python -m tasks.probe --profile standard --presets 8b-lora --micro-batch 2 --checkpointing off \
        --skip gemm,gemm_sustained,memory,hostdev,numa,storage,feed,allreduce,sharing --out results/   # pinned

The fine-tune measures each card at its best configuration, found by measurement: it trials every
configuration the memory model says fits (checkpointing off at the largest micro-batch, on at the
largest it allows) and measures the fastest; the bundle lists them all. --micro-batch together with
--checkpointing pins one configuration for a reproducible run (either alone pins that half).

Exit 0 when a bundle was written (failed benchmarks are data inside it), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys

from tasks.probe.profiles import PROFILES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tasks.probe", description="\n".join(__doc__.splitlines()[:1] + __doc__.splitlines()[5:]).strip(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="quick", choices=sorted(PROFILES),
                    help="named recipe: quick (CI/CPU), standard (weekly), full (exhaustive)")
    ap.add_argument("--target", default="local", help="target name recorded in the bundle")
    ap.add_argument("--out", default="results", help="directory for the bundle file")
    ap.add_argument("--data-dir", default=None,
                    help="directory for the storage benchmark's files (default: the temp dir)")
    ap.add_argument("--skip", default="", help="comma-separated task groups to skip "
                    "(gemm, gemm_sustained, memory, hostdev, numa, storage, feed, allreduce, finetune, gpu_busy, "
                    "sharing)")
    ap.add_argument("--presets", default=None, help="comma-separated fine-tune presets instead of "
                    "the profile's (tasks/probe/finetune/presets.py), e.g. 8b-qlora,bert-large")
    ap.add_argument("--model", default=None, help="fine-tune a local HF checkpoint dir (no download)")
    ap.add_argument("--tokenizer", default=None, help="local tokenizer dir (default: byte-level)")
    ap.add_argument("--data", default=None, help="Alpaca-format JSONL for the fine-tune "
                    "(default: the shipped generated sample)")
    ap.add_argument("--micro-batch", type=int, default=None, metavar="N",
                    help="pin the fine-tune's micro-batch (default: searched, see above)")
    ap.add_argument("--checkpointing", choices=["on", "off"], default=None,
                    help="pin activation checkpointing (default: searched, see above)")
    ap.add_argument("--origin-kind", default="cli", choices=["local", "pool", "import", "cli"])
    ap.add_argument("--flow-run-id", default=None, help="Prefect flow run id, when run by a flow")
    a = ap.parse_args(argv)
    from tasks.probe.runner import run_probe  # imports torch: after argument errors

    import socket

    origin = {"kind": a.origin_kind, "flow_run_id": a.flow_run_id, "host": socket.gethostname()}
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    try:
        ft = {k: v for k, v in (("model", a.model), ("tokenizer", a.tokenizer), ("data", a.data)) if v}
        if a.micro_batch is not None:
            ft["micro_batch"] = a.micro_batch
        if a.checkpointing is not None:
            ft["activation_checkpointing"] = a.checkpointing == "on"
        presets = [p.strip() for p in a.presets.split(",") if p.strip()] if a.presets else None
        path = run_probe(a.profile, a.target, a.out, origin=origin, data_dir=a.data_dir, skip=skip,
                         finetune_options=ft or None, presets=presets)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
