"""The release on the page (Flask test client): reports, review and sign, inbox, and the login's defences."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from markupsafe import escape

from replaygate.gate import DecisionError, check_signable
from replaygate.golden import GoldenSet
from tests.web.gate_fixture import HOSTILE, TITLE


def _client(release: Any, helpers: Any, user: str = "rita") -> Any:
    client = release.env.app.test_client()
    assert helpers.login(client, user).status_code == 302
    return client


def _flash(html: str) -> list[str]:
    return re.findall(r'<p class="flash [a-z]+" role="status">(.*?)</p>', html, re.S)


def test_every_report_is_listed_newest_first_and_filterable(release: Any, helpers: Any) -> None:
    client = _client(release, helpers, "vic")
    page = client.get("/reports").get_data(as_text=True)
    ids = re.findall(r'data-report="([^"]+)"', page)
    assert ids == [release.signoff.report_id, release.blocked.report_id]  # newest first, unsigned too
    assert "blocked" in page and "sign-off needed" in page and "unsigned" in page
    only = client.get("/reports?config=candidate").get_data(as_text=True)
    assert re.findall(r'data-report="([^"]+)"', only) == [release.blocked.report_id]
    assert 'data-report="' not in client.get("/reports?outcome=pass").get_data(as_text=True)
    assert 'data-report="' not in client.get("/reports?signed=yes").get_data(as_text=True)


def test_report_page_leads_with_outcome_findings_and_fixes(release: Any, helpers: Any) -> None:
    client = _client(release, helpers, "vic")
    page = client.get(f"/reports/{release.blocked.report_id}").get_data(as_text=True)
    order = [
        page.index(marker) for marker in ('id="outcome"', 'id="headline"', 'id="findings"', 'id="evidence"')
    ]
    assert order == sorted(order)
    assert page.index('id="evidence"') < page.index('class="fingerprints"')  # fingerprints folded, last
    assert '<details class="fingerprints">' in page  # closed
    assert "review REPORT " not in page and f"review {release.reports_dir / 'blocked'} refund-cap" in page
    assert "Noise floor" in page and 'id="mdd"' in page and "tolerance: a drop of at most 5 pp" in page
    # the gate's other lists: the two baselines disagree on warranty
    flaky = page.split('id="flaky"', 1)[1].split("</ul>", 1)[0]
    assert "warranty" in flaky and "refund-cap" not in flaky
    # the scenario titles are hostile: escaped everywhere
    assert HOSTILE not in page and str(escape(TITLE)) in page
    # plots: two points per scenario (baseline and candidate), one delta per group
    c = release.blocked.comparison
    assert page.count('class="pt base"') == 5 and page.count('class="pt head"') == 5
    assert page.count('class="pt delta"') == 1 + len(c.categories)


def test_scenario_side_by_side_shows_everything_escaped(release: Any, helpers: Any) -> None:
    client = _client(release, helpers, "vic")
    page = client.get(f"/reports/{release.blocked.report_id}/scenarios/refund-cap").get_data(as_text=True)
    assert 'id="side-baseline"' in page and 'id="side-candidate"' in page
    assert page.count('class="attempt ') == 10  # 5 attempts on each side
    assert HOSTILE not in page and "<img src=x" not in page
    text = str(escape(HOSTILE))
    assert f"I refunded $250. {text}" in page  # the answer
    assert f"Refunds above $200 need approval. {text}" in page  # the retrieved chunk
    assert str(escape(json.dumps(HOSTILE)[1:-1])) in page  # the tool argument, as JSON
    assert "forbidden_output_regex" in page and "FAIL" in page  # every check's result
    assert "issue_refund" in page and "Please refund order 4 (refund-cap)" in page  # tool call, turn
    assert client.get(f"/reports/{release.blocked.report_id}/scenarios/nope").status_code == 404


def _sign(client: Any, report_id: str, **form: str) -> Any:
    page = client.get(f"/reports/{report_id}").get_data(as_text=True)
    return client.post(
        f"/reports/{report_id}/sign", data={"csrf_token": helpers_csrf(page), **form}, follow_redirects=True
    )


def _review(client: Any, report_id: str, scenario: str, note: str) -> Any:
    page = client.get(f"/reports/{report_id}/scenarios/{scenario}").get_data(as_text=True)
    return client.post(
        f"/reports/{report_id}/scenarios/{scenario}/review",
        data={"csrf_token": helpers_csrf(page), "note": note},
        follow_redirects=True,
    )


def helpers_csrf(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match
    return match.group(1)


def test_sign_is_refused_until_read_exactly_as_the_cli(release: Any, helpers: Any) -> None:
    rid = release.signoff.report_id
    rita = _client(release, helpers)
    refused = _sign(rita, rid, outcome="pass-with-sign-off", reason="accepted").get_data(as_text=True)
    with pytest.raises(DecisionError) as cli:
        check_signable(release.signoff, "pass-with-sign-off", set())
    assert [f"sign refused: {escape(cli.value)}"] == _flash(refused)
    # a viewer may not mark read; a reviewer may, but may not sign
    vic = _client(release, helpers, "vic")
    assert _review(vic, rid, "order-status", "x").status_code == 403
    rev = _client(release, helpers, "rev")
    note = f"read all five {HOSTILE}"
    done = _review(rev, rid, "order-status", note).get_data(as_text=True)
    assert "every newly failing scenario has been read" in done and str(escape(note)) in done
    assert _sign(rev, rid, outcome="block", reason="no").status_code == 403
    # not a newly failing scenario: refused with the gate's reason
    assert "is not newly failing" in _review(rita, rid, "shipping", "x").get_data(as_text=True)
    # read: `pass` is still refused (the gate did not pass), a pass with sign-off is signed
    assert "cannot be signed" in _sign(rita, rid, outcome="pass", reason="fine").get_data(as_text=True)
    reason = f"order-status traded for speed {HOSTILE}"
    signed = _sign(rita, rid, outcome="pass-with-sign-off", reason=reason).get_data(as_text=True)
    assert "pass-with-sign-off signed by rita" in signed and HOSTILE not in signed
    decision = json.loads((release.reports_dir / "signoff" / "decision.json").read_text(encoding="utf-8"))
    assert decision["outcome"] == "pass-with-sign-off" and decision["signed_by"] == "rita"
    # a second signature is refused unless it supersedes, with a reason
    again = _sign(rita, rid, outcome="block", reason="changed my mind").get_data(as_text=True)
    assert "already signed" in again
    over = _sign(rita, rid, outcome="block", reason="refund complaints", supersede="yes").get_data(
        as_text=True
    )
    assert "block signed by rita" in over
    page = rita.get(f"/reports/{rid}").get_data(as_text=True)
    assert page.count("<td>in force</td>") == 1 and page.count("<td>superseded by <code>") == 1
    audit = release.env.app.extensions["replaygate.state"].web_store.audit_entries(subject=f"report:{rid}")
    assert [(a.action, a.outcome) for a in reversed(audit)] == [
        ("sign", "refused"),
        ("review", "applied"),
        ("review", "refused"),
        ("sign", "refused"),
        ("sign", "applied"),
        ("sign", "refused"),
        ("sign", "applied"),
    ]


def test_blocked_report_cannot_be_signed_away(release: Any, helpers: Any) -> None:
    rid = release.blocked.report_id
    rita = _client(release, helpers)
    for scenario in release.blocked.newly_failing:
        _review(rita, rid, scenario, "read")
    refused = _sign(rita, rid, outcome="pass-with-sign-off", reason="ship it").get_data(as_text=True)
    assert "cannot be signed away (rule 1)" in refused
    assert "block signed by rita" in _sign(rita, rid, outcome="block", reason="refund cap").get_data(
        as_text=True
    )
    assert "signed <strong>block</strong> by rita" in rita.get("/reports?signed=yes").get_data(as_text=True)


def test_twenty_wrong_passwords_lock_the_account_not_the_others(release: Any, helpers: Any) -> None:
    client = release.env.app.test_client()
    for _ in range(19):
        assert helpers.login(client, "rita", "wrong").status_code == 401
    locked = helpers.login(client, "rita", "wrong")
    assert locked.status_code == 429 and "locked" in locked.get_data(as_text=True)
    right = helpers.login(client, "rita")  # the right password no longer opens it
    assert right.status_code == 429 and "Too many wrong passwords" in right.get_data(as_text=True)
    assert helpers.login(release.env.app.test_client(), "vic").status_code == 302  # another user logs in
    audit = release.env.app.extensions["replaygate.state"].web_store.audit_entries()
    assert [(a.action, a.subject) for a in audit if a.action == "login-lockout"] == [
        ("login-lockout", "user:rita")
    ]


def test_a_cookie_from_before_logout_is_refused(release: Any, helpers: Any) -> None:
    client = _client(release, helpers)
    cookie = client.get_cookie("replaygate_session").value
    page = client.get("/").get_data(as_text=True)
    client.post("/logout", data={"csrf_token": helpers.csrf(page)})
    thief = release.env.app.test_client()
    thief.set_cookie("replaygate_session", cookie)
    response = thief.get("/reports")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_one_time_password_works_once_and_forces_a_new_one(release: Any, helpers: Any) -> None:
    client = release.env.app.test_client()
    first = helpers.login(client, "otto")
    assert first.status_code == 302 and first.headers["Location"].endswith("/password")
    assert client.get("/reports").headers["Location"].endswith("/password")  # nothing else until then
    page = client.get("/password").get_data(as_text=True)
    short = client.post(
        "/password", data={"csrf_token": helpers.csrf(page), "new_password": "a", "again": "a"}
    )
    assert short.status_code == 400
    new = "a much longer password"
    done = client.post(
        "/password", data={"csrf_token": helpers.csrf(page), "new_password": new, "again": new}
    )
    assert done.status_code == 302 and client.get("/reports").status_code == 200
    other = release.env.app.test_client()
    assert helpers.login(other, "otto").status_code == 401  # the one-time password is spent
    assert helpers.login(other, "otto", new).status_code == 302


def test_one_time_password_cannot_log_in_twice(release: Any, helpers: Any) -> None:
    assert helpers.login(release.env.app.test_client(), "otto").status_code == 302
    second = helpers.login(release.env.app.test_client(), "otto")
    assert second.status_code == 401 and "has been used" in second.get_data(as_text=True)


def test_promote_from_the_inbox_writes_the_same_scenario(release: Any, helpers: Any) -> None:
    trace = release.env.hostile_trace
    vic = _client(release, helpers, "vic")
    page = vic.get(f"/traces/{trace}").get_data(as_text=True)
    assert "needs the responder or releaser role" in page
    form = {
        "csrf_token": helpers.csrf(page),
        "owner": "ana",
        "origin": "production-incident",
        "tier": "smoke",
    }
    assert vic.post(f"/traces/{trace}/promote", data=form).status_code == 403
    res = _client(release, helpers, "res")
    form["csrf_token"] = helpers.csrf(res.get(f"/traces/{trace}").get_data(as_text=True))
    done = res.post(f"/traces/{trace}/promote", data=form, follow_redirects=True).get_data(as_text=True)
    assert "promoted as" in done
    golden = GoldenSet(release.env.tmp / "golden")
    [scenario] = golden.load()
    assert (
        scenario.source_trace == trace
        and scenario.owner == "ana"
        and scenario.origin == "production-incident"
    )
    again = res.post(f"/traces/{trace}/promote", data=form, follow_redirects=True).get_data(as_text=True)
    assert "already promoted as" in again and len(golden.load()) == 1
    queue = res.get("/inbox?promoted=no").get_data(as_text=True)
    assert f"/traces/{trace}" not in queue
    assert f"/traces/{trace}" in res.get("/inbox?promoted=yes").get_data(as_text=True)


def test_inbox_pages_filters_and_groups(release: Any, helpers: Any) -> None:
    helpers.write(release.env.path, "candidate", 120, escalate_every=1)
    client = _client(release, helpers, "vic")
    first = client.get("/inbox").get_data(as_text=True)
    assert "Page 1 of 3" in first and first.count('class="failure"') == 50
    third = client.get("/inbox?page=3").get_data(as_text=True)
    assert third.count('class="failure"') == 122 - 100  # 120 escalations, the hostile one, an empty answer
    assert 'data-reason="escalation"' in first and "escalation (121)" in first
    only = client.get("/inbox?variant=baseline").get_data(as_text=True)
    assert only.count('class="failure"') == 2 and "Page 1 of 1" in only
    empty = client.get("/inbox?reason=empty_answer").get_data(as_text=True)
    assert empty.count('class="failure"') == 1 and 'data-reason="empty_answer"' in empty
