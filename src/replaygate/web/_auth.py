"""Login, logout and the one-time password change, with throttling that holds across workers.

Wrong passwords are counted in the store per user name and per client address over a sliding window
(``WebConfig.login_window_s``, 15 minutes): ``login_limit`` (20) wrong passwords for one name lock that
name, and ten times as many from one address lock that address, until the window has passed; the lock-out
answers 429 with a clear message and is audited once (``login-lockout``). While locked, even the right
password is refused (the check happens before the password is looked at). A login starts a server-side
session; logout revokes it, so a copy of the cookie taken before is refused. A user marked ``one_time``
in the users file logs in once with the issued password, must choose a new one before anything else,
and the issued password never works again.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from werkzeug.security import check_password_hash, generate_password_hash
from werkzeug.wrappers import Response

from replaygate.web._config import User
from replaygate.web._context import current_user, web_config, web_store

__all__ = ["bp"]

bp = Blueprint("auth", __name__)
# compared against when the user is unknown, so a wrong name costs as long as a wrong password
_DUMMY_HASH = "scrypt:32768:8:1$0000000000000000$" + "0" * 128
_ADDR_FACTOR = 10
_MIN_PASSWORD = 12


def _safe_next(target: str | None) -> str:
    if not target:
        return url_for("rollout.index")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return url_for("rollout.index")
    if "\\" in target:
        return url_for("rollout.index")
    return target


def _addr() -> str:
    return request.remote_addr or "unknown"


def _locked(name: str) -> str | None:
    """Why logins for this name or from this address are refused now (None: not locked)."""
    config, store = web_config(), web_store()
    window = config.login_window_s
    if store.failures("user", name, window) >= config.login_limit:
        return (
            f"Too many wrong passwords for {name!r}: this login is locked for up to "
            f"{window // 60} minutes. Ask another releaser, or wait."
        )
    if store.failures("addr", _addr(), window) >= config.login_limit * _ADDR_FACTOR:
        return (
            f"Too many wrong passwords from this address: logins are locked for up to {window // 60} minutes."
        )
    return None


def _password_hash(user: User) -> tuple[str | None, str]:
    """(the hash that opens this login now or None when none does, why not)."""
    if not user.one_time:
        return user.password_hash, ""
    row = web_store().password_row(user.name, user.password_hash)
    if row is None:
        return user.password_hash, ""
    if row.password_hash:
        return str(row.password_hash), ""
    return None, "This one-time password has been used; ask for a new one."


def _refuse(name: str, message: str, status: int) -> tuple[str, int]:
    flash(message, "error")
    return render_template("login.html", no_users=not web_config().users, name=name), status


@bp.route("/login", methods=["GET", "POST"])
def login() -> str | Response | tuple[str, int]:
    """Show the login form; on POST check the lock-out, then the password, and start a fresh session."""
    if request.method != "POST":
        return render_template("login.html", no_users=not web_config().users, name="")
    config, store = web_config(), web_store()
    name = request.form.get("username", "")[:256]
    password = request.form.get("password", "")
    locked = _locked(name)
    if locked:
        return _refuse(name, locked, 429)
    user = config.users.get(name)
    current, why = _password_hash(user) if user is not None else (None, "")
    ok = check_password_hash(current or _DUMMY_HASH, password) and current is not None
    if user is None or not ok:
        by_user, by_addr = store.add_failure(name, _addr(), config.login_window_s)
        if by_user == config.login_limit or by_addr == config.login_limit * _ADDR_FACTOR:
            store.audit(
                actor=f"login from {_addr()}",
                action="login-lockout",
                outcome="applied",
                subject=f"user:{name}" if by_user >= config.login_limit else f"addr:{_addr()}",
                reason=f"{by_user} wrong passwords for the name, {by_addr} from the address "
                f"within {config.login_window_s // 60} minutes",
            )
        if by_user >= config.login_limit or by_addr >= config.login_limit * _ADDR_FACTOR:
            return _refuse(name, _locked(name) or "Locked.", 429)
        return _refuse(name, why if user is not None and why else "Wrong name or password.", 401)
    if (
        user.one_time
        and current == user.password_hash
        and not store.use_one_time(user.name, user.password_hash)
    ):
        return _refuse(name, "This one-time password has been used; ask for a new one.", 401)
    store.clear_failures(name)
    session.clear()
    session["user"] = user.name
    session["sid"] = store.new_session(user.name)
    session.permanent = True
    if user.one_time and current == user.password_hash:
        session["must_change"] = True
        store.audit(actor=user.name, action="login-one-time", outcome="applied", subject=f"user:{user.name}")
        return redirect(url_for("auth.password"))
    return redirect(_safe_next(request.args.get("next")))


@bp.route("/password", methods=["GET", "POST"])
def password() -> str | Response | tuple[str, int]:
    """Choose a new password after logging in with a one-time password."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login"))
    if not user.one_time:
        flash("Passwords of this login are set in the users file (replaygate hash-password).", "info")
        return redirect(url_for("rollout.index"))
    if request.method != "POST":
        return render_template("password.html")
    new, again = request.form.get("new_password", ""), request.form.get("again", "")
    if len(new) < _MIN_PASSWORD or new != again:
        flash(f"Choose a password of at least {_MIN_PASSWORD} characters and type it twice.", "error")
        return render_template("password.html"), 400
    store = web_store()
    store.set_password(user.name, user.password_hash, generate_password_hash(new))
    store.revoke_user_sessions(user.name)
    store.audit(actor=user.name, action="password-set", outcome="applied", subject=f"user:{user.name}")
    session.clear()
    session["user"] = user.name
    session["sid"] = store.new_session(user.name)
    session.permanent = True
    flash("New password set; the one-time password no longer works.", "ok")
    return redirect(url_for("rollout.index"))


@bp.route("/logout", methods=["POST"])
def logout() -> Response:
    """End the session on the server (the cookie is worthless afterwards) and in the browser."""
    sid = session.get("sid")
    if isinstance(sid, str):
        web_store().revoke_session(sid)
    session.clear()
    return redirect(url_for("auth.login"))
