"""The Flask app factory: blueprints, CSRF, session cookie flags and security headers."""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from functools import wraps
from typing import Any, TypeVar, cast

from flask import Flask, Response, abort, current_app, g, redirect, request, session, url_for
from flask_wtf.csrf import CSRFError, CSRFProtect
from replaygate.instrumentation import ReplaygateError

from replaygate.canary import WORDS, CanaryController
from replaygate.web._config import User, WebConfig
from replaygate.web._svg import fmt_measure, significant
from replaygate.web._webstore import WebStore

__all__ = [
    "CSP",
    "SESSION_HOURS",
    "controller",
    "create_app",
    "current_user",
    "login_required",
    "must_change_password",
    "promoter_required",
    "releaser_required",
    "reviewer_required",
    "web_config",
    "web_store",
]

SESSION_HOURS = 12

#: No inline script or style, nothing from elsewhere; forms post only here.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)
F = TypeVar("F", bound=Callable[..., Any])
csrf = CSRFProtect()


def web_config() -> WebConfig:
    """The running app's :class:`WebConfig`."""
    return cast(WebConfig, current_app.extensions["replaygate"])


def controller() -> CanaryController:
    """The running app's canary controller (opened on first use)."""
    config = web_config()
    if config.controller is None:
        config.controller = CanaryController.open(config.store, policy=config.policy)
    return config.controller


def web_store() -> WebStore:
    """The page's own tables (sessions, login failures, passwords, audit), opened on first use."""
    config = web_config()
    store = config.extra.get("web_store")
    if store is None:
        url = config.store if config.controller is None else config.controller.store.url
        store = config.extra["web_store"] = WebStore(url)
    return cast(WebStore, store)


def current_user() -> User | None:
    """The logged-in user: a live server-side session (logout revokes it) of a configured user."""
    if "user" not in g:
        name, sid = session.get("user"), session.get("sid")
        user = web_config().users.get(name) if isinstance(name, str) else None
        if user is not None and (
            not isinstance(sid, str) or web_store().session_user(sid, SESSION_HOURS * 3600) != user.name
        ):
            user = None
        g.user = user
    return cast(User | None, g.user)


def must_change_password() -> bool:
    """Whether this session logged in with a one-time password and has not set its own yet."""
    return bool(session.get("must_change"))


def login_required(view: F) -> F:
    """Views that need a logged-in user (who has replaced a one-time password)."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if current_user() is None:
            if request.method != "GET":
                abort(401)
            return redirect(url_for("auth.login", next=request.full_path))
        if must_change_password():
            if request.method != "GET":
                abort(403)
            return redirect(url_for("auth.password"))
        return view(*args, **kwargs)

    return cast(F, wrapped)


def _role_required(allowed: Callable[[User], bool]) -> Callable[[F], F]:
    def decorate(view: F) -> F:
        @wraps(view)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            user = current_user()
            if user is None:
                abort(401)
            if must_change_password() or not allowed(user):
                abort(403)
            return view(*args, **kwargs)

        return cast(F, wrapped)

    return decorate


#: Actions only a releaser may take: sign, start, widen, promote, roll back (403 for others, 401 nobody).
releaser_required = _role_required(lambda u: u.can_act)
#: Marking a newly failing scenario read: reviewers and releasers.
reviewer_required = _role_required(lambda u: u.can_review)
#: Promoting a failure into the golden set: responders and releasers.
promoter_required = _role_required(lambda u: u.can_promote)


def _security_headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = response.headers.get("Content-Security-Policy", CSP)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "same-origin"
    if response.mimetype == "text/html":
        response.headers["Cache-Control"] = "no-store"
    return response


def _fmt_ns(value: int | None) -> str:
    if value is None:
        return "—"
    return datetime.fromtimestamp(value / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _config_from_env() -> WebConfig:
    try:
        return WebConfig.from_env()
    except ReplaygateError as exc:  # a start-up error for a person, not a traceback
        print(f"replaygate web: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None


def _as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


def create_app(config: WebConfig | Mapping[str, Any] | None = None) -> Flask:
    """Build the release page.

    Args:
        config: a :class:`WebConfig` (or a mapping of its fields); unset secrets come from
            ``REPLAYGATE_SECRET_KEY``, ``REPLAYGATE_API_TOKEN``, users from ``REPLAYGATE_USERS``.
            None (as ``gunicorn 'replaygate.web:create_app()'`` calls it): everything from the
            environment (:meth:`WebConfig.from_env`); a missing secret key stops the start with a message.
    """
    from replaygate.web import (
        _api,
        _audit,
        _auth,
        _inbox,
        _labels_view,
        _measures_view,
        _reports,
        _review,
        _rollout,
    )
    from replaygate.web._config import load_users
    from replaygate.web._scheduler import start_scheduled_checks

    if config is None:
        config = _config_from_env()
    elif isinstance(config, Mapping):
        config = WebConfig(**config)
    if not config.users:
        config.users = load_users()
    config.api_token = config.api_token or os.environ.get("REPLAYGATE_API_TOKEN") or None
    config.read_token = config.read_token or os.environ.get("REPLAYGATE_READ_TOKEN") or None
    secret = config.secret_key or os.environ.get("REPLAYGATE_SECRET_KEY") or secrets.token_hex(32)

    app = Flask("replaygate.web", static_folder="static", template_folder="templates")
    app.config.update(
        SECRET_KEY=secret,
        TESTING=config.testing,
        SESSION_COOKIE_NAME="replaygate_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SECURE=config.secure_cookies,
        SESSION_COOKIE_SAMESITE="Strict",
        PERMANENT_SESSION_LIFETIME=timedelta(hours=SESSION_HOURS),
        WTF_CSRF_TIME_LIMIT=SESSION_HOURS * 3600,
        MAX_CONTENT_LENGTH=1 << 20,
    )
    app.extensions["replaygate"] = config
    csrf.init_app(app)
    for module in (_auth, _rollout, _measures_view, _audit, _inbox, _reports, _review, _api):
        app.register_blueprint(module.bp)
    app.register_blueprint(_labels_view.bp)  # the reading queue (replaygate.labels)
    csrf.exempt(_api.bp)  # token-authenticated JSON API: no cookies, so no CSRF
    if config.collect is not None:  # the OTLP receiver, bearer-token authenticated like the API
        from replaygate.collect import collect_blueprint

        collector = collect_blueprint(config.collect)
        app.register_blueprint(collector)
        csrf.exempt(collector)
        app.config["MAX_CONTENT_LENGTH"] = max(
            app.config["MAX_CONTENT_LENGTH"], config.collect.max_body_bytes
        )
    if config.auto_check and not config.testing:
        start_scheduled_checks(app, config.check_interval_s)
    app.after_request(_security_headers)
    app.jinja_env.filters["ns_time"] = _fmt_ns
    app.jinja_env.filters["significant"] = significant
    app.jinja_env.globals["fmt_measure"] = fmt_measure
    app.jinja_env.globals["as_json"] = _as_json
    app.jinja_env.globals["verdict_words"] = WORDS
    app.jinja_env.globals["current_user"] = current_user

    @app.errorhandler(CSRFError)
    def _csrf_error(exc: CSRFError) -> Response:
        text = f"Refused: {exc.description} Reload the page and try again."
        return Response(text, status=400, mimetype="text/plain")

    return app
