"""The server's PostgreSQL backends give way to the server that feeds them, on a shared machine.

PostgreSQL starts every backend in a session of its own (setsid), and Linux's autogroup
scheduler, on by default in most distributions, gives each session an equal share of a busy
CPU. So ten busy backends get ten shares, and the whole server gets one: its event loop, which
every request and every statement's result passes through, and its embedding threads together.
On two cores, with 16 clients on a 100,000-memory bank, the event loop waited behind the backends
it had just woken, and 13-15% of the CPU sat idle. With the backends at nice 10 the idle share was
3-5%, and one process served 5-10% more recalls per second, up to 40% more in a slow spell
(bench/README.md, "One process: the backends' autogroups"). The cost shows when the server's own
CPU is busy with other work: a bulk retain embedding on every core leaves a recall's statements
less of the CPU (same entry). Autogroups apply only to processes in the root CPU cgroup; in a
container with its own CPU controller the backend's own nice is what counts.

Only backends shown to be local are touched. The connection must be a unix socket on Linux. Its
peer (SO_PEERCRED, filled in by the kernel and given in our pid namespace, 0 outside it) is the
postmaster. The backend must be that postmaster's child, running as the peer's user, in our pid
namespace, and the leader of its own session (so that its autogroup is its own, never the
postmaster's or the server's). A PostgreSQL over TCP, a pooler, or one in another pid namespace is
left as it is. Both the backend's autogroup and the backend itself get the nice value, and neither
is ever given a higher priority than it has.

The parallel query workers and I/O workers a statement may use are not the connection's backend
and keep their priority.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import struct
import sys

import asyncpg
import psutil

log = logging.getLogger("hindsight.db")

# Without CAP_SYS_ADMIN, Linux takes one autogroup change a tenth of a second across the machine
# and answers EAGAIN to the rest (kernel/sched/autogroup.c); a pool opens its connections at once.
_RETRY_SECONDS = 0.12
_RETRIES = 100
_PEERCRED = struct.Struct("3i")  # Linux's struct ucred: pid, uid, gid (OpenBSD orders it otherwise)
_LINUX = sys.platform.startswith("linux")
_told: set[str] = set()


def _tell_once(what: str, pid: int, reason: object) -> None:
    """A local backend that could not be lowered is worth one line (a server not running as
    PostgreSQL's user, a read-only /proc); the next ones only at debug."""
    if what in _told:
        log.debug("backend %d: %s not set: %s", pid, what, reason)
        return
    _told.add(what)
    log.info("the database backends' %s is left as it is (backend %d: %s)", what, pid, reason)


def local_backend(conn: asyncpg.Connection) -> int | None:
    """The pid of the backend serving `conn`, when it can be shown to run on this machine, in
    this pid namespace, in a session of its own (module docstring); otherwise None."""
    if not _LINUX:
        return None
    transport = getattr(conn, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    try:
        peer, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
        pid = conn.get_server_pid()  # as the server announced it: a pooler makes one up
        if peer <= 0 or not isinstance(pid, int) or pid <= 0:
            return None
        backend = psutil.Process(pid)
        if backend.ppid() != peer or backend.uids().real != uid or os.getsid(pid) != pid:
            return None
        with open(f"/proc/{pid}/status") as f:
            nspid = next((line.split()[1:] for line in f if line.startswith("NSpid:")), [str(pid)])
        if nspid != [str(pid)]:
            return None
    except (OSError, ValueError, psutil.Error):
        return None
    return pid


class _Autogroup:
    """The backend's autogroup, held by a handle on its /proc directory: a retry that comes after
    the backend ended fails to open the file, even if its pid is in use again."""

    def __init__(self, pid: int):
        self.pid = pid
        self.dir = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY)

    def close(self) -> None:
        os.close(self.dir)

    def lower(self, nice: int) -> bool:
        """Set the autogroup's nice to at least `nice`; False when the kernel asks to try again
        later."""
        try:
            fd = os.open("autogroup", os.O_RDWR, dir_fd=self.dir)
            try:
                if int(os.read(fd, 256).split()[-1]) >= nice:  # "/autogroup-123 nice 0"
                    return True
                os.lseek(fd, 0, os.SEEK_SET)
                os.write(fd, str(nice).encode())
            finally:
                os.close(fd)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                return False
            if exc.errno not in (errno.ENOENT, errno.ESRCH):  # no autogroups; the backend ended
                _tell_once("autogroup nice", self.pid, exc)
        except (ValueError, IndexError) as exc:
            log.debug("backend %d: unreadable autogroup: %s", self.pid, exc)
        return True


def _keep_trying(group: _Autogroup, nice: int, left: int) -> None:
    if group.lower(nice):
        group.close()
    elif left <= 0:
        group.close()
        _tell_once("autogroup nice", group.pid, "the kernel kept asking to try again later")
    else:
        asyncio.get_running_loop().call_later(_RETRY_SECONDS, _keep_trying, group, nice, left - 1)


def lower_priority(conn: asyncpg.Connection, nice: int) -> None:
    """Give the backend serving `conn` the nice value `nice` (0 leaves it as it is), when it is
    local. Called as each pooled connection opens; an autogroup the kernel asks to set later is
    set later, on the event loop. Best effort: it never fails the connection."""
    if nice <= 0:
        return
    try:
        pid = local_backend(conn)
        if pid is None:
            return
        try:
            if os.getpriority(os.PRIO_PROCESS, pid) < nice:
                os.setpriority(os.PRIO_PROCESS, pid, nice)
        except OSError as exc:
            if exc.errno != errno.ESRCH:
                _tell_once("nice", pid, exc)
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            _keep_trying(_Autogroup(pid), nice, _RETRIES)
    except Exception as exc:  # a scheduling nicety must not cost a connection
        log.debug("backend priority not set: %s: %s", type(exc).__name__, exc)
