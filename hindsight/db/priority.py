"""The server's PostgreSQL backends give way to the server that feeds them, on a shared machine.

PostgreSQL starts every backend in a session of its own (setsid), and Linux's autogroup
scheduler, on by default in most distributions, gives each session an equal share of a busy
CPU. So ten busy backends get ten shares, and the whole server gets one: its event loop, which
every request and every statement's result passes through, and its embedding threads together.
On two cores, with 16 clients on a 100,000-memory bank, the event loop waited behind the backends
it had just woken, and 13-15% of the CPU sat idle. With the backends at nice 10 the idle share was
4-5% and one process served 147-154 recalls/s against 127-135 (bench/README.md, "One process: the
backends' autogroups"). The cost shows when the server's own CPU is busy with other work: a bulk
retain embedding on every core leaves a recall's statements less of the CPU (same entry).

Only backends shown to be local are touched. The connection must be a unix socket. Its peer
(SO_PEERCRED, filled in by the kernel and given in our pid namespace) is the postmaster. The
backend must be that postmaster's child, running as the peer's user. A PostgreSQL over TCP, or one
in another pid namespace, is left as it is. Both the backend's autogroup and the backend itself
get the nice value: the first counts when autogroups are on, the second when they are off.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import struct

import asyncpg
import psutil

log = logging.getLogger("hindsight.db")

# Without CAP_SYS_ADMIN, Linux takes one autogroup change a tenth of a second across the machine
# and answers EAGAIN to the rest (kernel/sched/autogroup.c); a pool opens its connections at once.
_RETRY_SECONDS = 0.12
_RETRIES = 100
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def local_backend(conn: asyncpg.Connection) -> int | None:
    """The pid of the backend serving `conn`, when it can be shown to run on this machine, in
    this pid namespace (module docstring); otherwise None."""
    transport = getattr(conn, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    try:
        peer, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
        backend = psutil.Process(conn.get_server_pid())
        if backend.ppid() != peer or backend.uids().real != uid:
            return None
    except (OSError, psutil.Error):
        return None
    return backend.pid


def _autogroup(pid: int, nice: int) -> bool:
    """Set the autogroup's nice; False when the kernel asks to try again later. An autogroup is a
    session's, so a backend still in ours (a PostgreSQL that did not start a session for it)
    would have the server's own autogroup lowered with it: never."""
    try:
        if os.getsid(pid) == os.getsid(0):
            return True
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            return False
        # No autogroups (FileNotFoundError), a gone backend, or no right to it: nothing to do.
        log.debug("backend %d: autogroup nice not set: %s", pid, exc)
    return True


def _retry(pid: int, nice: int, left: int) -> None:
    if not _autogroup(pid, nice) and left > 0:
        asyncio.get_running_loop().call_later(_RETRY_SECONDS, _retry, pid, nice, left - 1)


def lower_priority(conn: asyncpg.Connection, nice: int) -> None:
    """Give the backend serving `conn` the nice value `nice` (0 leaves it as it is), when it is
    local. Called as each pooled connection opens; an autogroup the kernel asks to set later is
    set later, on the event loop."""
    if nice <= 0:
        return
    pid = local_backend(conn)
    if pid is None:
        return
    try:
        if os.getpriority(os.PRIO_PROCESS, pid) < nice:
            os.setpriority(os.PRIO_PROCESS, pid, nice)
    except OSError as exc:
        log.debug("backend %d: nice not set: %s", pid, exc)
    if not _autogroup(pid, nice):
        asyncio.get_running_loop().call_later(_RETRY_SECONDS, _retry, pid, nice, _RETRIES)
