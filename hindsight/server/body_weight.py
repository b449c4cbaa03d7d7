"""What a JSON request body will weigh once parsed, counted as it arrives.

Python's json turns three bytes of `[],` into an 80-byte list: a 99 MB body of them took 2.8 GB
of memory and 10.5 s of the event loop before any model could refuse it (json.loads holds the
GIL, so a thread would not have freed the loop; bench/README.md, "Request bodies: what their
JSON weighs"). Each route's model bounds what a request may hold, but only after the whole body
is parsed. So the body is weighed on the way in, chunk by chunk, by what parsing it would make:

- structure: a container for each bracket or brace, a value after each comma or colon, counted
  only outside strings (string boundaries are the quotes left once escaped backslashes and
  escaped quotes are taken out), so a document's text full of braces is never taken for nesting;
- text: json.loads decodes the whole body to one str, then makes a str of each string, and a
  str takes 1, 2 or 4 bytes a character by the widest character it holds: one emoji in 100 MB of
  ASCII makes both 400 MB. Characters are counted by their UTF-8 lead bytes, the width by the
  widest seen (a lead byte, or a `\\u` escape: a surrogate pair is one wide character);
- long numbers: Python reads an integer's digits in time that grows with the square of their
  count (4,300 digits, the most it allows, ~0.1 ms each), so a run of n digits outside strings
  weighs n²/512.

A body is refused (413) when it would weigh more than FREE and more than PER_BYTE times its
size. A retain of thousands of items with ordinary metadata weighs a few MB; an ASCII document
about twice its size; metadata of float arrays about 3.5 times. At the 100 MiB request limit the
most a body may make is ~400 MB, about two seconds of parsing.

Python's json also reads UTF-16 and UTF-32 bodies, whose other characters may hold the bytes of
a quote: a body with a NUL in its first four bytes (those encodings; UTF-8 JSON has no NUL byte)
is weighed by every structural byte, strings or not, and its text at the widest.
"""

from __future__ import annotations

import re

import numpy as np

# Bytes of Python objects each structural character stands for (CPython 3.11, 64-bit, with the
# parent's pointer): a list 80, a small dict ~200, a value 32 (a float; a cached small int less),
# and a string's ~50 bytes of header, half for each of its two quotes.
_COSTS = np.zeros(256, dtype=np.int64)
_COSTS[ord("[")] = 80
_COSTS[ord("{")] = 200
_COSTS[ord(",")] = 32
_COSTS[ord(":")] = 32
_PER_QUOTE = 25
_QUOTE = ord('"')
_DIGIT_SQUARE = 512  # a run of n digits weighs n * n / this
_WIDE_ESCAPE = re.compile(rb"\\u[dD][89abAB]")  # a surrogate: with its pair, a character past U+FFFF
_UCS2_ESCAPE = re.compile(rb"\\u(?!00)")  # U+0100 or past

FREE = 128 * 2**20  # a body that would weigh less than this is never refused
PER_BYTE = 4  # past FREE, at most this many bytes for each byte of body
# No body of this many bytes or fewer can weigh FREE: a byte weighs at most 200 (`{`) + 8 (a
# character inside a string at four bytes, counted twice) and n digits n²/512, ~22 MB at 64 KiB.
# BodyLimit weighs a body only once it grows past this (weighing costs ~20 numpy calls a chunk).
UNWEIGHED = 64 * 1024


