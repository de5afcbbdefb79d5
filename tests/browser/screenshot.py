"""`make report-screenshot`: the example cluster's HTML report in headless Chromium,
saved as docs/report.png (the page's top: summary, heat map, placements) and
docs/report-explain.png (a pending pod's drill-down), each under 300 KB.

    python -m tests.browser.screenshot [--out docs]
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

from click.testing import CliRunner
from PIL import Image
from selenium.webdriver.common.by import By

from kubesched.cli.main import main as kubesched
from tests.browser.chromium import ROOT, start_browser

MAX_BYTES = 300 * 1024


def _save(png: bytes, path: Path) -> int:
    """The screenshot with its colours reduced (a page has few): a fraction of the size."""
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=96)
    image.save(path, optimize=True)
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"{path}: {size} bytes, over {MAX_BYTES}")
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        example = str(ROOT / "examples" / "cluster")
        outcome = CliRunner().invoke(
            kubesched, ["simulate", "-f", example, "--seed", "1", "--html", str(page)]
        )
        if outcome.exit_code != 0:
            raise SystemExit(outcome.output)
        browser = start_browser(1280, 1100)
        try:
            browser.get(page.as_uri())
            top = _save(browser.get_screenshot_as_png(), args.out / "report.png")
            group = browser.find_elements(By.CSS_SELECTOR, "#pending details.pending-group")[1]
            group.find_element(By.TAG_NAME, "summary").click()
            group.find_element(By.CSS_SELECTOR, "a.why").click()
            drill = _save(browser.get_screenshot_as_png(), args.out / "report-explain.png")
        finally:
            browser.quit()
    print(
        f"{args.out / 'report.png'}: {top} bytes; {args.out / 'report-explain.png'}: {drill} bytes"
    )


if __name__ == "__main__":
    main()
