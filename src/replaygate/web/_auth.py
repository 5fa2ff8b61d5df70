"""Login and logout (users and werkzeug password hashes from the users file or env)."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from werkzeug.security import check_password_hash
from werkzeug.wrappers import Response

from replaygate.web._app import web_config

__all__ = ["bp"]

bp = Blueprint("auth", __name__)
# compared against when the user is unknown, so a wrong name costs as long as a wrong password
_DUMMY_HASH = "scrypt:32768:8:1$0000000000000000$" + "0" * 128


def _safe_next(target: str | None) -> str:
    if not target:
        return url_for("rollout.index")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return url_for("rollout.index")
    return target


@bp.route("/login", methods=["GET", "POST"])
def login() -> str | Response | tuple[str, int]:
    """Show the login form; on POST check the password and start a fresh session."""
    if request.method == "POST":
        name = request.form.get("username", "")
        password = request.form.get("password", "")
        user = web_config().users.get(name)
        ok = check_password_hash(user.password_hash if user else _DUMMY_HASH, password)
        if user is not None and ok:
            session.clear()
            session["user"] = user.name
            session.permanent = True
            return redirect(_safe_next(request.args.get("next")))
        flash("Wrong name or password.", "error")
        return render_template("login.html", no_users=not web_config().users), 401
    return render_template("login.html", no_users=not web_config().users)


@bp.route("/logout", methods=["POST"])
def logout() -> Response:
    """End the session."""
    session.clear()
    return redirect(url_for("auth.login"))
