"""The price book and its sources (tasks.pricing.*): dated, sourced prices in the warehouse.

    .venv/bin/pytest -q tests/test_pricing.py

- base: PriceRow (one validated price) and the PriceSource interface (`name`, `location`, `fetch()`)
- book: import_rows / import_source land rows as never-overlapping periods (price_imports log)
- pricebook_file (CSV/YAML), skypilot (v7 vms.csv), azure (Retail Prices API): the plug-ins
- sources: named refresh recipes; http: injected clients (live httpx, recorded replay); retry: the waits
- archive: every import kept in the results store (_prices/*.jsonl); replay_imports rebuilds the book
"""

from tasks.pricing.archive import replay_imports
from tasks.pricing.base import PriceError, PriceRow, PriceSource
from tasks.pricing.book import ImportSummary, import_rows, import_source

# replay_imports(con, results_url) -> str: `costgap rebuild` (tasks/landing/rebuild.py) replays archived imports
__all__ = ["ImportSummary", "PriceError", "PriceRow", "PriceSource", "import_rows", "import_source", "replay_imports"]
