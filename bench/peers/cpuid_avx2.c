/* cpuid_avx2.c - run a program as if this x86-64 CPU had no AVX-512
 * (issue 30: "measure against ONNX Runtime on an AVX2 CPU" on a machine
 * that has AVX-512).
 *
 * ONNX Runtime (MLAS), oneDNN, OpenBLAS and our own dispatch pick their
 * kernels from the CPUID instruction.  Only oneDNN and tracegraph can be
 * capped by an environment variable (ONEDNN_MAX_CPU_ISA, TG_CPU); ORT
 * cannot.  This preload library turns on Linux's CPUID faulting
 * (arch_prctl(ARCH_SET_CPUID, 0), available on Intel CPUs and under KVM):
 * every CPUID then traps, and the SIGSEGV handler here executes it with
 * faulting briefly off and clears the feature bits of AVX-512, AMX and
 * AVX-VNNI before the program sees them.  What is left is what a Zen 3 or a
 * Haswell..Alder Lake core reports: AVX2 + FMA.  The setting is per thread
 * and inherited by the threads and children that the program creates
 * (reset at execve, where the preload runs again).
 *
 *   bench/peers/as_avx2.sh CMD ARGS...   (builds this, sets LD_PRELOAD)
 *
 * It changes which code runs, not the core it runs on: the timings are
 * those of the AVX2 code paths on this core, an honest comparison between
 * two programs' AVX2 paths, not a measurement of another CPU.
 *
 * Programs install SIGSEGV handlers of their own (Node.js's V8 does, for
 * WebAssembly bounds checks).  sigaction() is wrapped: a SIGSEGV handler a
 * program installs is recorded and called for every fault that is not a
 * CPUID, while this one stays installed.  TG_CPUID_MASK_VERBOSE=1 prints
 * each masked leaf once to stderr; TG_CPUID_MASK_CHECK=1 checks the mask
 * and exits (0: AVX-512 hidden, 3: not).
 *
 * Build: cc -O2 -shared -fPIC -o cpuid_avx2.so cpuid_avx2.c -ldl */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;
static struct sigaction app_segv; /* the program's own SIGSEGV action */
static int app_segv_set;
static int installed; /* on_segv is SIGSEGV's handler */
static int verbose;
static volatile unsigned seen_leaves; /* bit per leaf 0..31 reported */

static long set_faulting(int on) {
    return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1);
}

/* Clear what an AVX2-only core does not have. */
static void mask(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31 */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) |
                  (1u << 28) | (1u << 30) | (1u << 31));
        /* ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14 */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        /* EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, FP16 23,
         * AMX-TILE 24, AMX-INT8 25 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) |
                  (1u << 24) | (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        /* EAX: AVX-VNNI 4, AVX512_BF16 5, AMX-FP16 21 */
        r[0] &= ~((1u << 4) | (1u << 5) | (1u << 21));
    } else if (leaf == 0xd && sub == 0) {
        /* the XSAVE components supported: no opmask/ZMM (5-7), no tiles (17-18) */
        r[0] &= ~((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18));
    } else if (leaf == 0x1d || leaf == 0x1e) {
        r[0] = r[1] = r[2] = r[3] = 0; /* AMX tile and TMUL information */
    }
}

