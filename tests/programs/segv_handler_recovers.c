/* A program with its own SIGSEGV handler, installed after start-up (after Oscar's), that
 * recovers from deliberate null-pointer reads with siglongjmp, with sigaction and with
 * signal(). Oscar must pass these faults on untouched: the output is glibc's. */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include "common.h"

static sigjmp_buf recover;
static volatile sig_atomic_t seen_code;

static void on_segv_info(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    seen_code = si->si_code;
    siglongjmp(recover, 1);
}

static void on_segv_plain(int sig) {
    (void)sig;
    siglongjmp(recover, 2);
}

int main(void) {
    test_init();
    char *keep = malloc(100); /* Oscar is initialised and its handler installed by now */
    strcpy(keep, "heap still fine");
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv_info;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old) != 0)
        return 2;
    printf("previous handler was default: %d\n", old.sa_handler == SIG_DFL);
    for (int i = 0; i < 3; i++) {
        if (sigsetjmp(recover, 1) == 0) {
            volatile int *null = NULL;
            printf("read %d\n", *null);
        } else {
            printf("recovered %d (si_code %s)\n", i, seen_code == SEGV_MAPERR ? "MAPERR" : "other");
        }
    }
    struct sigaction now;
    sigaction(SIGSEGV, NULL, &now);
    printf("sigaction reports our handler: %d\n", now.sa_sigaction == on_segv_info);
    if (signal(SIGSEGV, on_segv_plain) == SIG_ERR)
        return 2;
    if (sigsetjmp(recover, 1) == 0) {
        volatile int *bad = (volatile int *)16;
        printf("read %d\n", *bad);
    } else {
        printf("recovered through signal()\n");
    }
    signal(SIGSEGV, SIG_DFL);
    printf("%s\n", keep);
    free(keep);
    return 0;
}
