"""The PostgreSQL backends serving the server's connections give way to it on a busy CPU
(db/priority.py, HINDSIGHT_API_DB_BACKEND_NICE): each backend is a session, so an autogroup, of
its own. Only backends shown to be local are touched, and never the server's own session."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest

from hindsight.db.pool import Pools
from hindsight.db.priority import _autogroup, local_backend, lower_priority
from hindsight.testing import Server

from conftest import fresh_database

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux scheduling")


def autogroup_nice(pid: int) -> int | None:
    """The nice value of the process's autogroup; None when the kernel has no autogroups."""
    path = Path(f"/proc/{pid}/autogroup")
    return int(path.read_text().split()[-1]) if path.exists() else None


def priorities(pid: int) -> tuple[int, int | None]:
    return psutil.Process(pid).nice(), autogroup_nice(pid)


async def eventually(check, seconds: float = 5.0):
    """Autogroup changes may be deferred (the kernel takes one a tenth of a second unprivileged)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


async def test_pooled_backends_run_at_the_nice_value(api, pg_url):  # api: the server made the vector type
    pools = await Pools.open(pg_url, 2, 6, backend_nice=7)  # 4 shared, 2 planned
    held = []
    try:
        for pool in pools:
            for _ in range(2):
                held.append((pool, await pool.acquire()))
        pids = [conn.get_server_pid() for _, conn in held]
        assert len(set(pids)) == 4
        for pid in pids:
            await eventually(lambda pid=pid: priorities(pid) == (7, None if autogroup_nice(pid) is None else 7))
    finally:
        for pool, conn in held:
            await pool.release(conn)
        await pools.close()


async def test_zero_leaves_backends_alone_and_a_nicer_backend_stays_nicer(api, pg_url):
    pools = await Pools.open(pg_url, 1, 2, backend_nice=0)
    try:
        async with pools.shared.acquire() as conn:
            pid = conn.get_server_pid()
            assert priorities(pid) == (0, 0 if autogroup_nice(pid) is not None else None)
            os.setpriority(os.PRIO_PROCESS, pid, 15)
            lower_priority(conn, 10)  # never raises a backend's priority
            assert psutil.Process(pid).nice() == 15
    finally:
        await pools.close()


async def test_a_backend_reached_over_tcp_is_not_touched(pg_url):
    """The embedded PostgreSQL listens on a unix socket only; a TCP relay in front of it stands
    for a PostgreSQL whose backends cannot be shown to be on this machine."""
    socket_path = pg_url.split("host=", 1)[1].split("&", 1)[0] + "/.s.PGSQL.5432"

    async def relay(reader, writer):
        up_reader, up_writer = await asyncio.open_unix_connection(socket_path)

        async def pipe(src, dst):
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        conn = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres")
        try:
            pid = conn.get_server_pid()
            assert local_backend(conn) is None
            lower_priority(conn, 12)
            await asyncio.sleep(0.3)
            assert psutil.Process(pid).nice() == 0
        finally:
            await conn.close()
        direct = await asyncpg.connect(pg_url)
        try:
            assert local_backend(direct) == direct.get_server_pid()
        finally:
            await direct.close()
    finally:
        server.close()
        await server.wait_closed()


def test_the_servers_own_session_is_never_lowered():
    before = autogroup_nice(os.getpid())
    assert _autogroup(os.getpid(), 9) is True
    assert autogroup_nice(os.getpid()) == before


@pytest.mark.parametrize("nice", [None, "0"])
def test_a_server_lowers_its_backends_by_default_and_not_when_told(pg_url, nice):
    name = f"priority_{nice or 'default'}"
    url = fresh_database(pg_url, name)
    env = {"HINDSIGHT_API_DATABASE_URL": url} | ({"HINDSIGHT_API_DB_BACKEND_NICE": nice} if nice else {})
    server = Server(env).start()
    try:
        for i in range(3):
            r = httpx.post(f"{server.url}/v1/banks/prio/memories", json={"items": [{"content": f"fact {i}"}]})
            assert r.status_code == 200, r.text
            assert httpx.post(f"{server.url}/v1/banks/prio/recall", json={"query": "fact"}).status_code == 200

        async def backends() -> list[int]:
            conn = await asyncpg.connect(pg_url)
            try:
                rows = await conn.fetch(
                    "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'", name
                )
            finally:
                await conn.close()
            return [r["pid"] for r in rows]

        pids = asyncio.run(backends())
        assert pids, "the server holds connections to its database"
        want = 10 if nice is None else 0

        def settled() -> bool:
            return all(priorities(pid) == (want, None if autogroup_nice(pid) is None else want) for pid in pids)

        asyncio.run(eventually(settled))
    finally:
        server.stop()
