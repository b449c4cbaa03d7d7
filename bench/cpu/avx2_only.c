/* Runs a program as if its CPU had AVX2 but no AVX-512, AVX-VNNI or AMX: the issue-27 retain bar is
 * for an AVX2-only CPU (an AMD EPYC before Zen 4), and ONNX Runtime, numpy and PostgreSQL choose
 * their kernels from CPUID. Loaded with LD_PRELOAD by bench/cpumask.py.
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, x86 CPUs with the cpuid_fault flag,
 * KVM guests included) makes the CPUID instruction raise SIGSEGV in this process. The handler runs
 * the real CPUID with faulting briefly off, clears the feature bits below from the answer, and
 * steps over the instruction. The setting is per thread and inherited by threads and forks (a
 * PostgreSQL backend), reset by execve, where LD_PRELOAD loads this again.
 *
 * Not masked: XGETBV (it can't be trapped; code that asks CPUID first, as ONNX Runtime's MLAS,
 * numpy and glibc do, never reaches it for AVX-512), and glibc's own choice of string functions,
 * made in ld.so before any constructor runs (bench/cpumask.py sets GLIBC_TUNABLES for that).
 *
 * A program's own SIGSEGV handler (Python's faulthandler) is kept and called for every fault that
 * is not a CPUID: sigaction() and signal() for SIGSEGV are answered from a saved copy here, and
 * SA_RESETHAND, SIG_IGN and SIG_DFL keep their meaning.
 *
 * Not covered, each of which fails loudly or is absent from the processes measured here: a
 * thread that blocks SIGSEGV and then asks CPUID is killed (the kernel forces a blocked fault's
 * default action); a thread started before this library's constructor, or another library's
 * constructor that ran before it, sees the real CPU; sysv_signal(), bsd_signal() and sigset() for
 * SIGSEGV would replace the handler. With HINDSIGHT_CPUMASK_REQUIRED=1 (bench/cpumask.py sets
 * it) a process where the mask can't be set up exits at once rather than run unmasked.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <ucontext.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);

static sigaction_fn real_sigaction;
static signal_fn real_signal;
static struct sigaction program_segv; /* what the program believes its SIGSEGV action is */
static volatile sig_atomic_t active;

/* CPUID.(EAX=7,ECX=0).EBX: AVX512F, DQ, IFMA, PF, ER, CD, BW, VL */
#define L7_EBX ((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31))
/* .ECX: AVX512_VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ */
#define L7_ECX ((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14))
/* .EDX: AVX512_4VNNIW, 4FMAPS, VP2INTERSECT, AMX_BF16, AVX512_FP16, AMX_TILE, AMX_INT8 */
#define L7_EDX ((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25))
/* CPUID.(EAX=7,ECX=1).EAX: AVX_VNNI, AVX512_BF16, AMX_FP16, AVX_IFMA; .EDX: AVX_VNNI_INT8,
 * AVX_NE_CONVERT, AMX_COMPLEX, AVX_VNNI_INT16, AVX10 */
#define L71_EAX ((1u << 4) | (1u << 5) | (1u << 21) | (1u << 23))
#define L71_EDX ((1u << 4) | (1u << 5) | (1u << 8) | (1u << 10) | (1u << 19))
/* CPUID.(EAX=0xD,ECX=0).EAX, the XSAVE state the CPU supports: opmask, ZMM_Hi256, Hi16_ZMM,
 * XTILECFG, XTILEDATA */
#define LD_EAX ((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18))

static long set_cpuid(int enabled) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void masked_cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
  set_cpuid(1);
  __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
  set_cpuid(0);
  if (leaf == 7 && sub == 0) {
    r[1] &= ~L7_EBX;
    r[2] &= ~L7_ECX;
    r[3] &= ~L7_EDX;
  } else if (leaf == 7 && sub == 1) {
    r[0] &= ~L71_EAX;
    r[3] &= ~L71_EDX;
  } else if (leaf == 0xd && sub == 0) {
    r[0] &= ~LD_EAX;
  } else if (leaf == 0x1d || leaf == 0x1e || leaf == 0x24) { /* AMX tile and AVX10 leaves */
    r[0] = r[1] = r[2] = r[3] = 0;
  }
}

static void reset_to_default(void) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  real_sigaction(SIGSEGV, &dfl, NULL);
}

static void on_segv(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  greg_t *g = uc->uc_mcontext.gregs;
  const unsigned char *ip = (const unsigned char *)g[REG_RIP];
  int saved_errno = errno;
  if (info->si_code == SI_KERNEL && ip[0] == 0x0f && ip[1] == 0xa2) {
    unsigned r[4];
    masked_cpuid((unsigned)g[REG_RAX], (unsigned)g[REG_RCX], r);
    g[REG_RAX] = r[0];
    g[REG_RBX] = r[1];
    g[REG_RCX] = r[2];
    g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
    errno = saved_errno;
    return;
  }
  /* Not a CPUID: what the program asked for. */
  struct sigaction act = program_segv;
  if (act.sa_handler == SIG_IGN) { /* only a signal sent by kill() can be ignored; a fault can't */
    if (info->si_code <= 0) return;
    act.sa_handler = SIG_DFL;
  }
  if (act.sa_handler == SIG_DFL) { /* die of it, as without this library */
    active = 0;
    reset_to_default();
    if (info->si_code <= 0) raise(sig); /* a sent signal is not sent again by returning */
    return;                             /* a fault happens again, now fatal */
  }
  if (act.sa_flags & SA_RESETHAND) {
    memset(&program_segv, 0, sizeof program_segv);
    program_segv.sa_handler = SIG_DFL;
  }
  sigset_t before, during = act.sa_mask;
  sigdelset(&during, SIGSEGV);
  pthread_sigmask(SIG_BLOCK, &during, &before);
  if (act.sa_flags & SA_SIGINFO)
    act.sa_sigaction(sig, info, context);
  else
    act.sa_handler(sig);
  pthread_sigmask(SIG_SETMASK, &before, NULL);
  errno = saved_errno;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (!real_sigaction) real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
  if (sig != SIGSEGV || !active) return real_sigaction(sig, act, old);
  if (old) *old = program_segv;
  if (act) program_segv = *act;
  return 0;
}

sighandler_t signal(int sig, sighandler_t handler) {
  if (!real_signal) real_signal = (signal_fn)dlsym(RTLD_NEXT, "signal");
  if (sig != SIGSEGV || !active) return real_signal(sig, handler);
  sighandler_t old = program_segv.sa_handler; /* a union with sa_sigaction */
  memset(&program_segv, 0, sizeof program_segv);
  program_segv.sa_handler = handler;
  program_segv.sa_flags = SA_RESTART;
  return old;
}

static void give_up(const char *why) {
  if (getenv("HINDSIGHT_CPUMASK_REQUIRED")) {
    fprintf(stderr, "avx2_only: CPUID can't be masked in this process (%s); stopping rather than run unmasked\n", why);
    _exit(111);
  }
}

__attribute__((constructor)) static void mask_cpuid(void) {
  struct sigaction act;
  real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
  memset(&act, 0, sizeof act);
  act.sa_sigaction = on_segv;
  act.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&act.sa_mask);
  if (!real_sigaction || real_sigaction(SIGSEGV, &act, &program_segv) != 0) {
    give_up("no SIGSEGV handler");
    return;
  }
  if (set_cpuid(0) != 0) { /* no CPUID faulting here: leave the program as it was */
    real_sigaction(SIGSEGV, &program_segv, NULL);
    give_up("no CPUID faulting");
    return;
  }
  active = 1;
}
