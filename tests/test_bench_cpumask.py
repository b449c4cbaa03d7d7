"""`bench/... --cpu avx2` (bench/cpumask.py) runs the server as on an AVX2-only CPU by masking
CPUID. A figure printed as AVX2 must have been measured on AVX2 kernels, and the mask must not
change how the program fails: these check both where the machine can mask (cpuid_fault)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import cpumask  # noqa: E402

CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
pytestmark = pytest.mark.skipif(
    " cpuid_fault" not in CPUINFO or " avx2" not in CPUINFO, reason="needs an x86 CPU with AVX2 and CPUID faulting"
)


def masked(code: str) -> subprocess.CompletedProcess:
    env = os.environ | cpumask.avx2_env()
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_a_masked_process_sees_avx2_and_nothing_wider():
    out = masked(
        "import numpy; f = numpy._core._multiarray_umath.__cpu_features__; "
        "print(*(f.get(k, False) for k in ('AVX2', 'FMA3', 'AVX512F', 'AVX512VL', 'AVX512_SPR', 'AVX512_ICL')))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False", "False", "False", "False"]


def test_onnx_runtime_runs_and_threads_are_masked_too():
    """Threads inherit the mask: a CPUID asked on a new thread is answered masked, not fatal."""
    code = (
        "import threading, numpy, onnxruntime\n"
        "seen = []\n"
        "def ask():\n"
        "    import ctypes, mmap\n"
        "    code = bytes([0x53, 0xb8, 7, 0, 0, 0, 0x31, 0xc9, 0x0f, 0xa2, 0x89, 0xd8, 0x5b, 0xc3])\n"  # ebx of cpuid(7,0)
        "    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "    m.write(code)\n"
        "    f = ctypes.CFUNCTYPE(ctypes.c_uint32)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
        "    seen.append(f())\n"
        "t = threading.Thread(target=ask); t.start(); t.join()\n"
        "print(seen[0] >> 16 & 1, seen[0] >> 5 & 1)\n"  # AVX512F, AVX2
    )
    out = masked(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1"]


def test_a_real_crash_still_reaches_the_programs_own_handler():
    out = masked("import faulthandler, ctypes; faulthandler.enable(); ctypes.string_at(0)")
    assert out.returncode == -11
    assert "Fatal Python error: Segmentation fault" in out.stderr
