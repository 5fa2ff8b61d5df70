"""The release page with Flask's test client: login, roles, CSRF, headers, escaping, API."""

from __future__ import annotations

import re
from typing import Any

import replaygate.canary
import replaygate.web
from replaygate.web._context import page_state

READ_TOKEN = "read-token-456"  # as in conftest


def test_public_names_pinned() -> None:
    assert sorted(replaygate.web.__all__) == sorted(
        ["CSP", "ROLES", "User", "WebConfig", "create_app", "hash_password", "load_users"]
    )
    assert {"CanaryController", "CanaryStore", "RolloutState", "simulate_live_traffic", "parse_plan"} <= set(
        replaygate.canary.__all__
    )
    for name in replaygate.canary.__all__:
        assert getattr(replaygate.canary, name) is not None


def test_pages_need_login(env: Any) -> None:
    client = env.app.test_client()
    for path in ("/", "/measures", "/audit", "/inbox", "/reports", f"/traces/{env.hostile_trace}"):
        response = client.get(path)
        assert response.status_code == 302 and "/login" in response.headers["Location"], path


def test_wrong_password_refused(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    assert helpers.login(client, "rita", "wrong").status_code == 401
    assert helpers.login(client, "nobody", "wrong").status_code == 401
    assert client.get("/").status_code == 302


def test_login_sets_safe_cookie_and_headers(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    response = helpers.login(client, "rita")
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = client.get("/")
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert "<script>" not in page.get_data(as_text=True).replace(
        '<script src="/static/app.js" defer></script>', ""
    )


def test_secure_cookie_flag_by_default(env: Any, helpers: Any) -> None:
    config = env.app.extensions["replaygate"]
    config.secure_cookies = True
    app = replaygate.web.create_app(config)
    response = helpers.login(app.test_client(), "rita")
    assert "Secure" in response.headers["Set-Cookie"]
    app.extensions["replaygate.state"].web_store.close()  # this second app opened its own


def test_csrf_less_post_refused(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "rita")
    response = client.post("/rollout/rollback", data={"reason": "no token"})
    assert response.status_code == 400 and "CSRF" in response.get_data(as_text=True)
    assert env.controller.audit() == []


def test_unauthenticated_post_refused(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    token = helpers.csrf(client.get("/login").get_data(as_text=True))
    response = client.post("/rollout/start", data={"decision_id": "dec-pass", "csrf_token": token})
    assert response.status_code == 401
    assert env.controller.state().status == "idle"


def test_viewer_cannot_act(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "vic")
    page = client.get("/").get_data(as_text=True)
    assert "You are a viewer" in page
    response = client.post(
        "/rollout/start", data={"decision_id": "dec-pass", "csrf_token": helpers.csrf(page)}
    )
    assert response.status_code == 403 and env.controller.state().status == "idle"


def test_releaser_start_widen_disabled_rollback(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "rita")
    page = client.get("/").get_data(as_text=True)
    assert "dec-pass" in page and "dec-block" not in page  # only signed passes can start
    assert "gate passed &lt;b&gt;bold&lt;/b&gt;" not in page  # the decision is shown only once running
    client.post(
        "/rollout/start",
        data={"decision_id": "dec-pass", "plan": "10,50,100", "csrf_token": helpers.csrf(page)},
    )
    page = client.get("/").get_data(as_text=True)
    assert 'id="state">canary 10% (step 1 of 3)' in page
    assert "gate passed &lt;b&gt;bold&lt;/b&gt;" in page  # decision reason escaped
    # the page judges the rollout by the tolerances its start recorded, and says whose they are
    assert env.controller.state().policy == env.controller.policy
    measures = client.get("/measures").get_data(as_text=True)
    assert f'id="policy-source">{env.controller.policy.describe()}</span>, recorded when this' in measures
    assert 'id="widen" disabled' in page and "not enough traffic yet" in page
    response = client.post("/rollout/widen", data={"csrf_token": helpers.csrf(page)}, follow_redirects=True)
    assert "widen refused: say why" in response.get_data(as_text=True)  # a widen needs a reason
    response = client.post(
        "/rollout/widen",
        data={"csrf_token": helpers.csrf(page), "reason": "looks fine"},
        follow_redirects=True,
    )
    assert "widen refused: not enough traffic yet" in response.get_data(as_text=True)
    refused = client.post("/rollout/rollback", data={"csrf_token": helpers.csrf(page)}, follow_redirects=True)
    assert "rollback refused: a rollback needs a reason" in refused.get_data(as_text=True)
    assert env.controller.state().status == "canary"
    response = client.post(
        "/rollout/rollback",
        data={"csrf_token": helpers.csrf(page), "reason": "angry users"},
        follow_redirects=True,
    )
    assert 'id="state">rolled back' in response.get_data(as_text=True)
    audit = env.controller.audit()
    assert [(e.action, e.outcome, e.actor) for e in audit] == [
        ("rollback", "applied", "rita"),
        ("widen", "refused", "rita"),
        ("start", "applied", "rita"),
    ]
    assert audit[0].reason == "angry users"
    assert "angry users" in client.get("/audit").get_data(as_text=True)


def test_trace_content_is_escaped(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "vic")
    inbox = client.get("/inbox").get_data(as_text=True)
    assert f"/traces/{env.hostile_trace}" in inbox
    assert helpers.xss not in inbox and "<img src=x" not in inbox
    page = client.get(f"/traces/{env.hostile_trace}").get_data(as_text=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert helpers.xss not in page and "<img src=x" not in page
    assert client.get("/traces/" + "0" * 32).status_code == 404


def test_api_get_has_etag(env: Any) -> None:
    client = env.app.test_client()
    first = client.get("/api/canary")
    assert first.status_code == 200 and first.json["status"] == "idle"  # type: ignore[index]
    etag = first.headers["ETag"]
    again = client.get("/api/canary", headers={"If-None-Match": etag})
    assert again.status_code == 304
    with env.app.app_context():
        cache = page_state().state_cache
    assert cache is not None and cache.reads == 1  # served from the cached row
    env.controller.start("dec-pass", actor="ana")  # a change in this process is served at once
    changed = client.get("/api/canary", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.json["status"] == "canary"  # type: ignore[index]
    assert changed.json["share"] == 0.01  # type: ignore[index]
    # without the read token: no routing salt, no rollout or decision id
    assert not {"salt", "rollout_id", "decision_id"} & set(changed.json)  # type: ignore[arg-type]
    assert env.controller.state().salt not in changed.get_data(as_text=True)
    wrong = client.get("/api/canary", headers={"Authorization": "Bearer nope"})
    assert "salt" not in wrong.json  # type: ignore[operator]
    full = client.get("/api/canary", headers={"Authorization": f"Bearer {READ_TOKEN}"})
    assert full.json["salt"] == env.controller.state().salt  # type: ignore[index]
    assert full.json["decision_id"] == "dec-pass"  # type: ignore[index]
    assert full.headers["ETag"] != changed.headers["ETag"]  # a cache never serves one for the other


def test_api_post_needs_the_token(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    body = {"action": "start", "decision_id": "dec-pass", "actor": "ci"}
    assert client.post("/api/canary", json=body).status_code == 401
    assert client.post("/api/canary", json=body, headers={"Authorization": "Bearer nope"}).status_code == 401
    auth = {"Authorization": f"Bearer {helpers.token}"}
    started = client.post("/api/canary", json=body, headers=auth)
    assert started.status_code == 200 and started.json["state"]["status"] == "canary"  # type: ignore[index]
    refused = client.post("/api/canary", json={"action": "widen"}, headers=auth)
    assert refused.status_code == 409 and "not enough traffic" in refused.json["reason"]  # type: ignore[index]
    check = client.post("/api/canary", json={"action": "check"}, headers=auth)
    assert check.status_code == 200 and check.json["breached"] is False  # type: ignore[index]
    rolled = client.post(
        "/api/canary", json={"action": "rollback", "actor": "ci", "reason": "x"}, headers=auth
    )
    assert rolled.json["outcome"] == "applied" and env.controller.state().status == "rolled_back"  # type: ignore[index]
    assert env.controller.audit()[0].actor == "api:ci"
    assert client.post("/api/canary", json={"action": "explode"}, headers=auth).status_code == 400


def test_api_writes_off_without_token(env: Any) -> None:
    config = env.app.extensions["replaygate"]
    config.api_token = None
    app = replaygate.web.create_app(config)
    import os

    if os.environ.get("REPLAYGATE_API_TOKEN"):
        return
    assert app.test_client().post("/api/canary", json={"action": "rollback"}).status_code == 403


def test_routing_client_follows_the_page(served: Any) -> None:
    from replaygate.instrumentation import RoutingClient

    blind = RoutingClient(f"{served.url}/api/canary", refresh_s=0, token="", background=False)
    client = RoutingClient(f"{served.url}/api/canary", refresh_s=0, token=READ_TOKEN, background=False)
    assert client.choose("u1").name == "baseline"
    served.env.controller.start("dec-pass", actor="ana", plan=(1.0,))
    assert client.choose("u1").name == "candidate" and client.choose("u1").config_id == "candidate-fixed"
    assert blind.choose("u1").name == "baseline" and blind.stats()["failures"] == 1  # no salt: baseline
    served.env.controller.rollback(actor="ana", reason="x")
    assert client.choose("u1").name == "baseline"
    assert client.stats()["failures"] == 0


def test_reports_list(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "vic")
    page = client.get("/reports").get_data(as_text=True)
    assert "dec-pass" in page and "dec-block" in page
    detail = client.get("/reports/dec-pass").get_data(as_text=True)
    assert "h-cand" in detail and "gate passed &lt;b&gt;" in detail
    assert client.get("/reports/unknown").status_code == 404


def test_decision_page_marks_fingerprint_rows_that_differ(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    helpers.login(client, "vic")
    detail = client.get("/reports/dec-pass").get_data(as_text=True)
    rows = re.findall(r'<tr class="(differs)?"><th>([a-z_]+)', detail)
    assert ("differs", "agent_config_hash") in rows and ("differs", "declared_versions") in rows
    # only those two differ in the fixture; the equal rows are listed unmarked
    assert {key for cls, key in rows if cls} == {"agent_config_hash", "declared_versions"}
    assert ("", "target") in rows and ("", "suite_hash") in rows
    assert detail.count("h-base") == 1 and detail.count("h-cand") == 1  # one table, side by side


def test_numbers_read_without_exponent_or_float_dust() -> None:
    from replaygate.web._svg import significant

    assert significant(0.00018) == "0.000180"
    assert significant(-5.139e-06, signed=True) == "-0.00000514"
    assert significant(-1e-19, signed=True) == "+0"
    assert significant(None) == "—"
    assert significant(12.345) == "12.3"


def test_page_views_share_one_look_per_state_and_see_another_workers_action_at_once(
    env: Any, helpers: Any
) -> None:
    env.controller.start("dec-pass", actor="ana")
    client = env.app.test_client()
    helpers.login(client, "rita")
    for _ in range(5):
        assert "canary 1%" in client.get("/").get_data(as_text=True)
    with env.app.app_context():
        views = page_state().views
    assert views.computed == 1  # five viewers, one computation of the measures
    other = replaygate.canary.CanaryController(replaygate.canary.CanaryStore(env.path))  # another worker
    try:
        assert other.rollback(actor="ops", reason="refunds").outcome == "applied"
    finally:
        other.close()
    page = client.get("/").get_data(as_text=True)
    assert "rolled back" in page and views.computed == 2  # the state row is read on every view
