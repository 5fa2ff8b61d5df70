"""The JSON API: ``GET /api/canary`` for routing clients (ETag), ``POST /api/canary`` for scripts (token).

``GET`` serves the full routing state (with the rollout's salt) only to a bearer token
(``REPLAYGATE_READ_TOKEN``, which routing clients send as ``REPLAYGATE_CANARY_TOKEN``, or the write
token); anyone else gets the state without the salt, the rollout id and the decision id, which a routing
client treats as unreadable (it serves the baseline).

``POST`` takes ``{"action": "start"|"widen"|"promote"|"rollback"|"check", "actor": ..., "reason": ...,
"decision_id": ... (start)}`` with ``Authorization: Bearer $REPLAYGATE_API_TOKEN``; writes are off when no
token is configured.
"""

from __future__ import annotations

import hmac
from typing import Any

from flask import Blueprint, jsonify, request
from werkzeug.wrappers import Response

from replaygate.canary import CanaryError, Transition, parse_plan, state_json
from replaygate.web._context import controller, page_state, web_config
from replaygate.web._state_cache import StateCache

__all__ = ["bp", "state_json"]

bp = Blueprint("api", __name__, url_prefix="/api")


def _transition_json(t: Transition) -> dict[str, Any]:
    return {"action": t.action, "outcome": t.outcome, "reason": t.reason, "state": state_json(t.after)}


def _error(status: int, message: str) -> Response:
    response = jsonify({"error": message})
    response.status_code = status
    return response


_PRIVATE = ("salt", "rollout_id", "decision_id")


def _state_cache() -> StateCache:
    state = page_state()
    if state.state_cache is None:
        state.state_cache = StateCache(lambda: controller().state(), stamp=lambda: controller().store.writes)
    return state.state_cache


def _bearer_ok(*tokens: str | None) -> bool:
    header = request.headers.get("Authorization", "")
    given = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
    return bool(given) and any(t and hmac.compare_digest(given.encode(), t.encode()) for t in tokens)


@bp.route("/canary", methods=["GET"])
def canary_state() -> Response:
    """The current canary state for routing clients (cached, see ``_state_cache``); 304 on a match."""
    state = _state_cache().get()
    config = web_config()
    full = _bearer_ok(config.read_token, config.api_token)
    etag = f"{'full' if full else 'public'}-{state.rollout_id or 'none'}-{state.version}"
    if etag in request.if_none_match:  # the client holds this state: no body to build
        response = Response(status=304)
    else:
        payload = state_json(state)
        if not full:
            payload = {k: v for k, v in payload.items() if k not in _PRIVATE}
        response = jsonify(payload)
    response.set_etag(etag)
    response.headers["Vary"] = "Authorization"
    response.headers["Cache-Control"] = "no-cache"
    return response


@bp.route("/canary", methods=["POST"])
def canary_action() -> Response:
    """Apply one action with a bearer token (audited with the given actor)."""
    token = web_config().api_token
    if not token:
        return _error(403, "API writes are off: set REPLAYGATE_API_TOKEN on the server")
    if not _bearer_ok(token):
        return _error(401, "missing or wrong bearer token")
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return _error(400, 'send a JSON object like {"action": "rollback", "actor": "ops", "reason": "..."}')
    action = body.get("action")
    actor = f"api:{str(body.get('actor') or 'token')[:100]}"
    reason = str(body.get("reason") or "")
    ctl = controller()
    try:
        if action == "rollback":
            t = ctl.rollback(actor=actor, reason=reason or "rolled back through the API")
        elif action == "widen":
            t = ctl.widen(actor=actor, reason=reason)
        elif action == "promote":
            t = ctl.promote(actor=actor, reason=reason)
        elif action == "start":
            plan = parse_plan(str(body["plan"])) if body.get("plan") else None
            t = ctl.start(str(body.get("decision_id") or ""), actor=actor, reason=reason, plan=plan)
        elif action == "check":
            result = ctl.check(actor=actor)
            payload: dict[str, Any] = {
                "action": "check",
                "breached": result.breached,
                "rolled_back": result.rollback is not None and result.rollback.changed,
                "state": state_json(ctl.state()),
            }
            if result.status.evidence is not None:
                payload["can_widen"] = result.status.evidence.can_widen
                payload["reason"] = result.status.evidence.reason
                payload["breaches"] = list(result.status.evidence.breaches)
            return jsonify(payload)
        else:
            return _error(400, f"unknown action {action!r}: use start, widen, promote, rollback or check")
    except (CanaryError, ValueError) as exc:
        return _error(409, str(exc))
    response = jsonify(_transition_json(t))
    response.status_code = 409 if t.outcome == "refused" else 200
    return response
