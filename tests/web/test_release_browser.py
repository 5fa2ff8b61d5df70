"""The release done in a real headless Chromium: read the blocked report, review and sign, canary, promote.

Screenshots of the report page and the rollout page are written to ``<tmp>/screenshots/`` (the path is
printed with ``-s``), so a person can look at them after a run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.gate_fixture import HOSTILE, TITLE
from tests.web.test_browser import ARGS, CHROMIUM, pytestmark  # noqa: F401  (skip without Chromium)


@pytest.fixture
def browser_page(served_release: Any) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    url, _ = served_release
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 900})
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        pg.dialogs = []  # type: ignore[attr-defined]
        pg.errors = []  # type: ignore[attr-defined]

        def on_dialog(dialog: Any) -> None:
            pg.dialogs.append((dialog.type, dialog.message))  # type: ignore[attr-defined]
            dialog.accept()

        pg.on("dialog", on_dialog)
        pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))  # type: ignore[attr-defined]
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


def _shots(tmp: Path) -> Path:
    folder = tmp / "screenshots"
    folder.mkdir(exist_ok=True)
    return folder


def _no_script_ran(page: Any) -> None:
    page.wait_for_timeout(100)
    # the only dialogs are the page's own confirms (rollback, promote); hostile markup would alert()
    assert [d for d in page.dialogs if d[0] != "confirm"] == []  # type: ignore[attr-defined]
    assert page.locator("main script, main img[src=x]").count() == 0


def test_read_the_blocked_report_then_review_and_sign(
    browser_page: Any, served_release: Any, helpers: Any
) -> None:
    page = browser_page
    _, release = served_release
    _login(page, "rita", helpers.password)
    # the blocked report is listed (unsigned) and opens with its outcome and findings first
    page.click("text=Gate reports")
    row = page.locator(f"tr[data-report='{release.blocked.report_id}']")
    assert "blocked" in (row.text_content() or "") and "unsigned" in (row.text_content() or "")
    row.locator("text=open").click()
    assert page.text_content("#outcome") == "blocked"
    assert (page.text_content("#headline") or "").startswith("BLOCK;")
    assert "make refund-cap pass all 5 attempts" in (page.text_content("#findings") or "")
    # the plots: one point per scenario and side, one per group, with the tolerance lines
    assert page.locator("#scenario-chart circle.pt").count() == 10
    groups = 1 + len(release.blocked.comparison.categories)
    assert page.locator("#delta-chart circle.pt.delta").count() == groups
    assert page.locator("#delta-chart line.tolerance").count() == groups
    assert page.locator("#delta-chart rect.noise").count() == 1
    page.screenshot(path=str(_shots(release.env.tmp) / "report-blocked.png"), full_page=True)
    # the hostile scenario title shows as text
    assert TITLE in (page.text_content("#scenarios") or "")
    _no_script_ran(page)

    # the report that needs a sign-off: signing first is refused with the gate's reason
    page.goto(f"/reports/{release.signoff.report_id}")
    page.check("#outcome-sign-off")
    page.fill("#sign-reason", "ship it")
    page.click("#sign-button")
    page.wait_for_selector("text=sign refused")
    assert "not yet read: order-status" in (page.text_content(".flash.error") or "")
    # read it side by side, mark it read with a note
    page.click("tr[data-scenario='order-status'] a.open-scenario")
    assert page.locator("#side-baseline details.attempt").count() == 5
    assert page.locator("#side-candidate details.attempt.fail").count() == 5
    page.fill("#review-note", f"read all five: {HOSTILE}")
    page.click("#mark-read")
    page.wait_for_selector("text=every newly failing scenario has been read")
    assert HOSTILE in (page.text_content("tr[data-scenario='order-status']") or "")
    _no_script_ran(page)
    # `pass` is refused (the gate did not pass); a pass with sign-off is signed
    page.check("#outcome-pass")
    page.fill("#sign-reason", "fine")
    page.click("#sign-button")
    page.wait_for_selector("text=the gate said needs-sign-off, so `pass` cannot be signed")
    page.check("#outcome-sign-off")
    page.fill("#sign-reason", f"slower order status accepted {HOSTILE}")
    page.click("#sign-button")
    page.wait_for_selector("text=pass-with-sign-off signed by rita")
    assert HOSTILE in (page.text_content("#signature") or "")
    # a second signature needs an explicit supersede
    page.check("#outcome-block")
    page.fill("#sign-reason", "second thoughts")
    page.click("#sign-button")
    page.wait_for_selector("text=already signed")
    page.check("#outcome-block")
    page.fill("#sign-reason", "refund complaints")
    page.check("#supersede")
    page.click("#sign-button")
    page.wait_for_selector("text=block signed by rita")
    assert page.locator("#decisions-table tbody tr").count() == 2
    page.screenshot(path=str(_shots(release.env.tmp) / "report-signed.png"), full_page=True)
    _no_script_ran(page)
    assert page.errors == []  # type: ignore[attr-defined]


def test_hostile_attempt_content_is_text(browser_page: Any, served_release: Any, helpers: Any) -> None:
    page = browser_page
    _, release = served_release
    _login(page, "vic", helpers.password)
    page.goto(f"/reports/{release.blocked.report_id}/scenarios/refund-cap")
    failed = page.locator("#side-candidate details.attempt.fail")
    assert failed.count() == 1
    assert (failed.locator("pre.answer").text_content() or "") == f"I refunded $250. {HOSTILE}"
    assert HOSTILE in (failed.locator("td.chunk").text_content() or "")
    assert HOSTILE.replace('"', '\\"') in (failed.locator("pre.tool-args").text_content() or "")
    assert TITLE in (page.text_content("main") or "")
    _no_script_ran(page)


def test_canary_widen_with_a_reason_rollback_needs_one(
    browser_page: Any, served_release: Any, helpers: Any
) -> None:
    page = browser_page
    _, release = served_release
    env = release.env
    _login(page, "rita", helpers.password)
    # sign the fixed candidate, then start its canary from the rollout page
    for scenario in release.signoff.newly_failing:
        env.controller.decisions.add_review(release.signoff, scenario, "rita", "read")
    decision = env.controller.decisions.sign(
        release.signoff, signed_by="rita", outcome="pass-with-sign-off", reason="accepted"
    )
    page.goto("/")
    assert page.is_disabled("#rollback")  # nothing to roll back yet
    page.select_option("#decision", decision.id)
    page.fill("input[name=plan]", "10,50,100")
    page.click("#start")
    page.wait_for_selector("text=canary 10% (step 1 of 3)")
    helpers.write(env.path, "baseline", 150)
    helpers.write(env.path, "candidate", 150)
    deadline = time.monotonic() + 15  # the page's measures are recomputed at most every 5 s per worker
    page.reload()
    while not page.is_enabled("#widen") and time.monotonic() < deadline:
        time.sleep(0.5)
        page.reload()
    assert page.is_enabled("#widen")
    # each measure's verdict in words; the thresholds say where they come from
    note = " ".join((page.text_content("#threshold-note") or "").split())
    assert "lower bound of its worsening at 99%, valid at every look" in note and "upper bound at 55%" in note
    row = page.text_content("#measures-table tr[data-measure=error_rate]") or ""
    assert "confidently within the tolerance" in row
    page.click("#widen")  # no reason: refused
    page.wait_for_selector("text=widen refused: say why")
    page.fill("#widen-why", f"equal on 150 each {HOSTILE}")
    page.click("#widen")
    page.wait_for_selector("text=canary 50% (step 2 of 3)")
    assert HOSTILE in (page.text_content("#audit-table") or "")
    # charts per measure, a point per arm in the bin the traffic fell in, and start/widen markers
    chart = page.locator("svg.measure-chart[data-measure=error_rate]")
    assert (
        chart.locator("circle.pt.baseline").count() >= 1 and chart.locator("circle.pt.candidate").count() >= 1
    )
    assert chart.locator("g.marker.start").count() == 1 and chart.locator("g.marker.widen").count() == 1
    assert "pp" in (page.text_content("#measures-table") or "")
    page.screenshot(path=str(_shots(env.tmp) / "rollout.png"), full_page=True)
    # rollback without a reason is refused; with one it rolls back
    page.click("#rollback")
    page.wait_for_selector("text=rollback refused: a rollback needs a reason")
    assert env.controller.state().status == "canary"
    page.fill("#rollback-reason", "refund complaints")
    page.click("#rollback")
    page.wait_for_selector("#state >> text=rolled back")
    assert page.dialogs == [("confirm", "Roll back: all traffic to the baseline now?")] * 2  # type: ignore[attr-defined]
    assert page.is_disabled("#rollback")
    assert page.locator("svg.measure-chart g.marker.rollback").count() >= 1
    _no_script_ran(page)


def test_promote_from_the_inbox(browser_page: Any, served_release: Any, helpers: Any) -> None:
    from replaygate.golden import GoldenSet

    page = browser_page
    _, release = served_release
    _login(page, "rita", helpers.password)
    page.click("text=Failure inbox")
    page.select_option("#filter-promoted", "no")
    page.click("#inbox-filters button")
    page.click(f"a[href='/traces/{release.env.hostile_trace}']")
    assert page.text_content("#output") == helpers.xss
    page.fill("#promote-owner", "oncall-ana")
    page.select_option("#promote-origin", "production-incident")
    page.check("#promote-must-pass")
    page.click("#promote-button")
    page.wait_for_selector("#promoted-as")
    [scenario] = GoldenSet(release.env.tmp / "golden").load()
    assert scenario.source_trace == release.env.hostile_trace and scenario.must_pass
    assert scenario.owner == "oncall-ana"
    page.goto("/inbox?promoted=no")
    assert page.locator(f"a[href='/traces/{release.env.hostile_trace}']").count() == 0
    _no_script_ran(page)
