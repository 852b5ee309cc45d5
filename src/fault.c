/* fault: the SIGSEGV/SIGBUS handler. A fault on a revoked shadow is a use-after-free:
 * report it, restore the default action and return, so the faulting instruction runs again
 * and the kernel kills the program with the original signal (and a core dump, with the
 * faulting address intact). Faults that are not ours go to the handler that was there
 * before us, or get the default action, exactly as without Oscar. */
#define _GNU_SOURCE
#include "fault.h"
#include "region.h"
#include "report.h"

#include <signal.h>
#include <string.h>
#include <ucontext.h>

static struct sigaction previous[2]; /* SIGSEGV, SIGBUS */

static void forward(int sig, siginfo_t *si, void *uc) {
    struct sigaction *prev = &previous[sig == SIGBUS];
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction) {
            prev->sa_sigaction(sig, si, uc);
            return;
        }
    } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
        return;
    }
    /* Default action: let the fault happen again without us. */
    signal(sig, SIG_DFL);
}

static void on_fault(int sig, siginfo_t *si, void *ucv) {
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (region_contains(addr) && si->si_code > 0) {
        ucontext_t *uc = ucv;
        bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
        if (report_fault(addr, write, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
                         (uintptr_t)uc->uc_mcontext.gregs[REG_RBP],
                         (uintptr_t)uc->uc_mcontext.gregs[REG_RSP])) {
            signal(sig, SIG_DFL);
            return;
        }
    }
    forward(sig, si, ucv);
}

void fault_init(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous[0]);
    sigaction(SIGBUS, &sa, &previous[1]);
}
