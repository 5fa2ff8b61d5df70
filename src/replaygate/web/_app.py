"""The Flask app factory: blueprints, CSRF, session cookie flags and security headers."""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Flask, Response
from flask_wtf.csrf import CSRFError
from replaygate.instrumentation import LlmCall, ReplaygateError, call_cost

from replaygate.canary import WORDS, RequestSample, compute_live_measures
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
from replaygate.web._config import WebConfig, load_users
from replaygate.web._context import CSP, SESSION_HOURS, STATE_KEY, PageState, csrf, current_user
from replaygate.web._scheduler import start_scheduled_checks
from replaygate.web._svg import fmt_measure, significant

__all__ = ["create_app"]


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


def _warm_up() -> None:
    """Load what a first look at the canary loads on demand (scipy.stats, the price table: seconds cold).

    Run at start-up (before gunicorn forks its workers with ``--preload``), so the first page view of
    each worker does not spend seconds importing while routing clients wait behind it.
    """
    base = [RequestSample(i, i == 0, False, i == 1, False, 0.1 + 0.01 * i, None) for i in range(8)]
    head = [RequestSample(i, False, False, i == 2, False, 0.12 + 0.01 * i, None) for i in range(8)]
    compute_live_measures(base, head)
    call_cost(LlmCall("gpt-4o-mini", "openai", 1, 1, 0.0))  # loads genai-prices' table


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
    app.extensions[STATE_KEY] = PageState()
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
    if not config.testing:
        _warm_up()
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
