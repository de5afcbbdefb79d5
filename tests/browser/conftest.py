from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver

from tests.browser.chromium import start_browser


@pytest.fixture(scope="session")
def browser() -> Iterator[webdriver.Chrome]:
    driver = start_browser()
    try:
        yield driver
    finally:
        driver.quit()
