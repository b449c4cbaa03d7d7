"""Test harness: a real embedded PostgreSQL (pgserver, pgvector) for the session, real
`hindsight serve` processes over HTTP, and the official MCP client."""
from __future__ import annotations

import contextlib
import os
import uuid

import pytest

from hindsight.testing import Server, free_port  # noqa: F401

ADMIN_KEY = "test-admin-key-0123456789"
AUTH_EXT = "hindsight.extensions.builtin.tenant:ApiKeyTenantExtension"


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory):
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    import pgserver

    srv = pgserver.get_server(tmp_path_factory.mktemp("pg") / "pgdata", cleanup_mode="stop")
    yield srv.get_uri()
    srv._cleanup()


@pytest.fixture(scope="session")
def server(pg_url):
    s = Server({"HINDSIGHT_API_DATABASE_URL": pg_url}).start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def auth_server(pg_url):
    s = Server({
        "HINDSIGHT_API_DATABASE_URL": pg_url,
        "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
        "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
    }).start()
    yield s
    s.stop()


@pytest.fixture
def api(server):
    with server.http() as c:
        yield c


@pytest.fixture
def bank():
    return "t_" + uuid.uuid4().hex[:12]


@contextlib.asynccontextmanager
async def mcp_session(url: str, headers: dict | None = None):
    """The official SDK client over Streamable HTTP."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers or {}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client
