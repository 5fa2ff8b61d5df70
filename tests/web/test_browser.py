"""The release page in a real headless Chromium (the system package), driven by Playwright.

Needs ``/usr/bin/chromium`` (Debian: ``apt-get install chromium``); skipped with that message otherwise.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM),
        reason="needs the system Chromium at /usr/bin/chromium: run `apt-get install chromium`, then "
        "`uv run --locked pytest -m browser tests/web`",
    ),
]


@pytest.fixture
def page(served: Any) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(base_url=served.url)
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        pg.dialogs = []  # type: ignore[attr-defined]

        def on_dialog(dialog: Any) -> None:
            pg.dialogs.append((dialog.type, dialog.message))  # type: ignore[attr-defined]
            dialog.accept()

        pg.on("dialog", on_dialog)
        try:
            yield pg
        finally:
            context.close()
            browser.close()


def _login(page: Any, user: str, password: str) -> None:
    page.goto("/login")
    page.fill("#username", user)
    page.fill("#password", password)
    page.click("#login")
    page.wait_for_selector("#who")


def test_release_flow_in_chromium(page: Any, served: Any, helpers: Any) -> None:
    _login(page, "rita", helpers.password)
    assert page.text_content("#state") == "idle"
    page.select_option("#decision", "dec-pass")
    page.fill("input[name=plan]", "10,50,100")
    page.click("#start")
    page.wait_for_selector("text=canary 10% (step 1 of 3)")
    assert page.text_content("#candidate-share") == "10%"
    # live traffic arrives: the measures show both arms side by side, with intervals
    helpers.write(served.env.path, "baseline", 12, escalate_every=4)
    helpers.write(served.env.path, "candidate", 6, escalate_every=2)
    deadline = time.monotonic() + 15  # the page's measures are recomputed at most every 5 s per worker
    while True:
        page.reload()
        header = page.text_content("#measures-table thead") or ""
        if "baseline (n=12)" in header or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "baseline (n=12)" in header and "candidate (n=6)" in header
    row = page.text_content("#measures-table tr[data-measure=escalation_rate]") or ""
    assert "25.0%" in row and "50.0%" in row and "+25.0 pp [" in row
    # one chart per measure with data; each arm's points (one per time bin it served in) hold its requests
    chart = page.locator("svg.measure-chart[data-measure=escalation_rate]")
    for arm, n in (("baseline", 12), ("candidate", 6)):
        points = chart.locator(f"circle.pt.{arm}")
        assert 1 <= points.count() <= 2  # 12 ms of traffic: one bin, or two when it straddles a boundary
        assert sum(int(points.nth(i).get_attribute("data-n") or 0) for i in range(points.count())) == n
    assert chart.locator("polygon.band").count() == 1 and chart.locator("g.marker.start").count() == 1
    # widen is disabled, with the reason
    assert page.is_disabled("#widen")
    assert "not enough traffic yet" in (page.text_content("#widen-reason") or "")
    # rollback without a reason is refused, with the reason why
    page.click("#rollback")
    page.wait_for_selector("text=rollback refused: a rollback needs a reason")
    assert page.text_content("#state") == "canary 10% (step 1 of 3)"
    page.dialogs.clear()  # type: ignore[attr-defined]
    # roll back with one click (and a confirm)
    page.fill("#rollback-reason", "refund complaints")
    page.click("#rollback")
    page.wait_for_selector("text=rolled back")
    assert page.text_content("#state") == "rolled back"
    assert page.is_disabled("#rollback")  # nothing left to roll back
    assert page.dialogs == [("confirm", "Roll back: all traffic to the baseline now?")]  # type: ignore[attr-defined]
    state = served.env.controller.state()
    assert state.status == "rolled_back" and state.reason == "refund complaints"
    assert served.env.controller.audit()[0].actor == "rita"
    # the page's CSP forbids inline script: the confirm came from the static file
    response = httpx.get(served.url + "/login")
    assert "script-src 'self'" in response.headers["content-security-policy"]


def test_script_in_trace_output_is_text(page: Any, served: Any, helpers: Any) -> None:
    _login(page, "vic", helpers.password)
    page.goto(f"/traces/{served.env.hostile_trace}")
    assert page.text_content("#output") == helpers.xss
    assert page.locator("#output script").count() == 0
    page.goto("/inbox")
    assert page.locator(f"a[href='/traces/{served.env.hostile_trace}']").count() == 1
    page.wait_for_timeout(200)
    assert page.dialogs == []  # type: ignore[attr-defined]  # no alert ran


def test_posts_without_login_or_csrf_are_refused(served: Any, helpers: Any) -> None:
    with httpx.Client(base_url=served.url) as client:
        # no session, no token
        assert client.post("/rollout/rollback", data={"reason": "x"}).status_code == 400
        # a session and a CSRF token, but nobody logged in
        token = helpers.csrf(client.get("/login").text)
        refused = client.post("/rollout/start", data={"decision_id": "dec-pass", "csrf_token": token})
        assert refused.status_code == 401
        # logged in, but no CSRF token
        client.post("/login", data={"username": "rita", "password": helpers.password, "csrf_token": token})
        assert client.get("/").status_code == 200
        assert client.post("/rollout/start", data={"decision_id": "dec-pass"}).status_code == 400
    assert served.env.controller.state().status == "idle"
