"""Keep the server's resident memory close to what it uses.

glibc's malloc keeps freed memory in per-thread arenas and rarely hands it back, so a process
that embeds a 1,000-item batch in a worker thread keeps that batch's peak for good. Two arenas
(instead of eight per core) and a trim after large transient allocations keep RSS near the live
set; the cost is a few microseconds per trim. Elsewhere than glibc both calls do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_M_ARENA_MAX = -8
_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _libc.malloc_trim, _libc.mallopt  # noqa: B018 - both must exist (glibc)
except (OSError, AttributeError):
    _libc = None


def limit_arenas(n: int = 2) -> None:
    """Call before threads start: later threads share these arenas."""
    if _libc is not None:
        _libc.mallopt(_M_ARENA_MAX, n)


def trim() -> None:
    """Return free heap memory to the operating system."""
    if _libc is not None:
        _libc.malloc_trim(0)
