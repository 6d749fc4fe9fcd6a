"""Headless Debian chromium driven through its chromedriver: the console's browser tests and `bench ui`.

Flags as this machine needs them: no sandbox as root, and no background networking (its connections are
refused on a closed network, many at a time).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1400,1000",
)


def browser_paths() -> tuple[str | None, str | None]:
    """(chromium, chromedriver), each None when not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")


def headless_chromium(user_data_dir: Path | None = None) -> Any:
    """A selenium driver of the installed chromium; FileNotFoundError when it or its driver is missing."""
    chromium, driver_path = browser_paths()
    if not (chromium and driver_path):
        raise FileNotFoundError("chromium and chromedriver are not installed (Debian: chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    if user_data_dir is not None:
        options.add_argument(f"--user-data-dir={user_data_dir}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    return driver
