"""The page after PostgreSQL dropped its connections (``pg_ctl restart``): the next requests succeed."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

TERMINATE = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE pid <> pg_backend_pid() AND datname = current_database()"
)


@pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)
def test_the_first_requests_after_the_server_dropped_its_connections_succeed(env: Any, helpers: Any) -> None:
    client = env.app.test_client()
    assert helpers.login(client, "rita").status_code == 302
    for path in ("/inbox", f"/traces/{env.hostile_trace}", "/"):
        assert client.get(path).status_code == 200, path  # every store the page uses holds a connection now
    with psycopg.connect(
        env.path.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
    ) as admin:
        terminated = admin.execute(TERMINATE).fetchall()
    assert terminated, "the page held no connection to terminate"
    for path in ("/inbox", f"/traces/{env.hostile_trace}", "/inbox", "/"):
        response = client.get(path)
        assert response.status_code == 200, (path, response.get_data(as_text=True)[-500:])
