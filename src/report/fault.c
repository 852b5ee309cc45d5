/* fault: the SIGSEGV/SIGBUS handler. A fault on a revoked shadow is a use-after-free:
 * report it, restore the default action and return, so the faulting instruction runs again
 * and the kernel kills the program with the original signal (and a core dump, with the
 * faulting address intact). Faults that are not ours go to the program's own handler, or
 * get the default action, exactly as without Oscar.
 *
 * The program may install its own SIGSEGV/SIGBUS handler at any time (a JIT, a GC, a test
 * harness recovering with siglongjmp). We interpose sigaction() and signal() for those two
 * signals: the program's handler is recorded as "the handler after us" and ours stays
 * first, so use-after-free faults are still reported and everything else reaches the
 * program as before. For every other signal both calls go straight to libc. */
#define _GNU_SOURCE
#include "report/fault.h"
#include "base/core.h"
#include "mem/region.h"
#include "report/report.h"
#include "base/stats.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

static struct sigaction program[2]; /* what the program believes is installed */
static oscar_lock program_lock = OSCAR_LOCK_INIT;
static atomic_int installed;

static int slot_of(int sig) { return sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : -1; }

static void set_default(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    __sigaction(sig, &dfl, NULL);
}

static void forward(int sig, siginfo_t *si, void *uc) {
    struct sigaction *prog = &program[slot_of(sig)];
    struct sigaction act = *prog;
    bool custom = (act.sa_flags & SA_SIGINFO) ? act.sa_sigaction != NULL
                                             : act.sa_handler != SIG_DFL && act.sa_handler != SIG_IGN;
    if (!custom) {
        /* Default action (an ignored fault is fatal too): let it happen again without us. */
        set_default(sig);
        return;
    }
    if (act.sa_flags & SA_RESETHAND) {
        memset(prog, 0, sizeof *prog);
        prog->sa_handler = SIG_DFL;
    }
    /* Run it with the mask it asked for, as the kernel would have. */
    sigset_t old, mask = act.sa_mask;
    if (!(act.sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    pthread_sigmask(SIG_BLOCK, &mask, &old);
    if (act.sa_flags & SA_SIGINFO)
        act.sa_sigaction(sig, si, uc);
    else
        act.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *ucv) {
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (region_contains(addr) && si->si_code > 0) {
        ucontext_t *uc = ucv;
        bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
        if (report_fault(addr, write, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
                         (uintptr_t)uc->uc_mcontext.gregs[REG_RBP],
                         (uintptr_t)uc->uc_mcontext.gregs[REG_RSP])) {
            set_default(sig);
            return;
        }
    }
    forward(sig, si, ucv);
}

void fault_init(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    __sigaction(SIGSEGV, &sa, &program[0]);
    __sigaction(SIGBUS, &sa, &program[1]);
    atomic_store(&installed, 1);
}

static void on_stats_signal(int sig) {
    (void)sig;
    int saved = errno;
    stats_emit();
    errno = saved;
}

void fault_init_stats_signal(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stats_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    __sigaction(sig, &sa, NULL);
}

OSCAR_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    int i = slot_of(sig);
    if (i < 0 || !atomic_load(&installed))
        return __sigaction(sig, act, old);
    oscar_lock_acquire(&program_lock);
    if (old)
        *old = program[i];
    if (act)
        program[i] = *act;
    oscar_lock_release(&program_lock);
    return 0;
}

/* glibc's signal(): BSD semantics (handler stays, system calls restart). */
OSCAR_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
    struct sigaction act, old;
    if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
    if (sigaction(sig, &act, &old) < 0)
        return SIG_ERR;
    return old.sa_handler;
}
