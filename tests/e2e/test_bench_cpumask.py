"""`bench/... --cpu avx2` (bench/cpumask.py) runs the server as on an AVX2-only CPU by masking
CPUID. A figure printed as AVX2 must have been measured on AVX2 kernels, and the mask must not
change how a program fails: these check both where the machine can mask (cpuid_fault)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
import cpumask  # noqa: E402

CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
pytestmark = pytest.mark.skipif(
    " cpuid_fault" not in CPUINFO or " avx2" not in CPUINFO or not shutil.which("gcc"),
    reason="needs an x86 CPU with AVX2 and CPUID faulting, and gcc",
)


def masked(argv: list[str]) -> subprocess.CompletedProcess:
    env = os.environ | cpumask.avx2_env()
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_a_masked_process_sees_avx2_and_nothing_wider():
    out = masked(
        [
            sys.executable,
            "-c",
            "import numpy; f = numpy._core._multiarray_umath.__cpu_features__; "
            "print(*(f.get(k, False) for k in ('AVX2', 'FMA3', 'AVX512F', 'AVX512VL', 'AVX512_SPR', 'AVX512_ICL')))",
        ]
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False", "False", "False", "False"]


def test_a_thread_started_later_is_masked_too():
    """Threads inherit the mask: a CPUID asked on a new thread is answered masked, not fatal."""
    code = (
        "import threading, ctypes, mmap\n"
        "seen = []\n"
        "def ask():\n"
        "    code = bytes([0x53, 0xb8, 7, 0, 0, 0, 0x31, 0xc9, 0x0f, 0xa2, 0x89, 0xd8, 0x5b, 0xc3])\n"  # ebx of cpuid(7,0)
        "    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "    m.write(code)\n"
        "    f = ctypes.CFUNCTYPE(ctypes.c_uint32)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
        "    seen.append(f())\n"
        "t = threading.Thread(target=ask); t.start(); t.join()\n"
        "print(seen[0] >> 16 & 1, seen[0] >> 5 & 1)\n"  # AVX512F, AVX2
    )
    out = masked([sys.executable, "-c", code])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1"]


def test_a_real_crash_still_reaches_the_programs_own_handler():
    """faulthandler installs its handler first; numpy's import then asks CPUID (answered by the
    mask), and the crash after that is still the program's to report."""
    code = "import faulthandler; faulthandler.enable(); import numpy, ctypes; ctypes.string_at(0)"
    out = masked([sys.executable, "-c", code])
    assert out.returncode == -11
    assert "Fatal Python error: Segmentation fault" in out.stderr


def test_signal_semantics_are_kept(tmp_path):
    """SA_RESETHAND runs the handler once, then a fault is fatal; an ignored SIGSEGV sent by
    kill() is ignored; CPUID keeps being answered in between."""
    src = tmp_path / "probe.c"
    src.write_text(
        textwrap.dedent(
            r"""
            #include <cpuid.h>
            #include <signal.h>
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            static volatile int handled;
            static void once(int sig) { (void)sig; handled++; write(1, "handled\n", 8); }
            static unsigned avx512f(void) { unsigned a, b, c, d; __cpuid_count(7, 0, a, b, c, d); return b >> 16 & 1; }
            int main(void) {
              signal(SIGSEGV, SIG_IGN);
              kill(getpid(), SIGSEGV);
              printf("after ignored kill: avx512f %u\n", avx512f());
              struct sigaction sa;
              memset(&sa, 0, sizeof sa);
              sa.sa_handler = once;
              sa.sa_flags = SA_RESETHAND;
              sigaction(SIGSEGV, &sa, NULL);
              printf("with handler: avx512f %u\n", avx512f());
              fflush(stdout);
              *(volatile int *)0 = 1;
              printf("survived %d\n", handled);
              return 0;
            }
            """
        )
    )
    exe = tmp_path / "probe"
    subprocess.run(["gcc", "-O1", "-o", str(exe), str(src)], check=True)
    out = masked([str(exe)])
    assert out.stdout.splitlines() == ["after ignored kill: avx512f 0", "with handler: avx512f 0", "handled"], out
    assert out.returncode == -11
