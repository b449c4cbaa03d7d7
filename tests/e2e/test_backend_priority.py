"""The PostgreSQL backends serving the server's connections give way to it on a busy CPU
(db/priority.py, HINDSIGHT_API_DB_BACKEND_NICE): each backend is a session, so an autogroup, of
its own. Only backends shown to be local are touched: never one behind a relay or a made-up pid,
never the server's own session, never to a higher priority than it had."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest

from hindsight.db.pool import Pools
from hindsight.db.priority import _Autogroup, local_backend, lower_priority
from hindsight.testing import Server

from conftest import fresh_database

ROOT = Path(__file__).resolve().parents[2]


def autogroup_nice(pid: int) -> int | None:
    """The nice value of the process's autogroup; None when the kernel has no autogroups."""
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except (OSError, IndexError, ValueError):
        return None


def autogroups_writable() -> bool:
    """Writing our own autogroup's value back changes nothing and tells whether /proc lets us."""
    now = autogroup_nice(os.getpid())
    if now is None:
        return True  # no autogroups: only the backends' own nice is checked
    try:
        Path("/proc/self/autogroup").write_text(str(now))
    except OSError as exc:
        return exc.errno == errno.EAGAIN
    return True


pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not autogroups_writable(), reason="Linux scheduling, writable /proc"
)


def expected(pid: int, nice: int) -> tuple[int, int | None]:
    """(process nice, autogroup nice) of a backend lowered to `nice`: a backend starts at its
    postmaster's nice (the test runner's, maybe under `nice`) and in a new autogroup at 0."""
    inherited = psutil.Process(pid).parent().nice()
    return max(inherited, nice), (None if autogroup_nice(pid) is None else nice)


def priorities(pid: int) -> tuple[int, int | None]:
    return psutil.Process(pid).nice(), autogroup_nice(pid)


async def eventually(check, seconds: float = 5.0):
    """Autogroup changes may be deferred (the kernel takes one a tenth of a second unprivileged)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


def pg_socket(pg_url: str) -> str:
    return pg_url.split("host=", 1)[1].split("&", 1)[0] + "/.s.PGSQL.5432"


async def test_pooled_backends_run_at_the_nice_value(api, pg_url):  # api: the server made the vector type
    pools = await Pools.open(pg_url, 2, 6, backend_nice=7)  # 3 shared, 2 planned, 1 fixed
    held = []
    try:
        for pool in pools:
            for _ in range(min(2, pool.get_max_size())):
                held.append((pool, await pool.acquire()))
        pids = [conn.get_server_pid() for _, conn in held]
        assert len(set(pids)) == 5
        for pid in pids:
            await eventually(lambda pid=pid: priorities(pid) == expected(pid, 7))
    finally:
        for pool, conn in held:
            await pool.release(conn)
        await pools.close()


async def test_zero_leaves_backends_alone_and_a_nicer_backend_stays_nicer(api, pg_url):
    pools = await Pools.open(pg_url, 1, 2, backend_nice=0)
    try:
        async with pools.shared.acquire() as conn:
            pid = conn.get_server_pid()
            assert priorities(pid) == expected(pid, 0)
            os.setpriority(os.PRIO_PROCESS, pid, 15)
            if autogroup_nice(pid) is not None:
                Path(f"/proc/{pid}/autogroup").write_text("15")
            lower_priority(conn, 10)  # never raises a backend's priority
            await asyncio.sleep(0.3)
            assert priorities(pid) == (15, None if autogroup_nice(pid) is None else 15)
    finally:
        await pools.close()


async def relay_server(pg_url: str, listen, rewrite_pid: int | None = None):
    """A relay in front of the database, on TCP or a unix socket of its own; `rewrite_pid`: the
    backend pid it announces instead of the real one (a pooler makes one up)."""

    async def relay(reader, writer):
        up_reader, up_writer = await asyncio.open_unix_connection(pg_socket(pg_url))

        async def pipe(src, dst, rewrite: int | None):
            buf = b""
            try:
                while data := await src.read(65536):
                    if rewrite is not None:  # until BackendKeyData ('K': pid, then the key) has passed
                        buf, data = buf + data, b""
                        while len(buf) >= 5 and len(buf) >= 1 + int.from_bytes(buf[1:5], "big"):
                            size = 1 + int.from_bytes(buf[1:5], "big")
                            message, buf = buf[:size], buf[size:]
                            if message[:1] == b"K":
                                message = message[:5] + rewrite.to_bytes(4, "big", signed=True) + message[9:]
                                data, buf, rewrite = data + message + buf, b"", None
                                break
                            data += message
                    dst.write(data)
                    await dst.drain()
            finally:
                dst.close()

        await asyncio.gather(
            pipe(reader, up_writer, None), pipe(up_reader, writer, rewrite_pid), return_exceptions=True
        )

    return await listen(relay)


@pytest.mark.parametrize("via", ["tcp", "unix", "unix, pid made up", "unix, negative pid", "unix, our own pid"])
async def test_a_backend_that_cannot_be_shown_local_is_not_touched(pg_url, tmp_path, via):
    """Over TCP, the peer cannot be known. Over a unix socket whose listener is not the postmaster
    (a relay, a pooler, a hostile process), the announced backend is not the listener's child. A
    made-up or negative pid (PgBouncer sends random bytes) must not fail the connection either."""
    direct = await asyncpg.connect(pg_url)
    real = direct.get_server_pid()
    try:
        assert local_backend(direct) == real
    finally:
        await direct.close()

    rewrite = {"unix, pid made up": real, "unix, negative pid": -12345, "unix, our own pid": os.getpid()}.get(via)
    if via == "tcp":
        server = await relay_server(pg_url, lambda handle: asyncio.start_server(handle, "127.0.0.1", 0))
        url = f"postgresql://postgres@127.0.0.1:{server.sockets[0].getsockname()[1]}/postgres"
    else:
        path = tmp_path / ".s.PGSQL.5432"
        server = await relay_server(pg_url, lambda handle: asyncio.start_unix_server(handle, str(path)), rewrite)
        url = f"postgresql://postgres@/postgres?host={tmp_path}"
    ours_before = autogroup_nice(os.getpid())
    try:
        conn = await asyncpg.connect(url)
        try:
            announced = conn.get_server_pid()
            assert announced == (rewrite if rewrite is not None else announced)
            backend = int(await conn.fetchval("SELECT pg_backend_pid()"))
            assert local_backend(conn) is None
            lower_priority(conn, 12)
            await asyncio.sleep(0.3)
            assert priorities(backend) == expected(backend, 0)
            assert await conn.fetchval("SELECT 1") == 1  # the connection is unharmed
        finally:
            await conn.close()
    finally:
        server.close()
        await server.wait_closed()
    assert autogroup_nice(os.getpid()) == ours_before


def test_a_deferred_change_never_reaches_a_process_that_took_an_ended_backends_pid():
    """The autogroup is held by a handle on the backend's /proc directory: once that process is
    gone the handle opens nothing, whatever process has its pid by then."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        group = _Autogroup(child.pid)
    finally:
        child.kill()
        child.wait()
    try:
        assert group.lower(9) is True  # done: nothing left to lower, and no error
    finally:
        group.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="drops CAP_SYS_ADMIN with setpriv")
