"""Headless Chromium for the /overview browser test and ``bench/overview.py``: Debian's
``chromium`` and ``chromium-driver`` (``make browser`` installs them), driven by Selenium.
Local only: deployed bundles never import ``colony.local``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selenium import webdriver

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--window-size=1280,1000",
)


def headless_chromium() -> webdriver.Chrome:
    """A new headless Chromium session (the caller quits it)."""
    from selenium import webdriver  # lazy: only the browser test and the bench need it
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
