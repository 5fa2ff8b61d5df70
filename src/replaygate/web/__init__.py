"""replaygate.web: the release page (Flask) for release staff.

::

    replaygate serve --users users.yaml --policy examples/gate-policy.yaml --port 8080

Pages: the current rollout (state, shares, the signed decision and both fingerprints, the buttons),
live measures side by side with intervals and a failure-rate series, the audit log, the failure inbox
(read-only, linked to each trace), the gate reports. Roles: ``viewer`` reads, ``releaser`` acts. Every
POST carries a CSRF token; the session cookie is HttpOnly, SameSite=Strict and Secure (configurable for
local http); a strict Content-Security-Policy forbids inline script; all trace content is escaped.
``GET /api/canary`` serves routing clients (ETag); ``POST /api/canary`` takes a bearer token
(``REPLAYGATE_API_TOKEN``).

Environment: ``REPLAYGATE_STORE``, ``REPLAYGATE_USERS`` (inline users YAML), ``REPLAYGATE_SECRET_KEY``,
``REPLAYGATE_API_TOKEN``.
"""

from replaygate.web._app import create_app
from replaygate.web._config import ROLES, User, WebConfig, hash_password, load_users
from replaygate.web._context import CSP

__all__ = ["CSP", "ROLES", "User", "WebConfig", "create_app", "hash_password", "load_users"]
