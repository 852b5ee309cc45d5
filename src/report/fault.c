/* fault: the SIGSEGV/SIGBUS handler. A fault on a revoked shadow is a use-after-free:
 * report it, restore the default action and return, so the faulting instruction runs again
 * and the kernel kills the program with the original signal (and a core dump, with the
 * faulting address intact). Faults that are not ours go to the program's own handler, or
 * get the default action, exactly as without Oscar.
 *
 * The program may install its own SIGSEGV/SIGBUS handler at any time (a JIT, a GC, a test
 * harness recovering with siglongjmp), by any of libc's calls (sigaction, signal, bsd_signal,
 * sysv_signal, sigset, sigignore: export/export_signal.c routes them all here for these two
 * signals): the program's handler is recorded as "the handler after us" and ours stays
 * first, so use-after-free faults are still reported and everything else reaches the
 * program as before.
 *
 * Order of the handler's work:
 *   1. the recover hook (scan/roots.c's guarded reads): a fault while Oscar itself reads a
 *      root jumps back to the reader, nothing else happens;
 *   2. a fault in the shadow region: the report. The report needs a few KiB of stack; a
 *      program's alternate signal stack may be as small as 4 KiB, most of it taken by the
 *      kernel's signal frame, so on a nearly full alternate stack the report runs on a stack of
 *      Oscar's own (per thread, mapped on first need);
 *   3. anything else goes to the program's handler, or gets the default action. A SIGSEGV or
 *      SIGBUS sent by a process or raised (raise, kill, tgkill: si_code <= 0) does not happen
 *      again when we return, so with the default action it is sent again, to kill as it
 *      would have without us; ignored, it stays ignored.
 *
 * Locks: the "signal-handlers" lock (base/lock.h) guards program[] against concurrent
 * sigaction calls; the handler itself takes no lock. */
#define _GNU_SOURCE
#include "report/fault.h"
#include "base/core.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "mem/region.h"
#include "os/os.h"
#include "report/report.h"
#include "report/stack.h"
#include "base/stats.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <ucontext.h>

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The fault handler's state (per thread: own_stack_top, below, TLS). */
static struct {
    /* What the program believes is installed for SIGSEGV and SIGBUS: written by
     * fault_install, then by the program's sigaction calls under program_lock; the handler
     * reads it without a lock. */
    struct sigaction program[2];
    oscar_lock program_lock;
    atomic_int installed; /* set once by fault_install, after program[] holds the old ones */
    /* Called first in the handler (scan/roots.c's guarded reads): set once, by the first
     * guarded read (atomic flag on its side); read by the handler. */
    void (*recover_hook)(void *uc);
    /* Memory outside the region whose faults are reported too (heap/sample.c's pages, protect
     * mode's heap): set at init, by sample_init, then modes/protect_reports.c (which chains to
     * the first). */
    fault_claim_fn claim_hook;
    /* fault_hold's signals (bit n - 1 for signal n), 0 for none: set at world_init, before
     * the stops that send them. */
    uint64_t held;
} fault_state = {.program_lock = OSCAR_LOCK_INIT(SIGNAL_HANDLERS)};

static int slot_of(int sig) { return sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : -1; }

void fault_set_recover_hook(void (*hook)(void *uc)) { fault_state.recover_hook = hook; }

fault_claim_fn fault_set_claim_hook(fault_claim_fn claims) {
    fault_claim_fn old = fault_state.claim_hook;
    fault_state.claim_hook = claims;
    return old;
}

static void set_default(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    __sigaction(sig, &dfl, NULL);
}

void fault_die(int sig) {
    set_default(sig);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    os_sigprocmask(SIG_UNBLOCK, &one, NULL);
    os_tgkill(os_getpid(), os_gettid(), sig);
    _exit(128 + sig); /* (not reached) */
}