static void on_segv(int sig, siginfo_t *si, void *ctx_) {
    ucontext_t *ctx = ctx_;
    const unsigned char *ip = (const unsigned char *)ctx->uc_mcontext.gregs[REG_RIP];
    if (si->si_code == SI_KERNEL && ip && ip[0] == 0x0f && ip[1] == 0xa2) {
        uint32_t leaf = (uint32_t)ctx->uc_mcontext.gregs[REG_RAX];
        uint32_t sub = (uint32_t)ctx->uc_mcontext.gregs[REG_RCX];
        uint32_t r[4];
        set_faulting(0);
        __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
        set_faulting(1);
        uint32_t before[4] = {r[0], r[1], r[2], r[3]};
        mask(leaf, sub, r);
        if (verbose && leaf < 32 && memcmp(before, r, sizeof r) != 0 &&
            !(__atomic_fetch_or(&seen_leaves, 1u << leaf, __ATOMIC_RELAXED) & (1u << leaf))) {
            char buf[160];
            int n = snprintf(buf, sizeof buf,
                             "cpuid_avx2: leaf %#x.%u: %08x %08x %08x %08x -> %08x %08x %08x %08x\n",
                             leaf, sub, before[0], before[1], before[2], before[3], r[0], r[1],
                             r[2], r[3]);
            if (n > 0) (void)!write(2, buf, (size_t)n);
        }
        /* the upper halves of RAX..RDX are zeroed, as CPUID does */
        ctx->uc_mcontext.gregs[REG_RAX] = r[0];
        ctx->uc_mcontext.gregs[REG_RBX] = r[1];
        ctx->uc_mcontext.gregs[REG_RCX] = r[2];
        ctx->uc_mcontext.gregs[REG_RDX] = r[3];
        ctx->uc_mcontext.gregs[REG_RIP] += 2;
        return;
    }
    /* not ours: the program's handler, else the default action */
    if (app_segv_set && (app_segv.sa_flags & SA_SIGINFO) && app_segv.sa_sigaction) {
        app_segv.sa_sigaction(sig, si, ctx_);
        return;
    }
    if (app_segv_set && app_segv.sa_handler != SIG_DFL && app_segv.sa_handler != SIG_IGN) {
        app_segv.sa_handler(sig);
        return;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    real_sigaction(SIGSEGV, &dfl, NULL);
    /* a faulting instruction runs again and kills, as without us; a signal
     * sent by kill() is sent again */
    if (si->si_code <= 0) raise(sig);
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    if (!real_sigaction) real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    if (sig != SIGSEGV || !installed) return real_sigaction(sig, act, old);
    if (old) *old = app_segv;
    if (act) {
        app_segv = *act;
        app_segv_set = 1;
    }
    return 0;
}

__attribute__((constructor)) static void cpuid_avx2_init(void) {
    if (!real_sigaction) real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    const char *v = getenv("TG_CPUID_MASK_VERBOSE");
    verbose = v && *v == '1';
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    struct sigaction prev;
    if (real_sigaction(SIGSEGV, &sa, &prev) != 0) {
        fprintf(stderr, "cpuid_avx2: cannot install the SIGSEGV handler\n");
        return;
    }
    app_segv = prev;
    app_segv_set = 1;
    installed = 1;
    if (set_faulting(1) != 0) {
        /* no CPUID faulting here: say so loudly, the run would not be masked */
        fprintf(stderr, "cpuid_avx2: this kernel/CPU has no CPUID faulting "
                        "(arch_prctl ARCH_SET_CPUID); AVX-512 is NOT hidden\n");
        _exit(3);
    }
    const char *check = getenv("TG_CPUID_MASK_CHECK");
    if (check && *check == '1') { /* as_avx2.sh's probe: does the mask hold? */
        uint32_t a, b, c, d;
        __cpuid_count(7, 0, a, b, c, d); /* traps into on_segv */
        (void)a, (void)c, (void)d;
        if (b & (1u << 16)) {
            fprintf(stderr, "cpuid_avx2: CPUID still reports AVX-512F; the mask failed\n");
            _exit(3);
        }
        fprintf(stderr, "cpuid_avx2: AVX-512 hidden\n");
        _exit(0);
    }
}

/* Loaded as LD_AUDIT (as bench/peers/as_avx2.sh does), the dynamic linker
 * loads this before the program's own libraries and runs the constructor
 * above then, so that their CPU detection at load time (oneDNN's, OpenBLAS's,
 * libgcc's __builtin_cpu_supports in each library) sees the masked CPUID
 * too.  la_version is what makes the dynamic linker accept it as an
 * auditor; it audits nothing else. */
unsigned int la_version(unsigned int version) {
    return version;
}