class JsonWeight:
    """Fed a body's chunks in order; `weight()` is about what parsing it would allocate."""

    def __init__(self) -> None:
        self.size = 0
        self.objects = 0  # structure and string headers
        self.digits = 0  # long numbers, as the memory-equivalent of their parsing time
        self.chars = 0  # characters of the body
        self.string_chars = 0  # characters inside strings
        self.width = 1  # bytes a character of the widest str parsing makes
        self._inside = 0  # 1 while a string is open at the end of what was fed
        self._escape = b""  # a backslash at the end of a chunk escapes the next chunk's first byte
        self._tail = b""  # the last bytes fed, where an escape may begin that ends in the next chunk
        self._run = 0  # digits outside strings at the end of what was fed
        self._head = b""  # the body's first bytes, until there are four to tell UTF-8 by
        self._wide: bool | None = None  # UTF-16 or UTF-32: no string is taken for one

    def weight(self) -> int:
        pending = self._run * self._run // _DIGIT_SQUARE
        return self.objects + self.digits + pending + self.width * (self.chars + self.string_chars)

    def too_heavy(self) -> bool:
        weight = self.weight()
        return weight > FREE and weight > PER_BYTE * self.size

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
            # every character a string's, at four bytes: at most a character for two bytes
            self.width, self.chars, self.string_chars = 4, self.size // 2, self.size // 2
            return
        data = self._escape + chunk
        kept = data.rstrip(b"\\")
        # only the run's parity matters: pairs are escaped backslashes, an odd one escapes on
        self._escape = b"\\" if (len(data) - len(kept)) % 2 else b""
        if b"\\" in kept or b"\\" in self._tail:
            # escaped backslashes first; then what is left of a backslash is an escape (one may
            # have begun at the end of the last chunk); then escaped quotes out, so that what
            # is left of `"` delimits strings
            kept = kept.replace(b"\\\\", b"")
            self._widen_by_escapes(self._tail + kept)
            kept = kept.replace(b'\\"', b"")
        self._tail = kept[-5:]
        if not kept:
            return
        a = np.frombuffer(kept, dtype=np.uint8)
        quotes = a == _QUOTE
        n_quotes = int(np.count_nonzero(quotes))
        # the quotes before each byte, mod 2 (uint8 wraps at 256, an even number): 0 outside strings
        outside = ((np.cumsum(quotes, dtype=np.uint8) + self._inside) & 1) == 0
        self.objects += int(np.bincount(a[outside], minlength=256) @ _COSTS) + _PER_QUOTE * n_quotes
        self._inside = (self._inside + n_quotes) & 1
        self._count_text(a, outside)
        self._count_digits(((a >= ord("0")) & (a <= ord("9")) & outside).view(np.int8))

    def _widen_by_escapes(self, data: bytes) -> None:
        if self.width < 4 and _WIDE_ESCAPE.search(data):
            self.width = 4
        elif self.width < 2 and _UCS2_ESCAPE.search(data):
            self.width = 2

    def _count_text(self, a: np.ndarray, outside: np.ndarray) -> None:
        leads = (a & 0xC0) != 0x80  # a character's first byte (ASCII, or a UTF-8 lead byte)
        self.chars += int(np.count_nonzero(leads))
        self.string_chars += int(np.count_nonzero(leads & ~outside))
        if self.width < 4:
            top = int(a.max())
            if top >= 0xF0:  # a four-byte UTF-8 character: past U+FFFF
                self.width = 4
            elif self.width < 2 and top >= 0xC4 and np.any((a >= 0xC4) & (a <= 0xEF)):  # U+0100 or past
                self.width = 2

    def _count_digits(self, digits: np.ndarray) -> None:
        """Charge each run of digits by the square of its length once it ends; a run reaching the
        chunk's end goes on into the next."""
        if not digits.any():
            self.digits += self._run * self._run // _DIGIT_SQUARE
            self._run = 0
            return
        edges = np.diff(np.concatenate(([0], digits, [0])).astype(np.int8))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs = (ends - starts).astype(np.int64)
        if starts[0] == 0:
            runs[0] += self._run  # the run the last chunk ended in goes on
        elif self._run:
            self.digits += self._run * self._run // _DIGIT_SQUARE
        self._run = 0
        if ends[-1] == len(digits):  # this chunk ends in a run: weighed once it ends
            self._run, runs = int(runs[-1]), runs[:-1]
        self.digits += int((runs * runs // _DIGIT_SQUARE).sum())