void fault_call_handler(const struct sigaction *act, int sig, siginfo_t *si, void *uc) {
    /* Run it with the mask the kernel would have given it: the interrupted code's, its sa_mask
     * and its own signal, not that of Oscar's handler which calls it (the park handler blocks
     * every signal: signal_handler_mask); the held signal stays blocked where another frame
     * would not fit. (Of the frame's uc_sigmask only the kernel's 64 bits are its own.) */
    sigset_t old, mask = act->sa_mask;
    uint64_t interrupted;
    memcpy(&interrupted, &((ucontext_t *)uc)->uc_sigmask, sizeof interrupted);
    for (int n = 1; n <= 64; n++)
        if (interrupted >> (n - 1) & 1)
            sigaddset(&mask, n);
    if (!(act->sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    if (fault_state.held && !os_room_for_a_signal()) /* (glibc's sigaddset refuses SIGSETXID) */
        mask.__val[0] |= fault_state.held;
    os_sigprocmask(SIG_SETMASK, &mask, &old);
    if (act->sa_flags & SA_SIGINFO)
        act->sa_sigaction(sig, si, uc);
    else
        act->sa_handler(sig);
    os_sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ---- Oscar's own stack for the report (defect: 4 KiB alternate stacks) */

#define OWN_STACK_BYTES (256UL << 10)
#define ALTSTACK_ROOM (32UL << 10) /* less left than this on the alternate stack: switch */

static __thread uintptr_t own_stack_top __attribute__((tls_model("initial-exec")));

/* fault_on_stack(arg, fn, top): calls fn(arg) with the stack pointer at top (16-aligned),
 * then comes back to the caller's stack. */
void fault_on_stack(void *arg, void (*fn)(void *), uintptr_t top) OSCAR_HIDDEN;
__asm__(".text\n"
        ".globl fault_on_stack\n"
        ".hidden fault_on_stack\n"
        ".type fault_on_stack, @function\n"
        "fault_on_stack:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    mov %rdx, %rsp\n"
        "    call *%rsi\n"
        "    mov %rbp, %rsp\n"
        "    pop %rbp\n"
        "    ret\n"
        ".size fault_on_stack, .-fault_on_stack\n");

struct fault_job {
    uintptr_t addr, pc, fp, sp;
    int sig;
    bool write, reported;
};

static void run_report(void *arg) {
    struct fault_job *j = arg;
    j->reported = report_fault(j->addr, j->write, j->pc, j->fp, j->sp);
}

static void run_crash_report(void *arg) {
    struct fault_job *j = arg;
    report_crash(j->sig, j->addr, j->pc, j->fp, j->sp);
}

/* Is this handler running on an alternate signal stack with little room left? */
static bool altstack_nearly_full(void) {
    stack_t ss;
    if (os_sigaltstack_get(&ss) != 0 || !(ss.ss_flags & SS_ONSTACK))
        return false;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return sp < (uintptr_t)ss.ss_sp + ALTSTACK_ROOM;
}

/* fn(j), on Oscar's own stack where the alternate stack has little room left. */
__attribute__((noinline)) static void on_good_stack(struct fault_job *j, void (*fn)(void *)) {
    if (altstack_nearly_full()) {
        if (!own_stack_top) {
            int err;
            char *s = os_alloc_meta(OWN_STACK_BYTES, &err);
            if (s)
                own_stack_top = (uintptr_t)s + OWN_STACK_BYTES;
        }
        if (own_stack_top) {
            fault_on_stack(j, fn, own_stack_top & ~(uintptr_t)15);
            return;
        }
    }
    fn(j);
}

/* A fault in Oscar's own code that the program dies of: say whose fault it is. Not inlined
 * into the handler, whose frame must stay small. */
__attribute__((noinline)) static void crash(int sig, siginfo_t *si, const ucontext_t *u) {
    struct fault_job j = {
        .addr = (uintptr_t)si->si_addr,
        .pc = (uintptr_t)u->uc_mcontext.gregs[REG_RIP],
        .fp = (uintptr_t)u->uc_mcontext.gregs[REG_RBP],
        .sp = (uintptr_t)u->uc_mcontext.gregs[REG_RSP],
        .sig = sig,
    };
    on_good_stack(&j, run_crash_report);
}

/* The program's handler, with its action copied first (SA_RESETHAND resets the stored one).
 * Not inlined: the copy stays out of on_fault's frame when there is no handler. */
__attribute__((noinline)) static void call_program_handler(struct sigaction *prog, int sig,
                                                           siginfo_t *si, void *uc) {
    struct sigaction act = *prog;
    if (act.sa_flags & SA_RESETHAND) {
        memset(prog, 0, sizeof *prog);
        prog->sa_handler = SIG_DFL;
    }
    fault_call_handler(&act, sig, si, uc);
}

static void forward(int sig, siginfo_t *si, void *uc) {
    struct sigaction *prog = &fault_state.program[slot_of(sig)];
    if (os_is_handler(prog)) {
        call_program_handler(prog, sig, si, uc);
        return;
    }
    bool sent = si->si_code <= 0; /* by kill, tgkill, raise, sigqueue: not a fault */
    if (sent && !(prog->sa_flags & SA_SIGINFO) && prog->sa_handler == SIG_IGN)
        return; /* ignored, as the kernel would have */
    const ucontext_t *u = uc;
    if (!sent && stack_is_ours((uintptr_t)u->uc_mcontext.gregs[REG_RIP]))
        crash(sig, si, u); /* (the program dies of it) */
    /* Default action (an ignored fault is fatal too): let it happen again without us. */
    set_default(sig);
    if (sent)
        os_tgkill(os_getpid(), os_gettid(), sig); /* (SA_NODEFER: delivered at once) */
}

/* Kept small: on a 4 KiB alternate stack the kernel's frame leaves under 1 KiB for it. */
static void on_fault(int sig, siginfo_t *si, void *ucv) {
    if (fault_state.recover_hook)
        fault_state.recover_hook(ucv); /* (jumps back to a guarded read in progress; else returns) */
    uintptr_t addr = (uintptr_t)si->si_addr;
    if ((region_contains(addr) || (fault_state.claim_hook && fault_state.claim_hook(addr))) &&
        si->si_code > 0) {
        ucontext_t *uc = ucv;
        struct fault_job j = {
            .addr = addr,
            .write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0,
            .pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP],
            .fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP],
            .sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP],
        };
        on_good_stack(&j, run_report);
        if (j.reported) {
            set_default(sig);
            return;
        }
    }
    forward(sig, si, ucv);
}

