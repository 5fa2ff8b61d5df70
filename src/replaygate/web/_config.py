"""Configuration of the release page: users and roles, secrets, cookie flags, store and policy.

:meth:`WebConfig.from_env` is what ``create_app()`` (no argument, as gunicorn calls it) reads:

- ``REPLAYGATE_SECRET_KEY`` (required: every worker must sign cookies with the same key),
- ``REPLAYGATE_STORE``, ``REPLAYGATE_POLICY`` (the gate policy file: the canary's tolerances),
- ``REPLAYGATE_USERS`` (inline users YAML) or ``REPLAYGATE_USERS_FILE``,
- ``REPLAYGATE_SECURE_COOKIES`` (default ``true``; ``false`` only for plain http on localhost),
- ``REPLAYGATE_API_TOKEN`` (``POST /api/canary``), ``REPLAYGATE_COLLECT_TOKEN`` (serves the OTLP receiver's
  ``/v1/traces`` and ``/v1/feedback`` too),
- ``REPLAYGATE_CHECK_INTERVAL_S`` (default 30; 0 turns the scheduled automatic check off).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from replaygate.replay import MAX_YAML_BYTES, load_yaml_bounded, read_text_bounded
from werkzeug.security import generate_password_hash

from replaygate.canary import CanaryController, CanaryError

__all__ = ["ROLES", "User", "WebConfig", "hash_password", "load_users"]

Role = Literal["viewer", "reviewer", "responder", "releaser"]
ROLES: tuple[Role, ...] = ("viewer", "reviewer", "responder", "releaser")


@dataclass(frozen=True)
class User:
    """A person who may log in: a werkzeug password hash and a role.

    ``viewer`` reads; ``reviewer`` may also mark newly failing scenarios read; ``responder`` may also
    promote failures into the golden set; ``releaser`` does all of that and signs, starts, widens, promotes
    and rolls back. ``one_time``: the password works for one login, which must set a new one.
    """

    name: str
    password_hash: str
    role: Role
    one_time: bool = False

    @property
    def can_act(self) -> bool:
        """Whether this user may sign, start, widen, promote or roll back."""
        return self.role == "releaser"

    @property
    def can_review(self) -> bool:
        """Whether this user may mark a newly failing scenario read."""
        return self.role in ("reviewer", "releaser")

    @property
    def can_promote(self) -> bool:
        """Whether this user may promote a failure into the golden set (releasers and responders)."""
        return self.role in ("responder", "releaser")


def hash_password(password: str) -> str:
    """Return a werkzeug password hash (scrypt) for a users file."""
    return generate_password_hash(password)


def _users_from_mapping(data: Any, where: str) -> dict[str, User]:
    if not isinstance(data, Mapping):
        raise CanaryError(f"{where}: expected `users:` mapping names to {{password_hash, role}}")
    raw = data.get("users", data)
    if not isinstance(raw, Mapping):
        raise CanaryError(f"{where}: `users` must map names to {{password_hash, role}}")
    users: dict[str, User] = {}
    for name, entry in raw.items():
        if not isinstance(entry, Mapping) or "password_hash" not in entry:
            raise CanaryError(
                f"{where}: user {name!r} needs a password_hash (make one with `replaygate hash-password`)"
            )
        role = entry.get("role", "viewer")
        if role not in ROLES:
            raise CanaryError(f"{where}: user {name!r} has role {role!r}; use one of {', '.join(ROLES)}")
        users[str(name)] = User(str(name), str(entry["password_hash"]), role, bool(entry.get("one_time")))
    return users


def load_users(path: str | os.PathLike[str] | None = None) -> dict[str, User]:
    """Load users from a YAML file, else from env ``REPLAYGATE_USERS`` (the same YAML, inline).

    The file looks like::

        users:
          ana: {password_hash: "scrypt:32768:8:1$...", role: releaser}
          bo:  {password_hash: "scrypt:...", role: viewer}
          cy:  {password_hash: "scrypt:...", role: reviewer, one_time: true}
    """
    if path is not None:
        file = Path(path)
        text = read_text_bounded(file, what="users file", error=CanaryError, max_bytes=MAX_YAML_BYTES)
        data, _ = load_yaml_bounded(text, str(file), CanaryError)  # no aliases, bounded depth
        return _users_from_mapping(data, str(file))
    inline = os.environ.get("REPLAYGATE_USERS")
    if inline:
        data, _ = load_yaml_bounded(inline, "REPLAYGATE_USERS", CanaryError)
        return _users_from_mapping(data, "REPLAYGATE_USERS")
    return {}


@dataclass
class WebConfig:
    """Everything ``create_app`` needs; unset fields come from the environment.

    Attributes:
        store: the store path or URL (``REPLAYGATE_STORE``, default ``.replaygate/replaygate.db``).
        policy: the gate policy file whose guardrails are the canary's tolerances.
        users: name → :class:`User` (see :func:`load_users`).
        secret_key: signs the session cookie (``REPLAYGATE_SECRET_KEY``; random per process otherwise,
            which logs everyone out on restart).
        api_token: bearer token for ``POST /api/canary`` (``REPLAYGATE_API_TOKEN``; unset: API writes off).
        secure_cookies: set the cookie's Secure flag (turn off only for local http).
        controller: an already built controller (tests); otherwise opened from ``store`` and ``policy``.
        auto_check: run the automatic check (auto-rollback on a breach) every ``check_interval_s``
            seconds in a background thread of the app; never on a page view (no GET changes state).
        check_interval_s: seconds between scheduled checks.
        collect: an OTLP receiver (``replaygate.collect.Receiver``) to serve at ``/v1/traces``.
        reports_dir: where ``replaygate gate`` writes reports (every ``*/report.json`` below it is
            listed; ``REPLAYGATE_REPORTS``, default ``.replaygate/reports``).
        golden: the golden set promotions from the inbox write to (``REPLAYGATE_GOLDEN``, default
            ``golden``).
        read_token: bearer token routing clients send to ``GET /api/canary`` (``REPLAYGATE_READ_TOKEN``);
            without it the endpoint serves the state without the routing salt.
        login_limit: wrong passwords per user (and ten times as many per client address) within
            ``login_window_s`` that lock the login for the rest of the window.
    """

    store: str | None = None
    policy: str | None = None
    users: dict[str, User] = field(default_factory=dict)
    secret_key: str | None = None
    api_token: str | None = None
    secure_cookies: bool = True
    controller: CanaryController | None = None
    auto_check: bool = True
    testing: bool = False
    reports_dir: str | None = None
    golden: str | None = None
    read_token: str | None = None
    login_limit: int = 20
    login_window_s: int = 900
    check_interval_s: float = 30.0
    collect: Any = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WebConfig:
        """The configuration of a deployed page (gunicorn), read from the environment.

        Raises:
            CanaryError: ``REPLAYGATE_SECRET_KEY`` is unset, or a variable has a bad value (the message
                names it).
        """
        env = os.environ if env is None else env
        secret = env.get("REPLAYGATE_SECRET_KEY", "")
        if len(secret) < 16:
            raise CanaryError(
                "REPLAYGATE_SECRET_KEY must be set (16+ characters, the same for every worker) to serve the "
                "page from the environment, e.g. export REPLAYGATE_SECRET_KEY=$(openssl rand -hex 32); "
                "`replaygate serve` runs a local demo without it"
            )
        policy = env.get("REPLAYGATE_POLICY") or None
        if policy is not None and not Path(policy).is_file():
            raise CanaryError(f"REPLAYGATE_POLICY={policy}: no such file (the gate policy YAML)")
        try:
            interval = float(env.get("REPLAYGATE_CHECK_INTERVAL_S", "30"))
        except ValueError:
            raise CanaryError("REPLAYGATE_CHECK_INTERVAL_S must be a number of seconds") from None
        collect = None
        if env.get("REPLAYGATE_COLLECT_TOKEN"):
            from replaygate.collect import receiver_from_env

            collect = receiver_from_env(env.get("REPLAYGATE_STORE") or None, env["REPLAYGATE_COLLECT_TOKEN"])
        return cls(
            store=env.get("REPLAYGATE_STORE") or None,
            policy=policy,
            users=load_users(env.get("REPLAYGATE_USERS_FILE") or None),
            secret_key=secret,
            api_token=env.get("REPLAYGATE_API_TOKEN") or None,
            secure_cookies=_flag(env, "REPLAYGATE_SECURE_COOKIES", True),
            auto_check=interval > 0,
            check_interval_s=max(interval, 1.0),
            collect=collect,
        )


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise CanaryError(f"{name}={raw!r}: use true or false")
