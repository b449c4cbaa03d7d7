"""Memory ids that sort in the order the memories were made (RFC 9562's UUID version 7: a
millisecond clock, then a counter, then random bits).

Recall breaks ties between memories of equal score by id: with these ids a tie goes to the memory
retained first, so two banks made from the same input rank alike, run after run (bench/README.md,
"Recall that finds what matters"). The 62 random bits keep ids unguessable enough for what they
name (a memory is read through its bank's key, never by its id alone).
"""

from __future__ import annotations

import os
import threading
import time
import uuid

_COUNTER_MAX = 0xFFF
_lock = threading.Lock()
_last = (0, 0)  # (milliseconds, counter) of the id made last in this process


def new_memory_id() -> uuid.UUID:
    """A version-7 UUID greater than every one this process made before: within a millisecond a
    12-bit counter orders them, and when it runs out the clock is taken one millisecond on."""
    global _last
    with _lock:
        ms, counter = _last
        now = time.time_ns() // 1_000_000
        if now > ms:
            ms, counter = now, 0
        elif counter < _COUNTER_MAX:
            counter += 1
        else:
            ms, counter = ms + 1, 0
        _last = (ms, counter)
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand
    return uuid.UUID(int=value)