static void install(struct sigaction *old_segv, struct sigaction *old_bus) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sa.sa_mask.__val[0] |= fault_state.held; /* (a park's frame below ours could overflow an
                                                * alternate stack) */
    __sigaction(SIGSEGV, &sa, old_segv);
    __sigaction(SIGBUS, &sa, old_bus);
}

void fault_init(void) {
    install(&fault_state.program[0], &fault_state.program[1]);
    atomic_store(&fault_state.installed, 1);
}

void fault_hold(uint64_t signals) {
    fault_state.held = signals;
    if (atomic_load(&fault_state.installed))
        install(NULL, NULL);
}

int fault_program_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    int i = slot_of(sig);
    if (i < 0 || !atomic_load(&fault_state.installed))
        return 0;
    oscar_lock_acquire(&fault_state.program_lock);
    if (old)
        *old = fault_state.program[i];
    if (act)
        fault_state.program[i] = *act;
    oscar_lock_release(&fault_state.program_lock);
    return 1;
}

/* ---- OSCAR_STATS_SIGNAL */

static void on_stats_signal(int sig) {
    (void)sig;
    int saved = errno;
    stats_emit();
    errno = saved;
}

/* Why sig cannot be the statistics signal, or NULL. A fault signal's handler returns to the
 * faulting instruction, which faults again: the statistics forever. */
static const char *stats_signal_refused(int sig) {
    switch (sig) {
    case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE: case SIGTRAP: case SIGSYS:
        return "a fault signal: after its handler the faulting instruction runs again";
    case SIGKILL: case SIGSTOP:
        return "cannot be caught";
    case SIGPWR:
        return "oscar's own signal for stopping threads";
    default:
        return sig >= 32 && sig <= 33 ? "reserved by glibc for threads" : NULL;
    }
}

void fault_init_stats_signal(int sig) {
    const char *why = stats_signal_refused(sig);
    if (why) {
        char buf[256];
        struct fmt f = FMT_INIT(buf);
        msg_start(&f, MSG_BAD_SETTING);
        fmt_str(&f, "OSCAR_STATS_SIGNAL=");
        fmt_i64(&f, sig);
        fmt_str(&f, " is invalid (");
        fmt_str(&f, why);
        fmt_str(&f, "); using default 0\n");
        fmt_flush(&f, 2);
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stats_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    __sigaction(sig, &sa, NULL);
}
