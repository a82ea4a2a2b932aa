"""Screenshot a report page with Debian's headless chromium (for docs/overview.png).

    costgap demo --site .costgap/demo-site && .venv/bin/python -m reports.screenshot .costgap/demo-site/index.html docs/overview.png 1500

Offline like the browser test: only file:// requests are allowed. Waits until every chart has drawn.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def screenshot(page_path: str, out: str, *, width: int = 1280, height: int = 900, full_page: bool = True) -> Path:
    from playwright.sync_api import sync_playwright

    src = Path(page_path).resolve()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1, offline=True)
            context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else r.abort())
            page = context.new_page()
            page.goto(src.as_uri(), wait_until="load")
            n = page.locator("div.chart").count()
            page.wait_for_function(
                "n => document.querySelectorAll('div.chart[data-rendered], div.chart[data-error]').length === n",
                arg=n, timeout=30_000)
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=out, full_page=full_page)
        finally:
            browser.close()
    return Path(out)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        print(__doc__.splitlines()[2].strip(), "[HEIGHT_PX: crop to one viewport]", file=sys.stderr)
        sys.exit(2)
    crop = int(sys.argv[3]) if len(sys.argv) == 4 else None
    print(screenshot(sys.argv[1], sys.argv[2], height=crop or 900, full_page=crop is None))
