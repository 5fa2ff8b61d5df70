"""Configuration of the release page: users and roles, secrets, cookie flags, store and policy."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
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
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise CanaryError(f"cannot read the users file {file}: {exc}") from exc
        return _users_from_mapping(data, str(file))
    inline = os.environ.get("REPLAYGATE_USERS")
    if inline:
        try:
            return _users_from_mapping(yaml.safe_load(inline), "REPLAYGATE_USERS")
        except yaml.YAMLError as exc:
            raise CanaryError(f"REPLAYGATE_USERS is not valid YAML: {exc}") from exc
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
        auto_check: unused by the page (no GET changes state: run ``replaygate canary check`` on a
            schedule, or ``POST /api/canary`` with ``check``).
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
    extra: dict[str, Any] = field(default_factory=dict)
