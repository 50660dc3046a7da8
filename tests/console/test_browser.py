"""The console in a real headless browser (Debian's chromium driven by Playwright): start a
session, approve a draft, pause, resume, and see the banner when a limit stops the run.

Screenshots go to ``$A2A_ARTIFACTS/console`` (default ``artifacts/console``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.console.conftest import Console

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CHROMIUM = os.environ.get("A2A_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("A2A_ARTIFACTS", "artifacts")) / "console"

if CHROMIUM is None and not os.environ.get("CI"):  # .ci/run installs it: there its absence fails
    pytest.skip("no chromium binary: apt-get install chromium, or set A2A_CHROMIUM", allow_module_level=True)

from playwright.async_api import Page, async_playwright, expect  # noqa: E402


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with async_playwright() as pw:
        assert CHROMIUM is not None, "no chromium binary: apt-get install chromium, or set A2A_CHROMIUM"
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            yield page
        finally:
            await browser.close()


async def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


async def test_start_approve_pause_resume_and_the_limit_banner(console: Console, page: Page) -> None:
    await page.goto(console.url)
    await expect(page.locator("#conn")).to_have_text("live")
    await expect(page.locator('#agents tr[data-agent="drafter"]')).to_have_count(1)
    await page.select_option("#new-local", "drafter")
    await page.select_option("#new-remote", "remote")
    await page.fill("#new-objective", "review this API for security issues")
    await page.select_option("#new-mode", "manual")
    await page.fill("#new-max-turns", "2")
    await page.click("#start")

    await expect(page.locator("#objective")).to_have_text("review this API for security issues")
    await expect(page.locator("#draftbox")).to_be_visible()
    await expect(page.locator("#review")).to_have_text("manual mode: approve each message")
    assert (await page.input_value("#draft")).startswith("draft 0")
    assert console.received == []  # nothing is sent before the person approves
    await shot(page, "1-draft-waiting")

    await page.click("#approve")
    await expect(page.locator(".turn.remote_agent")).to_have_count(1)
    await expect(page.locator(".turn.local_agent .label")).to_have_text("user-approved")
    await expect(page.locator("#draftbox")).to_be_visible()  # the next draft waits
    assert [r.text[:7] for r in console.received] == ["draft 0"]

    await page.click("#pause")
    await expect(page.locator("#session-state")).to_have_text("paused")
    await expect(page.locator("#resume")).to_be_enabled()
    await shot(page, "2-paused")
    await page.click("#resume")
    await expect(page.locator("#session-state")).to_have_text("ready_to_send")

    await page.fill("#draft", "my own wording of the second message")
    await page.click("#approve")
    await expect(page.locator("#banner")).to_be_visible()
    await expect(page.locator("#banner")).to_contain_text("Limit reached (maxTurns)")
    await expect(page.locator("#session-state")).to_have_text("stopped")
    assert [r.text for r in console.received][1] == "my own wording of the second message"
    await expect(page.locator("#calls .call")).to_have_count(4)  # two prompts to the drafter, two sends
    await shot(page, "3-limit-banner")
