"""What a JSON request body will weigh once parsed, counted as it arrives.

Python's json turns three bytes of `[],` into an 80-byte list: a 99 MB body of them took 2.8 GB
of memory and 10.5 s of the event loop before any model could refuse it (json.loads holds the
GIL, so a thread would not have freed the loop; bench/README.md, "Request bodies: what their
JSON weighs"). Each route's model bounds what a request may hold, but only after the whole body
is parsed. So the body is weighed on the way in, chunk by chunk, by what its JSON would make:
a container for each bracket or brace, a value after each comma or colon, a string for each pair
of quotes. Only characters outside strings count as structure: prose, code or base64 inside a
string costs about its own size, so a document's text full of braces is never taken for nesting.
A body is refused (413) when those objects would weigh more than FREE and more than PER_BYTE
times the body: at the request limit of 100 MiB that is ~200 MB of objects and ~1 s of parsing
at worst, where a body of ordinary JSON (a retain of thousands of items, a document) weighs a
fraction of it.

Python's json also reads UTF-16 and UTF-32 bodies, whose other characters may hold the bytes of
a quote: a body with a NUL in its first four bytes (those encodings; UTF-8 JSON has no NUL byte)
is weighed by every structural byte, strings or not, so no string can hide structure.
"""

from __future__ import annotations

import numpy as np

# Bytes of Python objects each structural character stands for (CPython 3.11, 64-bit, with the
# parent's pointer): a list 80, a small dict ~200, a value 32 (a float; a cached small int less,
# a string its own ~50 more, counted by its quotes).
_COSTS = np.zeros(256, dtype=np.int64)
_COSTS[ord("[")] = 80
_COSTS[ord("{")] = 200
_COSTS[ord(",")] = 32
_COSTS[ord(":")] = 32
_PER_QUOTE = 25  # half a string object's ~50 bytes: two quotes a string
_QUOTE = ord('"')

FREE = 64 * 2**20  # a body whose objects stay under this is never refused
PER_BYTE = 2  # past FREE, at most this many bytes of objects per byte of body


class JsonWeight:
    """Fed a body's chunks in order; `objects` is what parsing it would allocate, about."""

    def __init__(self) -> None:
        self.size = 0
        self.objects = 0
        self._inside = 0  # 1 while a string is open at the end of what was fed
        self._escape = b""  # a backslash at the end of a chunk escapes the next chunk's first byte
        self._head = b""  # the body's first bytes, until there are four to tell UTF-8 by
        self._wide: bool | None = None  # UTF-16 or UTF-32: no string is taken for one

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.size += len(chunk)
        if self._wide is None:
            self._head += chunk
            if len(self._head) < 4:
                return
            self._wide = b"\x00" in self._head[:4]
            chunk, self._head = self._head, b""
        if self._wide:
            counts = np.bincount(np.frombuffer(chunk, dtype=np.uint8), minlength=256)
            self.objects += int(counts @ _COSTS) + _PER_QUOTE * int(counts[_QUOTE])
            return
        data = self._escape + chunk
        kept = data.rstrip(b"\\")
        # only the run's parity matters: pairs are escaped backslashes, an odd one escapes on
        self._escape = b"\\" if (len(data) - len(kept)) % 2 else b""
        if b"\\" in kept:
            # escaped backslashes first, then escaped quotes: what is left of `"` delimits strings
            kept = kept.replace(b"\\\\", b"").replace(b'\\"', b"")
        a = np.frombuffer(kept, dtype=np.uint8)
        quotes = a == _QUOTE
        # the quotes before each byte, mod 2 (uint8 wraps at 256, an even number): 0 outside strings
        outside = ((np.cumsum(quotes, dtype=np.uint8) + self._inside) & 1) == 0
        counts = np.bincount(a[outside], minlength=256)
        n_quotes = int(np.count_nonzero(quotes))
        self._inside = (self._inside + n_quotes) & 1
        self.objects += int(counts @ _COSTS) + _PER_QUOTE * n_quotes

    def too_heavy(self) -> bool:
        return self.objects > FREE and self.objects > PER_BYTE * self.size
