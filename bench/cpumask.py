"""`--cpu avx2`: run the server and its PostgreSQL as on an AVX2-only CPU, on a machine that has
AVX-512 (the issue-27 retain bar is for AVX2-only CPUs, and the embedder's int8 products cost ~2.4x
more there). `bench/cpu/avx2_only.c`, compiled here with the machine's gcc and loaded with
LD_PRELOAD, hides AVX-512, AVX-VNNI and AMX from CPUID; GLIBC_TUNABLES does the same for glibc's
own choices. It needs CPUID faulting (the `cpuid_fault` flag in /proc/cpuinfo: Intel CPUs, KVM
guests on them); elsewhere it refuses rather than print AVX-512 figures as AVX2 ones.

The figures are the AVX2 kernels on this CPU's cores, clock and caches, which are not an EPYC's:
read them beside a real AVX2-only machine's (bench/README.md, "AVX2 retain, measured by masking CPUID").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "cpu" / "avx2_only.c"
_MASKED = "HINDSIGHT_BENCH_CPU_MASKED"  # set in a masked process's environment: what describe() reads
# glibc 2.33+ names for its x86 feature checks; names a glibc does not know are ignored
_GLIBC_HIDDEN = (
    "AVX512F,AVX512CD,AVX512BW,AVX512DQ,AVX512VL,AVX512ER,AVX512PF,AVX512_VNNI,AVX512_BF16,AVX512_FP16,"
    "AVX512_IFMA,AVX512_VBMI,AVX512_VBMI2,AVX512_BITALG,AVX512_VPOPCNTDQ,AVX_VNNI,AMX_BF16,AMX_TILE,AMX_INT8"
)
# what numpy sees, in a fresh interpreter under the mask: the check that the mask holds
_PROBE = (
    "import numpy; f = numpy._core._multiarray_umath.__cpu_features__; "
    "print(f['AVX2'], f['AVX512F'], f.get('AVX512_SPR', False))"
)


class MaskError(RuntimeError):
    pass


def _build() -> Path:
    """The shim, compiled once per source into a folder of ours that others can read but not
    write: the embedded PostgreSQL runs as its own user when the benchmark runs as root, and a
    library another user could have put in place must never be loaded."""
    if not shutil.which("gcc"):
        raise MaskError("gcc is needed to build bench/cpu/avx2_only.c")
    source = SOURCE.read_bytes()
    folder = Path(tempfile.gettempdir()) / f"hindsight-cpumask-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    lib = folder / f"avx2-only-{hashlib.sha256(source).hexdigest()[:12]}.so"
    for path in (folder, lib):
        if path.exists():
            st = path.lstat()
            if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) or stat.S_ISLNK(st.st_mode):
                raise MaskError(f"{path} is not this user's alone to write; remove it")
    folder.chmod(0o755)  # readable by the embedded PostgreSQL's own user
    if not lib.exists():
        part = folder / f".build-{os.getpid()}.so"
        subprocess.run(
            ["gcc", "-O2", "-shared", "-fPIC", "-o", str(part), str(SOURCE), "-ldl", "-lpthread"], check=True
        )
        part.chmod(0o755)
        part.replace(lib)
    return lib


def check_loaded(pids: list[int]) -> None:
    """Each process (the server, the postmaster) has the shim mapped: an LD_PRELOAD that ld.so
    could not open is skipped with a line on stderr, and the run would be AVX-512 under an AVX2
    label."""
    if os.environ.get(_MASKED) != "avx2":
        return
    for pid in pids:
        maps = Path(f"/proc/{pid}/maps").read_text()
        if "hindsight-cpumask-" not in maps:
            raise MaskError(f"process {pid} runs without the CPUID mask")


def avx2_env() -> dict[str, str]:
    """Environment that makes a process (and the processes it forks or execs) see an AVX2-only
    CPU; raises MaskError when this machine can't be made to."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" not in flags:
        raise MaskError("this CPU has no AVX2")
    if " cpuid_fault" not in flags:
        raise MaskError("this CPU (or its hypervisor) has no CPUID faulting (cpuid_fault), so CPUID can't be masked")
    lib = _build()
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    hidden = ",".join(f"-{name}" for name in _GLIBC_HIDDEN.split(","))
    env = {
        _MASKED: "avx2",
        "HINDSIGHT_CPUMASK_REQUIRED": "1",  # a process that can't be masked stops (avx2_only.c)
        "LD_PRELOAD": " ".join(filter(None, [str(lib), os.environ.get("LD_PRELOAD", "")])),
        "GLIBC_TUNABLES": ":".join(filter(None, [tunables, f"glibc.cpu.hwcaps={hidden}"])),
    }
    seen = subprocess.run(
        [sys.executable, "-c", _PROBE], env=os.environ | env, capture_output=True, text=True, check=True
    ).stdout.split()
    if seen[:3] != ["True", "False", "False"]:
        raise MaskError(f"the mask did not hold (numpy saw AVX2, AVX512F, AVX512_SPR = {seen})")
    return env


def apply(cpu: str) -> None:
    """For a benchmark that measures child processes (the server and its PostgreSQL): they start
    with the mask from os.environ; this process, the driver, is already running and stays as it
    is. `cpu` is the `--cpu` argument: "native" does nothing."""
    if cpu == "avx2":
        os.environ.update(avx2_env())


def reexec(cpu: str) -> None:
    """For a benchmark that measures its own process (bench/embedder.py): starts it again under
    the mask, once."""
    if cpu == "avx2" and os.environ.get(_MASKED) != "avx2":
        os.execve(sys.executable, [sys.executable, *sys.argv], os.environ | avx2_env())


def describe(machine: str) -> str:
    """`machine` as the benchmark prints it: marked when its AVX-512 was hidden."""
    if os.environ.get(_MASKED) != "avx2":
        return machine
    return machine.replace("(AVX-512)", "(AVX-512, run as AVX2 only: CPUID masked)")


def add_argument(parser) -> None:
    parser.add_argument(
        "--cpu",
        choices=("native", "avx2"),
        default="native",
        help="avx2: the server and PostgreSQL see an AVX2-only CPU (CPUID masked; bench/cpumask.py)",
    )