def test_without_cap_sys_admin_the_kernels_rate_limit_is_waited_out(api, pg_url, tmp_path):
    """Unprivileged, Linux takes one autogroup change a tenth of a second machine-wide and answers
    EAGAIN to the rest; the pool opens its connections at once, so most changes come later."""
    script = tmp_path / "pool.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, json, sys
            sys.path.insert(0, {str(ROOT)!r})
            from hindsight.db.pool import Pools

            async def main():
                pools = await Pools.open({pg_url!r}, 6, 9, backend_nice=11)
                held = [await pools.shared.acquire() for _ in range(5)]
                await asyncio.sleep(2.5)
                pids = [c.get_server_pid() for c in held]
                print(json.dumps([[p, open(f"/proc/{{p}}/autogroup").read().split()[-1]] for p in pids]))
                for c in held:
                    await pools.shared.release(c)
                await pools.close()

            asyncio.run(main())
            """
        )
    )
    out = subprocess.run(
        ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    groups = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(groups) == 5 and all(nice == "11" for _, nice in groups), groups


@pytest.mark.parametrize("nice", [None, "0"])
def test_a_server_lowers_its_backends_by_default_and_not_when_told(pg_url, nice):
    name = f"priority_{nice or 'default'}"
    url = fresh_database(pg_url, name)
    env = {"HINDSIGHT_API_DATABASE_URL": url} | ({"HINDSIGHT_API_DB_BACKEND_NICE": nice} if nice else {})
    ours_before = autogroup_nice(os.getpid())
    server = Server(env).start()  # in this test's session, so in its autogroup
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
            try:
                return all(priorities(pid) == expected(pid, want) for pid in pids)
            except psutil.NoSuchProcess:
                return False

        asyncio.run(eventually(settled))
        assert autogroup_nice(os.getpid()) == ours_before  # the server's own session is never lowered
    finally:
        server.stop()
