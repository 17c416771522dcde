"""The dashboard in a real browser: Debian's Chromium, driven by Selenium through the
system's chromedriver (`make browser` installs both), against `ethos serve` on
127.0.0.1. Open the page, search, recover a forgotten memory with one click, and see it
live again in the database; a screenshot of the page is saved (DASHBOARD_SCREENSHOT=FILE
keeps one there too)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from ethos.services.engine import Engine
from ethos.settings import Settings
from tests.servers import serving

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="Chromium and chromedriver are not installed: `make browser` installs them"
    " (apt-get install chromium chromium-driver)",
)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", "--window-size=1280,900")  # fmt: skip


@pytest.fixture
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


async def test_search_and_recover_with_one_click(
    browser: object, settings: Settings, database_url: str, conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:  # fmt: skip
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.wait import WebDriverWait

    assert isinstance(browser, WebDriver)
    async with Engine(settings) as engine:
        await engine.add("fact", agent_id="ada", content="Ada prefers green tea")
        await engine.add("episode", agent_id="ada", content="Ada met Bo at the harbour",
                         emotional_tone=0.7)  # fmt: skip
        await engine.add("fact", agent_id="bo", content="Bo <b>sails</b> on Sundays")
        lost = await engine.add("fact", agent_id="ada", content="Ada's locker code is 4711")
        await engine.forget("fact", [lost])
        faded = datetime.now(UTC) - timedelta(days=2)  # a working memory lasts 8 hours
        await engine.add("episode", agent_id="ada", content="Ada's train was late",
                         policy="working", created_at=faded)  # fmt: skip
        await engine.sweep()

    async with serving("serve", database_url, "127.0.0.1") as port:
        browser.get(f"http://127.0.0.1:{port}/")
        wait = WebDriverWait(browser, 20)
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "body[data-ready=yes]")))
        agents = [li.get_attribute("data-agent") for li in browser.find_elements(
            By.CSS_SELECTOR, "#agents li")]  # fmt: skip
        assert agents == ["ada", "bo"]
        assert browser.find_element(By.ID, "access").text == "read & write"
        live = browser.find_elements(By.CSS_SELECTOR, "#memories tbody tr")
        assert len(live) == 2 and live[0].find_elements(By.CSS_SELECTOR, "svg.forecast polyline")

        browser.find_element(By.ID, "search-query").send_keys("green tea")
        browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
        first = wait.until(ready.visibility_of_element_located(
            (By.CSS_SELECTOR, "#search-results tbody tr")))  # fmt: skip
        assert "Ada prefers green tea" in first.text

        row = f"#pruned tr[data-id='{lost}']"
        browser.find_element(By.CSS_SELECTOR, f"{row} button.recover").click()
        wait.until(ready.presence_of_element_located(
            (By.CSS_SELECTOR, f"#memories tr[data-id='{lost}']")))  # fmt: skip
        assert not browser.find_elements(By.CSS_SELECTOR, row)
        reasons = browser.find_element(By.ID, "pruned").text
        assert "Ada's train was late" in reasons and "decay" in reasons
        back = await conn.fetchrow("SELECT pruned, prune_reason FROM semantic_facts WHERE id = $1",
                                   lost)  # fmt: skip
        assert (back["pruned"], back["prune_reason"]) == (False, None)

        browser.find_element(By.CSS_SELECTOR, "#agents li[data-agent=bo]").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "agent-name"), "bo"))
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#memories tbody tr")))
        content = browser.find_element(By.CSS_SELECTOR, "#memories td.content")
        assert content.text == "Bo <b>sails</b> on Sundays"  # shown as text, never as HTML

        browser.find_element(By.CSS_SELECTOR, "#agents li[data-agent=ada]").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "agent-name"), "ada"))
        shot = tmp_path / "dashboard.png"
        assert browser.save_screenshot(str(shot))
        if os.environ.get("DASHBOARD_SCREENSHOT"):
            shutil.copy(shot, os.environ["DASHBOARD_SCREENSHOT"])

        browser.set_window_size(390, 844)  # a phone: nothing wider than the screen
        overflow = "return document.documentElement.scrollWidth - window.innerWidth"
        assert browser.execute_script(overflow) <= 0


async def test_another_agent_after_a_search_forget_and_recover(
    browser: object, settings: Settings, database_url: str, conn: asyncpg.Connection,
    tmp_path: Path,
) -> None:  # fmt: skip
    """As a person goes: search in one agent's view, click another agent (the hits
    shown are not the first agent's under the second's name), forget and recover there;
    the times read in their units, not "0.0 h ago"."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.wait import WebDriverWait

    assert isinstance(browser, WebDriver)
    async with Engine(settings) as engine:
        await engine.add("fact", agent_id="ada", content="Ada prefers green tea")
        kept = await engine.add("fact", agent_id="bo", content="Bo drinks green tea at dawn")
        await engine.add("fact", agent_id="bo", content="Bo sails on Sundays")

    def shown(selector: str) -> list[str]:
        return [row.text for row in browser.find_elements(By.CSS_SELECTOR, selector)]

    async with serving("serve", database_url, "127.0.0.1") as port:
        browser.get(f"http://127.0.0.1:{port}/")
        wait = WebDriverWait(browser, 20)
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "body[data-ready=yes]")))
        browser.find_element(By.ID, "search-query").send_keys("green tea")
        browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
        wait.until(
            ready.visibility_of_element_located((By.CSS_SELECTOR, "#search-results tbody tr"))
        )
        assert any("Ada prefers green tea" in hit for hit in shown("#search-results tbody tr"))

        browser.find_element(By.CSS_SELECTOR, "#agents li[data-agent=bo]").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "agent-name"), "bo"))
        wait.until(ready.text_to_be_present_in_element((By.ID, "memories"), "Bo sails"))
        assert not any("Ada" in hit for hit in shown("#search-results tbody tr"))
        assert not browser.find_element(By.ID, "search-results").is_displayed()
        assert browser.find_element(By.ID, "search-query").get_attribute("value") == ""

        browser.find_element(By.ID, "search-query").send_keys("green tea")
        browser.find_element(By.CSS_SELECTOR, "#search-form button").click()
        wait.until(ready.text_to_be_present_in_element((By.ID, "search-results"), "dawn"))
        assert not any("Ada" in hit for hit in shown("#search-results tbody tr"))
        save(browser, tmp_path, "dashboard-search.png")

        row = f"tr[data-id='{kept}']"
        browser.find_element(By.CSS_SELECTOR, f"#memories {row} button.forget").click()
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, f"#pruned {row}")))
        assert not browser.find_elements(By.CSS_SELECTOR, f"#search-results {row}")
        forgotten = browser.find_element(By.CSS_SELECTOR, f"#pruned {row}").text
        assert "manual" in forgotten and re.search(r"\b\d+ s ago\b", forgotten), forgotten
        prunes = browser.find_element(By.CSS_SELECTOR, "#memories td.num:nth-child(7)").text
        assert re.fullmatch(r"in \d+ days", prunes), prunes
        save(browser, tmp_path, "dashboard-forgotten.png")

        browser.find_element(By.CSS_SELECTOR, f"#pruned {row} button.recover").click()
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, f"#memories {row}")))
        assert not browser.find_elements(By.CSS_SELECTOR, f"#pruned {row}")
        back = await conn.fetchval("SELECT pruned FROM semantic_facts WHERE id = $1", kept)
        assert back is False
        save(browser, tmp_path, "dashboard-recovered.png")


def save(browser: object, folder: Path, name: str) -> None:
    """A screenshot of the page; DASHBOARD_SCREENSHOTS=DIR keeps a copy there."""
    from selenium.webdriver.remote.webdriver import WebDriver

    assert isinstance(browser, WebDriver)
    shot = folder / name
    assert browser.save_screenshot(str(shot))
    if os.environ.get("DASHBOARD_SCREENSHOTS"):
        shutil.copy(shot, Path(os.environ["DASHBOARD_SCREENSHOTS"]) / name)
