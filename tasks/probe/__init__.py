"""costgap's hardware probe: torch-only microbenchmarks, fingerprint and fine-tune -> one bundle.

    python -m tasks.probe --profile quick --target local --out results/

Everything under tasks/probe imports only the stdlib and torch (plus transformers/peft inside the
fine-tune and pynvml where present): no pydantic, prefect, duckdb or polars, so an air-gapped GPU
host can produce bundles. tests/test_probe_imports.py proves it.
"""

PROBE_VERSION = "0.4.0"  # bump when any benchmark's method changes (each also has its own version)
