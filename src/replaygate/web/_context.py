"""What every view of the release page shares: the running app's config, stores and user, and the guards.

The blueprints (``_auth``, ``_rollout``, ``_reports``, ...) import these; ``_app.create_app`` wires the
blueprints. Nothing here imports a blueprint or the app factory, so the page has no import cycle.

- ``web_config()``, ``controller()``, ``web_store()``: the running app's :class:`WebConfig`, its canary
  controller and the page's own tables (both opened on first use).
- ``current_user()``: the logged-in user of a live server-side session; ``must_change_password()``.
- ``login_required`` / ``releaser_required`` / ``reviewer_required`` / ``promoter_required``: view guards
  (a GET without a session is sent to the login page; other methods get 401, the wrong role 403).
- ``page_state()``: what the running app opens once and keeps (:class:`PageState`).
- ``CSP`` (the page's Content-Security-Policy), ``SESSION_HOURS``, ``csrf`` (the CSRF extension).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, TypeVar, cast

from flask import abort, current_app, g, redirect, request, session, url_for
from flask_wtf.csrf import CSRFProtect

from replaygate.canary import CanaryController
from replaygate.web._config import User, WebConfig
from replaygate.web._gate_reports import ReportIndex
from replaygate.web._state_cache import StateCache
from replaygate.web._view_cache import ViewCache
from replaygate.web._webstore import WebStore

__all__ = [
    "CSP",
    "SESSION_HOURS",
    "STATE_KEY",
    "PageState",
    "controller",
    "csrf",
    "current_user",
    "login_required",
    "must_change_password",
    "page_state",
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


#: Where ``create_app`` keeps the app's :class:`PageState` (``app.extensions[STATE_KEY]``).
STATE_KEY = "replaygate.state"


@dataclass
class PageState:
    """What the running app opens once and keeps: the page's tables, the report index, promoted traces."""

    web_store: WebStore | None = None
    report_index: ReportIndex | None = None
    #: the golden set's files (path, mtime) when ``promoted`` was read, and trace id -> scenario id
    promoted: tuple[tuple[tuple[str, int], ...], dict[str, str]] | None = None
    #: ``GET /api/canary``'s cached rollout state (one read per second per worker)
    state_cache: StateCache | None = None
    #: the page's canary views (status, charts), recomputed at most every few seconds per worker
    views: ViewCache = field(default_factory=ViewCache)


def page_state() -> PageState:
    """The running app's :class:`PageState`."""
    return cast(PageState, current_app.extensions[STATE_KEY])


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
    config, state = web_config(), page_state()
    if state.web_store is None:
        url = config.store if config.controller is None else config.controller.store.url
        state.web_store = WebStore(url)
    return state.web_store


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
