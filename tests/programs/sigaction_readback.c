/* sigaction's old action, read back after the program installed a handler with every signal
 * in its mask: glibc gives the kernel's view, with SA_RESTORER among the flags (glibc installs
 * every action with its own restorer) and without SIGKILL and SIGSTOP in the mask (the kernel
 * drops them). Oscar, which keeps the program's action and installs its own in its place, gave
 * back the action as the program wrote it: no SA_RESTORER, SIGKILL and SIGSTOP in the mask.
 * Also for a handler replaced by SIG_IGN. Prints what it read, and OK. */
#define _GNU_SOURCE
#include "common.h"

#include <signal.h>

static void handler(int sig) { (void)sig; }

static void show(const char *what, const struct sigaction *a) {
    printf("%s: flags %#x restorer %d SIGKILL %d SIGSTOP %d SIGINT %d handler %d\n", what,
           (unsigned)a->sa_flags, a->sa_restorer != NULL, sigismember(&a->sa_mask, SIGKILL),
           sigismember(&a->sa_mask, SIGSTOP), sigismember(&a->sa_mask, SIGINT),
           a->sa_handler == handler);
}

int main(void) {
    test_init();
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    check(sigaction(SIGUSR1, &sa, NULL) == 0, "installed");
    check(sigaction(SIGUSR1, NULL, &old) == 0, "read back");
    show("read", &old);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    check(sigaction(SIGUSR1, &sa, &old) == 0, "replaced");
    show("replaced", &old);
    return test_finish();
}
