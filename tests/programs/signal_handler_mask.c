/* The program's handlers run with the mask the kernel gives them under glibc: the mask of the
 * interrupted code, plus the handler's sa_mask, plus its own signal. Oscar runs the program's
 * SIGPWR handler (SIGPWR is its park signal) and its SIGSEGV handler (behind Oscar's fault
 * handler) itself; the SIGPWR one ran with every signal blocked (the park handler's mask), so a
 * SIGUSR1 raised inside it waited until it returned.
 *
 * For SIGPWR (raised), SIGUSR1 (raised: the kernel calls it, a control) and SIGSEGV (a write
 * to a PROT_NONE page of the program's, which the handler makes writable), each handler with
 * sa_mask {SIGUSR2}, prints which of SIGINT, SIGUSR2, SIGALRM, SIGTERM and its own signal are
 * blocked as it runs, and whether a SIGCHLD raised inside it ran its handler at once. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common.h"

static volatile sig_atomic_t chld_ran;
static char *page;
static char seen[128];

static void on_chld(int sig) {
    (void)sig;
    chld_ran = 1;
}

static void describe(int sig) {
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    chld_ran = 0;
    raise(SIGCHLD);
    int at_once = chld_ran;
    snprintf(seen, sizeof seen, "INT %d USR2 %d ALRM %d TERM %d self %d; SIGCHLD at once %d",
             sigismember(&cur, SIGINT), sigismember(&cur, SIGUSR2), sigismember(&cur, SIGALRM),
             sigismember(&cur, SIGTERM), sigismember(&cur, sig), at_once);
}

static void on_sig(int sig) {
    describe(sig);
    if (sig == SIGSEGV)
        mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

static void install(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    check(sigaction(sig, &sa, NULL) == 0, "sigaction");
}

int main(void) {
    test_init();
    signal(SIGCHLD, on_chld);
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM); /* (blocked by the interrupted code: stays blocked) */
    sigprocmask(SIG_BLOCK, &term, NULL);
    page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(page != MAP_FAILED, "mmap");
    const int sigs[] = {SIGPWR, SIGUSR1, SIGSEGV};
    const char *names[] = {"SIGPWR", "SIGUSR1", "SIGSEGV"};
    for (int i = 0; i < 3; i++) {
        install(sigs[i]);
        seen[0] = 0;
        if (sigs[i] == SIGSEGV)
            *(volatile char *)page = 1;
        else
            raise(sigs[i]);
        printf("%s handler: %s\n", names[i], seen);
    }
    return test_finish();
}
