"""The console in a real headless browser (Debian's chromium driven by Playwright), at a desktop's
width and a phone's: a session started with the pickers' defaults, a call seen while it runs and
then in its tree, the filters and the per-agent figures; approving, editing, pausing, taking over
and the limit banner, started from the keyboard; durable tasks submitted, followed, opened by
id and cancelled. Neither a page error nor a console message of
level error or warning is allowed, nor a page wider than its window.

Screenshots go to ``$A2A_ARTIFACTS/console`` (default ``artifacts/console`` at the repository's
root); each test prints the folder (``pytest -rP`` shows it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import msgspec
import pytest

from a2a import Agent, Context, Settings
from a2a.console.links import Jaeger
from bus.errors import InvalidParams
from tests.console.conftest import Console
from tests.console.test_tasks import worker
from tests.helpers import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CHROMIUM = os.environ.get("A2A_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("A2A_ARTIFACTS") or ROOT / "artifacts") / "console"

if CHROMIUM is None and not os.environ.get("CI"):  # .ci/run installs it: there its absence fails
    pytest.skip("no chromium binary: apt-get install chromium, or set A2A_CHROMIUM", allow_module_level=True)

from playwright.async_api import Browser, Page, async_playwright, expect  # noqa: E402

SIZES = [(1280, 900), (800, 900), (390, 844)]
JAEGER = "http://jaeger.example:16686"


@pytest.fixture
def jaeger() -> Jaeger:
    return Jaeger.checked(JAEGER)


@pytest.fixture
def tasks_on() -> bool:
    return False


@pytest.fixture
def settings(settings: Settings, tasks_on: bool) -> Settings:
    return msgspec.structs.replace(settings, tasks=tasks_on)


def sleeper() -> Agent:
    """Calls relay1 (which calls relay2, which calls remote), then sleeps long enough to be seen running."""
    agent = Agent("sleeper", max_concurrency=4)

    @agent.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        await ctx.call("relay1", "run", {"text": "from the sleeper"})
        await anyio.sleep(1.5)
        return "rested"

    @agent.action("fail")
    async def fail(ctx: Context, params: dict[str, Any]) -> str:
        raise InvalidParams("the sleeper refuses on purpose")

    return agent


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        assert CHROMIUM is not None, "no chromium binary: apt-get install chromium, or set A2A_CHROMIUM"
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            await browser.close()


async def open_page(browser: Browser, width: int, height: int) -> tuple[Page, list[str]]:
    """A page of this size, and the list its errors and console warnings go to."""
    page = await browser.new_page(viewport={"width": width, "height": height})
    complaints: list[str] = []
    page.on("pageerror", lambda exc: complaints.append(f"page error: {exc}"))
    loud = ("error", "warning")
    page.on("console", lambda m: complaints.append(f"{m.type}: {m.text}") if m.type in loud else None)
    return page, complaints


async def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    print(f"screenshot {ARTIFACTS / name}.png")


async def fits(page: Page, width: int) -> None:
    """Nothing wider than the window: no horizontal scrolling."""
    assert await page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}px" for w, _ in SIZES])
async def test_defaults_a_running_call_its_tree_filters_and_figures(
    console: Console, browser: Browser, width: int, height: int
) -> None:
    await console.rt.serve(sleeper())
    page, complaints = await open_page(browser, width, height)
    await page.goto(console.url)
    await expect(page.locator("#conn")).to_have_text("live")

    # The pickers' defaults: the local program, and a remote agent its policy allows.
    await expect(page.locator("#new-local")).to_have_value("drafter")
    await expect(page.locator("#new-remote")).to_have_value("remote")
    await expect(page.locator("#allowed")).to_have_text("drafter may send to: remote")
    await page.fill("#new-objective", "review this API for security issues")
    await page.click("#start")
    await expect(page.locator("#session-state")).to_have_text("ready_to_send")
    await expect(page.locator("#start-error")).to_have_text("")
    await expect(page.locator("#draftbox")).to_be_visible()

    # A call that runs for a while shows while it runs, its time ticking; its tree is one click away.
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(console.rt.call, "sleeper", "run", {}, user_id="local"))
        row = page.locator("#calls li.call.running", has_text="sleeper")
        await expect(row).to_have_count(1, timeout=5000)
        await expect(row.locator(".badge")).to_have_text("running")
        ticking = await row.locator(".ms").text_content()
        await expect(row.locator(".ms")).not_to_have_text(ticking or "", timeout=1000)
        await row.locator("button.row").click()
        # client > sleeper > relay1 > relay2 > remote
        await expect(page.locator("#tree li.node")).to_have_count(4)
        await expect(page.locator("#tree li.node li.node li.node li.node")).to_contain_text("relay2")
        await expect(page.locator("#detail")).to_contain_text("running for")
        await shot(page, f"{width}-running")
    await expect(page.locator("#tree li.node.running")).to_have_count(0)
    await expect(page.locator("#tree li.node.ok")).to_have_count(4)
    await expect(page.locator("#detail")).to_contain_text("took")
    root = await page.locator("#tree > ul > li.node").get_attribute("data-id")
    trace = page.locator("#detail a.trace")
    await expect(trace).to_have_text("Open its trace in Jaeger")
    link = urlsplit(await trace.get_attribute("href") or "")
    assert f"{link.scheme}://{link.netloc}{link.path}" == JAEGER + "/search"
    assert json.loads(parse_qs(link.query)["tags"][0]) == {"a2a.correlation_id": root}
    await expect(page.locator("#tree a.trace")).to_have_count(4)  # one for each call

    # Filters: by user, by error code, by agent.
    with pytest.raises(InvalidParams):
        await console.rt.call("sleeper", "fail", {}, user_id="bob")
    rows = page.locator("#calls li.call")
    await page.select_option("#filter-user", "bob")
    await expect(rows).to_have_count(1)
    await expect(rows).to_contain_text("INVALID_PARAMS")
    await page.select_option("#filter-user", "")
    await page.select_option("#filter-error", "INVALID_PARAMS")
    await expect(rows).to_have_count(1)
    await page.select_option("#filter-error", "")
    await page.select_option("#filter-agent", "sleeper")
    await expect(rows).to_have_count(3)  # run, its call to relay1, fail
    for text in await rows.all_text_contents():
        assert "sleeper" in text

    # Per-agent figures (the agent filter leaves its own row).
    figures = page.locator('#agents tr[data-agent="sleeper"]')
    await expect(page.locator("#agents tbody tr")).to_have_count(1)
    await expect(figures.locator('td[data-label="errors"]')).to_have_text("INVALID_PARAMS \u00d71")
    assert await figures.locator('td[data-label="calls/min"]').text_content() == "0.4"  # 2 calls in 5 min
    assert (await figures.locator('td[data-label="p99"]').text_content() or "").endswith(" s")
    await expect(figures.locator('td[data-label="load"]')).to_have_text("0/4")
    await fits(page, width)
    await shot(page, f"{width}-filtered")
    await page.click("#filter-clear")
    await expect(rows).not_to_have_count(3)
    await fits(page, width)

    # A session's conversation, picked in the list: the calls it made.
    await page.locator("#conversations button.row", has_text="review this API").click()
    await expect(page.locator("#tree-of")).to_contain_text("in conversation sess_")
    await expect(page.locator("#tree li.node")).to_have_text([re.compile(r"client → drafter\.prompt")])
    await expect(page.locator("#conversations button.row", has_text="client → sleeper.fail")).to_have_count(1)

    # A list is one Tab stop; the arrow keys move in it, Enter picks.
    await page.focus('#calls button.row[tabindex="0"]')
    await page.keyboard.press("Home")
    await expect(page.locator("#calls li.call").first.locator("button.row")).to_be_focused()
    await page.keyboard.press("ArrowDown")
    second = page.locator("#calls li.call").nth(1)
    await expect(second.locator("button.row")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(second.locator("button.row")).to_have_attribute("aria-current", "true")
    await expect(page.locator("#detail")).to_be_visible()
    assert complaints == []


async def test_keyboard_start_approve_edit_pause_take_over_and_the_limit_banner(
    console: Console, browser: Browser
) -> None:
    page, complaints = await open_page(browser, 1280, 900)
    await page.goto(console.url)
    await expect(page.locator("#conn")).to_have_text("live")
    await expect(page.locator("#new-remote")).to_have_value("remote")
    await page.fill("#new-max-turns", "3")

    # From the objective to Start with the Tab key; the focus shows.
    await page.focus("#new-objective")
    await page.keyboard.type("review this API for security issues")
    for _ in range(4):
        await page.keyboard.press("Tab")
        if await page.evaluate("document.activeElement.id") == "start":
            break
    assert await page.evaluate("document.activeElement.id") == "start"
    assert await page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    await page.keyboard.press("Enter")
    await expect(page.locator("#tasks-off")).to_contain_text("Durable tasks are off here")
    await expect(page.locator("#tasks-on")).to_be_hidden()

    await expect(page.locator("#objective")).to_have_text("review this API for security issues")
    await expect(page.locator("#review")).to_have_text("manual mode: approve each message")
    assert (await page.input_value("#draft")).startswith("draft 0")
    assert console.received == []  # nothing is sent before the person approves
    await shot(page, "keyboard-1-draft-waiting")

    await page.click("#approve")
    await expect(page.locator(".turn.remote_agent")).to_have_count(1)
    await expect(page.locator(".turn.local_agent .label")).to_have_text("user-approved")
    await expect(page.locator("#draftbox")).to_be_visible()  # the next draft waits

    await page.click("#pause")
    await expect(page.locator("#session-state")).to_have_text("paused")
    await expect(page.locator("#resume")).to_be_enabled()
    await page.click("#resume")
    await expect(page.locator("#session-state")).to_have_text("ready_to_send")

    await page.fill("#draft", "my own wording of the second message")
    await expect(page.locator("#approve")).to_have_text("Send my edit")
    await page.click("#approve")
    await expect(page.locator(".turn.remote_agent")).to_have_count(2)
    await expect(page.locator(".turn.local_agent .label")).to_have_text(["user-approved", "user-edited"])
    assert [r.text for r in console.received][1] == "my own wording of the second message"

    # Take over with a draft waiting: it is set aside, said so, and kept in the box to start from.
    await expect(page.locator("#draft")).to_have_value(re.compile(r"^draft 2 "))
    waiting = await page.input_value("#draft")
    await page.click("#takeover")
    await expect(page.locator("#notice")).to_contain_text("draft was set aside and not sent")
    await expect(page.locator("#takeover")).to_have_text("Hand back")
    await expect(page.locator("#draft")).to_have_value(waiting)
    await expect(page.locator("#approve")).to_be_disabled()
    await shot(page, "keyboard-2-taken-over")
    await page.fill("#draft", "the person's own last message")
    await page.click("#write")
    await expect(page.locator(".turn.user .label")).to_have_text("user-written")
    await expect(page.locator("#banner")).to_contain_text("Limit reached (maxTurns)")
    await expect(page.locator("#session-state")).to_have_text("stopped")
    assert [r.text for r in console.received][2] == "the person's own last message"
    await expect(page.locator("#calls li.call")).to_have_count(6)  # three prompts to the drafter, three sends
    await shot(page, "keyboard-3-limit-banner")
    assert complaints == []


TASK_SIZES = [(1280, 900), (390, 844)]


@pytest.mark.parametrize("tasks_on", [True])
@pytest.mark.parametrize(("width", "height"), TASK_SIZES, ids=[f"{w}px" for w, _ in TASK_SIZES])
async def test_tasks_submitted_followed_opened_by_id_and_cancelled(
    console: Console, browser: Browser, width: int, height: int
) -> None:
    await console.rt.serve(*worker())
    page, complaints = await open_page(browser, width, height)
    await page.goto(console.url)
    await expect(page.locator("#conn")).to_have_text("live")
    await expect(page.locator("#tasks li.empty")).to_have_text("No tasks yet: submit one.")

    # A task of about 2 s, from the form: running with its attempt, its journal growing.
    await page.fill("#task-agent", "worker")
    await page.fill("#task-action", "slow")
    await page.fill("#task-params", '{"what": "the report"}')
    await page.click("#task-submit")
    slow = page.locator("#tasks li.task", has_text="worker.slow")
    await expect(slow.locator(".badge")).to_have_text("running")
    await expect(slow.locator(".attempts")).to_have_text("attempt 1")
    slow_id = await slow.get_attribute("data-id")
    await expect(page.locator("#task-state")).to_have_text("running")  # opened once submitted
    await expect(page.locator("#journal li.event.attempt")).to_contain_text("attempt 1 started on worker-")
    await expect(page.locator("#journal li.event.child")).to_contain_text("submitted the task")
    await expect(page.locator("#journal li.event.progress")).not_to_have_count(0)
    took = page.locator("#task-facts dd.ms")
    ticking = await took.text_content()
    await expect(took).not_to_have_text(ticking or "", timeout=1000)
    await shot(page, f"tasks-{width}-running")

    # Another one, submitted elsewhere for this user, opened by its id from the keyboard, cancelled.
    nap = await console.rt.tasks.submit("worker", "nap", {}, user_id="local")
    await page.fill("#task-id", nap.id)
    await page.press("#task-id", "Enter")
    await expect(page.locator("#h-task")).to_be_focused()
    await expect(page.locator("#task-what")).to_have_text("worker.nap")
    await expect(page.locator("#task-state")).to_have_text("running")
    await page.click("#task-cancel")
    await expect(page.locator("#task-state")).to_have_text("cancelled")
    await expect(page.locator("#task-cancel")).to_be_disabled()
    await expect(page.locator("#task-facts")).to_contain_text("CANCELLED: cancelled by its caller")
    await expect(page.locator("#journal li.event.ended")).to_contain_text("cancelled: CANCELLED")
    await expect(page.locator(f'#tasks li[data-id="{nap.id}"] .badge')).to_have_text("cancelled")

    # The first one ends: its row and, opened again, its result and the journal's last line.
    await expect(slow.locator(".badge")).to_have_text("completed", timeout=8000)
    await slow.locator("button.row").click()
    await expect(page.locator("#task-state")).to_have_text("completed")
    await expect(page.locator("#task-facts pre.result")).to_contain_text('"done":"the report"')
    events = page.locator("#journal li.event")
    await expect(events.last).to_contain_text("completed (attempt 1)")
    kinds = [await e.get_attribute("class") for e in await events.all()]
    assert kinds == [f"event {k}" for k in ("attempt", "child", *["progress"] * 4, "ended")], kinds
    assert await page.locator(f'#tasks li[data-id="{slow_id}"]').count() == 1
    await expect(page.locator("#tasks li.task.completed")).to_have_count(2)  # the child, to helper, too
    await fits(page, width)
    await shot(page, f"tasks-{width}-ended")
    assert complaints == []
