#!/bin/bash
# The device tool's probe call for the committed samples (warehouse/samples/README.md), run in the repository root on
# the device machine: $1 = a (the standard profile: hardware, 1b, 8b-lora) or b (8b-qlora, bert-large, 7b-full, which
# the standard profile does not run). The target is chosen from what nvidia-smi names, so an H100 that comes instead
# of an H200 is never recorded as one. Bundles and logs land under $OUT.
#
# 8b-qlora needs bitsandbytes, which that machine lacks; download its wheel here first (.whl/ is git-ignored) and carry it:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_24_x86_64 --platform manylinux_2_28_x86_64 -d .whl bitsandbytes==0.50.2
#   run(command="bash docs/measurements/device-probe.sh a", kind="nvidia-h200", carry=[".whl"])
set -o pipefail
case "$1" in a|b) ;; *) echo "usage: $0 a|b (a: the standard profile; b: 8b-qlora, bert-large, 7b-full)" >&2; exit 2;; esac
[ -n "$OUT" ] || { echo "OUT is unset: run this through the device tool, which sets it" >&2; exit 2; }
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv | tee "$OUT/gpu-$1.txt"
case "$GPU" in *H200*) T=h200-sxm-1x;; *H100*) T=h100-sxm-1x;; *) echo "no target for GPU '$GPU'" >&2; exit 2;; esac
echo "target=$T" | tee -a "$OUT/gpu-$1.txt"
if [ "$1" = a ]; then
  python3 -m tasks.probe --profile standard --target "$T" --out "$OUT/a" 2>&1 | tee "$OUT/standard.log"
else
  python3 -m tasks.probe --profile standard --target "$T" --presets 8b-qlora,bert-large,7b-full \
    --skip gemm,gemm_sustained,memory,hostdev,numa,storage,feed,allreduce,sharing --out "$OUT/b" 2>&1 | tee "$OUT/more.log"
fi
