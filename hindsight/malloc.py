"""Keep the server's resident memory close to what it uses, and its collector off start-up's objects.

glibc's malloc keeps freed memory in per-thread arenas and rarely hands it back, so a process
that embeds a 1,000-item batch in a worker thread keeps that batch's peak for good. Two arenas
(instead of eight per core) and a trim after large transient allocations keep RSS near the live
set; the cost is a few microseconds per trim. Elsewhere than glibc these calls do nothing.

glibc also raises its mmap threshold (from 128 KB up to 32 MB) each time a large block is freed:
after the model's temporary buffers at start-up, blocks of megabytes would come from the heap,
and what was freed there between long-lived objects would stay resident. The threshold is fixed
at 128 KB during start-up, so those buffers are mapped and leave when freed, then at 1 MB while
serving, so a request's or an embedding run's blocks are reused from the heap (a 128 KB threshold
throughout makes retain slower); bench/README.md, "Heap: a fixed mmap threshold".
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

_M_ARENA_MAX = -8
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
START_MMAP_THRESHOLD = 128 * 1024
SERVE_MMAP_THRESHOLD = 1024 * 1024
_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _libc.malloc_trim, _libc.mallopt  # noqa: B018 - both must exist (glibc)
except (OSError, AttributeError):
    _libc = None


def configure(arenas: int = 2) -> None:
    """Call before threads start: later threads share these arenas."""
    if _libc is not None:
        _libc.mallopt(_M_ARENA_MAX, arenas)
        _libc.mallopt(_M_MMAP_THRESHOLD, START_MMAP_THRESHOLD)


def started() -> None:
    """Call once start-up is done. What start-up made (modules, the app, the model: ~150,000
    objects) lives as long as the process: frozen, a full collection no longer walks it (each
    walk held the event loop); and the young generation is collected every 10,000 allocations
    instead of 700, so the objects of requests in flight are not promoted to live for good
    (they die by reference count). bench/README.md, "Garbage collection after start-up".

    Then the heap: start-up's large temporaries are gone; return what they left, and
    let the blocks of a request or an embedding batch (up to 1 MB) be reused from the heap
    rather than mapped and unmapped each time. A fixed mmap threshold also fixes the trim
    threshold (glibc raised both together), so it is raised too: at 128 KB, every such block
    freed at the top of the heap went back to the system and was faulted in again."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    if _libc is not None:
        _libc.mallopt(_M_MMAP_THRESHOLD, SERVE_MMAP_THRESHOLD)
        _libc.mallopt(_M_TRIM_THRESHOLD, 2 * SERVE_MMAP_THRESHOLD)
        _libc.malloc_trim(0)


def trim() -> None:
    """Return free heap memory to the operating system."""
    if _libc is not None:
        _libc.malloc_trim(0)
