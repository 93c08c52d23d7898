"""Open a report in Debian's headless Chromium (by path) with networking off, and check it draws.

Shared by the notebook tests: ``check_offline_render(html, tmp_path)`` fails unless every
``.ragnb-chart`` draws an SVG, no request of the page fails and nothing goes to the network;
``open_offline(url, profile)`` returns the selenium driver for tests that interact with a page;
``visible_text(page)`` is a page's text as a reader sees it.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def visible_text(page: str) -> str:
    """The text of an HTML page as a reader sees it: scripts, styles and tags dropped, entities
    unescaped, white space collapsed."""
    page = re.sub(r"<script.*?</script>", " ", page, flags=re.S)
    page = re.sub(r"<style.*?</style>", " ", page, flags=re.S)
    page = re.sub(r"<[^>]+>", " ", page)
    return re.sub(r"\s+", " ", html_lib.unescape(page))


def open_chromium(url: str, profile: Path, *, offline: bool = True, logs: bool = False):
    """Debian's headless Chromium (by path) on ``url``, with the flags this machine's closed
    network needs. ``offline``: no network at all; otherwise only 127.0.0.1 resolves (a local
    JupyterLab). ``logs``: keep the performance and browser logs of ``url`` alone."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    resolver = "MAP * ~NOTFOUND" if offline else "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--host-resolver-rules={resolver}",
        f"--user-data-dir={profile}",
        "--window-size=1400,2000",
    ):
        opts.add_argument(arg)
    if logs:
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    if offline:
        driver.set_network_conditions(
            offline=True, latency=0, download_throughput=0, upload_throughput=0
        )
    if logs:
        driver.get("about:blank")
        driver.get_log("performance")  # drain what the start-up page did; keep only our page's
    driver.get(url)
    return driver


def open_offline(url: str, profile: Path):
    """:func:`open_chromium` with the network off and the page's logs kept."""
    return open_chromium(url, profile, offline=True, logs=True)


def check_offline_render(html_path: Path, tmp_path: Path) -> None:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.fail("Debian chromium and chromium-driver are required (make test installs them)")
    from selenium.webdriver.support.ui import WebDriverWait

    driver = open_offline(html_path.as_uri(), tmp_path / "profile")
    try:
        charts = driver.find_elements("css selector", ".ragnb-chart")
        assert len(charts) >= 2

        def all_drawn(d):
            return all(
                el.find_elements("css selector", "svg .mark-symbol, svg .mark-line, svg path")
                for el in d.find_elements("css selector", ".ragnb-chart")
            )

        WebDriverWait(driver, 60).until(all_drawn)
        for el in driver.find_elements("css selector", ".ragnb-chart"):
            assert "chart error" not in el.text and "missing" not in el.text
            assert el.find_elements("css selector", "svg")
        requests, failures, by_id = [], [], {}
        for entry in driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg["method"] == "Network.requestWillBeSent":
                doc, url = msg["params"].get("documentURL", ""), msg["params"]["request"]["url"]
                requests.append((doc, url))
                by_id[msg["params"]["requestId"]] = (doc, url)
            elif msg["method"] == "Network.loadingFailed":
                failures.append((by_id.get(msg["params"]["requestId"]), msg["params"]["errorText"]))
        # every request after the drain is logged before it can fail, so a failure of an
        # unknown request belongs to the browser's own start-up page, not to the report
        ours_failed = [f for f in failures if f[0] is not None]
        assert not ours_failed, ours_failed
        # the page itself fetches nothing but file:/data: URLs, and nobody goes on the network
        page = html_path.as_uri()
        assert any(doc == page for doc, _ in requests)
        ours = [u for doc, u in requests if doc == page and not u.startswith(("file:", "data:"))]
        assert not ours, ours
        remote = [u for _, u in requests if u.startswith(("http:", "https:", "ws:", "wss:"))]
        assert not remote, remote
        severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "profile", ignore_errors=True)
