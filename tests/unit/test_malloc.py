"""malloc.configure / malloc.started set glibc's mmap threshold: a 200 KB block is mapped of its
own during start-up (and so leaves when freed) and comes from the heap while serving, where a
freed block below 1 MB is not trimmed away at once. Checked in a fresh interpreter through glibc's
own counts (mallinfo2: mapped blocks, heap size)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hindsight import malloc

PROBE = textwrap.dedent(
    """
    import ctypes
    from hindsight import malloc

    class Info(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

    libc = malloc._libc
    libc.mallinfo2.restype = Info
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]

    def mapped_by(size):
        before = libc.mallinfo2().hblks
        p = libc.malloc(size)
        after = libc.mallinfo2().hblks
        libc.free(p)
        return after - before

    malloc.configure()
    # glibc's default would raise the threshold past this size once such a block is freed.
    big = libc.malloc(4 << 20); libc.free(big)
    start = mapped_by(200_000)
    malloc.started()
    serve = mapped_by(200_000), mapped_by(4 << 20)
    block = libc.malloc(900_000)
    grown = libc.mallinfo2().arena
    libc.free(block)
    print(start, *serve, grown - libc.mallinfo2().arena)
    """
)


@pytest.mark.skipif(malloc._libc is None or not hasattr(malloc._libc, "mallinfo2"), reason="glibc 2.33+ only")
def test_the_mmap_threshold_is_fixed_for_start_up_then_raised_for_serving():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout.split()
    start, serve_small, serve_big, trimmed = map(int, out)
    assert start == 1  # start-up: mapped, so returned to the system when freed
    assert serve_small == 0  # serving: reused from the heap
    assert serve_big == 1  # above the serving threshold: still mapped
    assert trimmed == 0  # and a freed 900 KB block stays in the heap for the next one
