"""Headless Chromium for the /overview browser test and ``bench/overview.py``: Debian's
``chromium`` and ``chromium-driver`` (``make browser`` installs them), driven by Selenium.
Local only: deployed bundles never import ``colony.local``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from colony.errors import ConfigError
from colony.testing.loopback import ATTEMPTS, closed_port, held_elsewhere

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


def headless_chromium(ports: Callable[[], int] = closed_port) -> webdriver.Chrome:
    """A new headless Chromium session (the caller quits it).

    chromedriver binds the port it is given (from ``ports``) itself, and exits when another
    process took it in the meantime ("IPv4 port not available"); Selenium reports that exit
    at once, and it is retried on a new port (``colony.testing.loopback``, way 3).
    """
    from selenium import webdriver  # lazy: only the browser test and the bench need it
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    taken = []
    for _ in range(ATTEMPTS):
        service = Service(CHROMEDRIVER, port=ports())
        try:
            return webdriver.Chrome(options=options, service=service)
        except WebDriverException:
            if not held_elsewhere(service.port):
                raise
            taken.append(service.port)
    raise ConfigError(f"chromedriver: another process held its port each time (ports {taken})")
