"""Device experiment (issue 10): the standard bf16 GEMM search five times in a row, MAMF and plain median.

    python3 -m tests.bench.exp_gemm_repeats_h200 > $OUT/search_repeats.jsonl

Needs a GPU; not part of `make bench`. The 2026-12-02 H200 output is
docs/measurements/h200-gemm-search-repeats-2026-12-02.jsonl.
"""

import json
import time

from tasks.probe.hardware.gemm import search
from tasks.probe.profiles import STANDARD

if __name__ == "__main__":
    for i in range(5):
        r = search("bf16", STANDARD.gemm, "cuda:0")
        print(json.dumps({"rep": i, "shape": r["shape"], "mamf_top5": round(r["tflops"], 1),
                          "median_all": round(r["tflops_median"], 1), "max": round(r["tflops_max"], 1),
                          "shapes": r["shapes_tried"], "s": round(r["total_s"], 2)}), flush=True)
        time.sleep(2)
