"""The Flask app factory: blueprints, CSRF, session cookie flags and security headers."""

from __future__ import annotations

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

from replaygate.canary import CanaryController
from replaygate.web._config import User, WebConfig
from replaygate.web._svg import significant

__all__ = [
    "CSP",
    "controller",
    "create_app",
    "current_user",
    "login_required",
    "releaser_required",
    "web_config",
]

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


def current_user() -> User | None:
    """The logged-in user, looked up again on every request (a removed user is logged out)."""
    if "user" not in g:
        name = session.get("user")
        g.user = web_config().users.get(name) if isinstance(name, str) else None
    return cast(User | None, g.user)


def login_required(view: F) -> F:
    """Views that need a logged-in viewer or releaser."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if current_user() is None:
            if request.method != "GET":
                abort(401)
            return redirect(url_for("auth.login", next=request.full_path))
        return view(*args, **kwargs)

    return cast(F, wrapped)


def releaser_required(view: F) -> F:
    """Actions only a releaser may take (refused with 403 for viewers, 401 for nobody)."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        user = current_user()
        if user is None:
            abort(401)
        if not user.can_act:
            abort(403)
        return view(*args, **kwargs)

    return cast(F, wrapped)


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


def create_app(config: WebConfig | Mapping[str, Any] | None = None) -> Flask:
    """Build the release page.

    Args:
        config: a :class:`WebConfig` (or a mapping of its fields); unset secrets come from
            ``REPLAYGATE_SECRET_KEY``, ``REPLAYGATE_API_TOKEN``, users from ``REPLAYGATE_USERS``.
            None (as ``gunicorn 'replaygate.web:create_app()'`` calls it): everything from the
            environment (:meth:`WebConfig.from_env`); a missing secret key stops the start with a message.
    """
    from replaygate.web import _api, _audit, _auth, _inbox, _measures_view, _reports, _rollout
    from replaygate.web._config import load_users
    from replaygate.web._scheduler import start_scheduled_checks

    if config is None:
        config = _config_from_env()
    elif isinstance(config, Mapping):
        config = WebConfig(**config)
    if not config.users:
        config.users = load_users()
    config.api_token = config.api_token or os.environ.get("REPLAYGATE_API_TOKEN") or None
    secret = config.secret_key or os.environ.get("REPLAYGATE_SECRET_KEY") or secrets.token_hex(32)

    app = Flask("replaygate.web", static_folder="static", template_folder="templates")
    app.config.update(
        SECRET_KEY=secret,
        TESTING=config.testing,
        SESSION_COOKIE_NAME="replaygate_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SECURE=config.secure_cookies,
        SESSION_COOKIE_SAMESITE="Strict",
        PERMANENT_SESSION_LIFETIME=timedelta(hours=12),
        WTF_CSRF_TIME_LIMIT=12 * 3600,
        MAX_CONTENT_LENGTH=1 << 20,
    )
    app.extensions["replaygate"] = config
    csrf.init_app(app)
    for module in (_auth, _rollout, _measures_view, _audit, _inbox, _reports, _api):
        app.register_blueprint(module.bp)
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
    app.jinja_env.globals["current_user"] = current_user

    @app.errorhandler(CSRFError)
    def _csrf_error(exc: CSRFError) -> Response:
        text = f"Refused: {exc.description} Reload the page and try again."
        return Response(text, status=400, mimetype="text/plain")

    return app
