"""Headless Chromium from Debian's packages, driven by Selenium through Debian's
chromedriver: nothing is downloaded (no Selenium Manager, no browser build of its
own), and the page is opened with the network off."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "hack" / "install-chromium.sh"


def ensure_chromium() -> tuple[str, str]:
    """The paths of chromium and chromedriver, installed from Debian's packages by
    hack/install-chromium.sh when missing (so that `make test` needs nothing else)."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        subprocess.run([str(INSTALL)], check=True)
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        raise RuntimeError(f"{INSTALL} did not install chromium and chromedriver")
    return chromium, driver


def start_browser(width: int = 1280, height: int = 1000) -> webdriver.Chrome:
    """A headless Chromium whose console messages can be read (goog:loggingPrefs),
    with the network off: every request but file:// fails."""
    chromium, driver = ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace sandbox
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
        # No name resolves and no proxy answers: nothing outside file:// can load.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    # And the browser itself offline (DevTools' network emulation).
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    return browser
