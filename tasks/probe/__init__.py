"""costgap's hardware probe: torch-only microbenchmarks, fingerprint and fine-tune -> one bundle.

    python -m tasks.probe --profile quick --target local --out results/

Rooms by what they measure: hardware/ (GEMM, memory, copies, storage, feed), finetune/, distributed/
(multi-GPU) and host/ (fingerprint, NVML, datasheets); runner.py sequences them by a named profile
(profiles.py) into the bundle's records (record.py). All of it imports only the stdlib and torch
(transformers/peft inside the fine-tune, pynvml where present): no pydantic, prefect, duckdb or
polars, so an air-gapped GPU host can produce bundles; tests/test_probe_torch_only.py proves it.
"""

PROBE_VERSION = "0.5.0"  # bump when any benchmark's method changes (each also has its own version); 0.5.0:
#   issue 45 adds numa, the storage path (4 KiB random reads, io_uring), the feed's wait share, gpu_busy, sharing
