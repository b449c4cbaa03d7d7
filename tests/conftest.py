"""Test harness: a real embedded PostgreSQL (the product's own, with pgvector) for the session;
the app in this process for contract tests (REST over httpx's ASGI transport, MCP tools through
the SDK's in-memory client); real `hindsight serve` processes over HTTP, with the official MCP
client and the other real clients, for routing, lifecycle and durability."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid

import pytest

from hindsight.testing import Server, free_port  # noqa: F401


def pytest_configure(config):
    """A session's temporary files in a folder of its own, unless --basetemp names one: a pytest
    session that starts makes /tmp/pytest-of-<user> private again (0700), which cut off the
    embedded PostgreSQL of every other session still running (its system user could no longer
    reach its data directory)."""
    if not config.option.basetemp:
        config.option.basetemp = config._hindsight_basetemp = tempfile.mkdtemp(prefix="hindsight-tests-")


# The layer of a test is the folder it lives in (CONTRIBUTING.md, "Tests"): `pytest -m "not e2e"`
# is the daily loop, `.ci/run` runs every layer.
LAYERS = ("unit", "db", "contract", "e2e")


def pytest_collection_modifyitems(config, items):
    for item in items:
        layer = item.path.parent.name
        if layer in LAYERS:
            item.add_marker(layer)


def pytest_unconfigure(config):
    made = getattr(config, "_hindsight_basetemp", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)


ADMIN_KEY = "test-admin-key-0123456789"
AUTH_EXT = "hindsight.extensions.builtin.tenant:ApiKeyTenantExtension"


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory):
    from hindsight.db.embedded import EmbeddedPostgres

    db = EmbeddedPostgres(tmp_path_factory.mktemp("pg"))
    yield db.start()
    db.stop()


@pytest.fixture(scope="session")
def server(pg_url):
    s = Server({"HINDSIGHT_API_DATABASE_URL": pg_url, "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true"}).start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def auth_server(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": pg_url,
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
        }
    ).start()
    yield s
    s.stop()


@pytest.fixture
def api(server):
    with server.http() as c:
        yield c


@pytest.fixture
def bank():
    return "t_" + uuid.uuid4().hex[:12]


def wait_for(fn, timeout: float = 30, every: float = 0.1):
    """The first truthy value `fn()` returns, polling until `timeout` seconds have passed."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if value := fn():
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


@contextlib.asynccontextmanager
async def mcp_session(url: str, headers: dict | None = None):
    """The official SDK client over Streamable HTTP."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers or {}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


# ---- in process: the app, its REST over ASGI, its MCP tools in memory --------------------------
@pytest.fixture(scope="session")
def contract_db(pg_url):
    return fresh_database(pg_url, "contract")


@contextlib.asynccontextmanager
async def running_app(env: dict):
    """The whole application in this process (engine, worker, scheduler, REST and MCP), started
    and stopped as the server's lifespan does."""
    import asyncio

    from hindsight.config import load_settings
    from hindsight.server.app import create_app

    application = create_app(load_settings(env))
    started, stop = asyncio.Event(), asyncio.Event()

    async def lifespan():
        # entered and left in one task, as the MCP session managers' task groups require
        async with application.lifespan():
            started.set()
            await stop.wait()

    task = asyncio.create_task(lifespan())
    await asyncio.wait([task, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # start-up failed: raise its error
    try:
        yield application
    finally:
        stop.set()
        await task


@pytest.fixture(scope="session")
async def app(contract_db):
    """The application in this process, on a database of its own so that no server process
    claims its operations."""
    env = {"HINDSIGHT_API_DATABASE_URL": contract_db, "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true"}
    async with running_app(env) as application:
        yield application


@pytest.fixture
async def rest(app):
    import httpx

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        yield c


@contextlib.asynccontextmanager
async def mcp_local(app, bank: str | None = None, multi: bool = False, who=None, header_bank=None, end_user=None):
    """The SDK's in-memory client on the app's single-bank (`bank`) or multi-bank tools, acting
    for `who` (default: no API keys configured), as if the router had resolved that request."""
    from mcp import Client

    from hindsight.engine.access.keys import OPEN
    from hindsight.mcp.servers import RequestState, build_server

    state = RequestState(who=who or OPEN, bank_id=bank, header_bank=header_bank, end_user=end_user or {})
    async with Client(build_server(app.engine, multi, state)) as client:
        yield client


# ---- LLM features: a stub OpenAI-compatible server and servers configured to use it -----------
@pytest.fixture(scope="session")
def stub():
    from hindsight.stub_llm import StubLLM

    s = StubLLM().start()
    yield s
    s.stop()


def fresh_database(pg_url: str, name: str) -> str:
    """A separate database on the session's PostgreSQL, so that workers of servers with other
    settings never claim this test's operations."""
    import asyncio

    import asyncpg

    async def create():
        conn = await asyncpg.connect(pg_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(create())
    return pg_url.replace("/postgres?", f"/{name}?", 1)


def migrated_database(pg_url: str, name: str, fill) -> str:
    """A fresh database (fresh_database) with the schema, filled by `fill(conn)`, a coroutine on
    one connection: for tests that set the sizes PostgreSQL plans with."""
    import asyncio

    import asyncpg

    from hindsight.db.pool import ensure_vector_extension, migrate

    url = fresh_database(pg_url, name)

    async def prepare() -> None:
        await ensure_vector_extension(url)
        await migrate(url)
        conn = await asyncpg.connect(url)
        try:
            await fill(conn)
        finally:
            await conn.close()

    asyncio.run(prepare())
    return url


def llm_env(stub, db_url: str, **extra) -> dict:
    env = {
        "HINDSIGHT_API_DATABASE_URL": db_url,
        "HINDSIGHT_API_LLM_MODEL": "openai/stub-model",
        "HINDSIGHT_API_LLM_BASE_URL": stub.base_url,
        "HINDSIGHT_API_LLM_API_KEY": "stub-key",
        "HINDSIGHT_API_LLM_MAX_RETRIES": "1",
        "HINDSIGHT_API_OPERATION_MAX_ATTEMPTS": "2",
        "HINDSIGHT_API_OPERATION_LEASE": "2",
        "HINDSIGHT_API_SCHEDULER_INTERVAL": "0.3",
        "HINDSIGHT_API_MENTAL_MODEL_DEBOUNCE": "1",
        "HINDSIGHT_API_RETAIN_LLM_BATCH_TOKENS": "400",
    }
    env.update({f"HINDSIGHT_API_{k.upper()}": str(v) for k, v in extra.items()})
    return env


@pytest.fixture(scope="session")
def llm_server(pg_url, stub):
    s = Server(llm_env(stub, fresh_database(pg_url, "llm_main"))).start()
    yield s
    s.stop()


@pytest.fixture
def llm_api(llm_server):
    with llm_server.http() as c:
        yield c
