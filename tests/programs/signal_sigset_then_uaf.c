/* Issue 18, defect 10: a SIGSEGV handler installed by sigset, sysv_signal, bsd_signal,
 * __sysv_signal, ssignal or sigignore (argv[1] names which) must not hide a use after free:
 * Oscar's report comes first and the program dies by SIGSEGV. The handler would exit 0. */
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include "common.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

extern sighandler_t __sysv_signal(int sig, sighandler_t handler);
extern sighandler_t bsd_signal(int sig, sighandler_t handler);
extern sighandler_t ssignal(int sig, sighandler_t handler);

static void swallow(int sig) {
    (void)sig;
    static const char msg[] = "PROGRAM HANDLER RAN\n";
    write(1, msg, sizeof msg - 1);
    _exit(0);
}

int main(int argc, char **argv) {
    test_init();
    const char *how = argc > 1 ? argv[1] : "sigset";
    if (!strcmp(how, "sigset"))
        sigset(SIGSEGV, swallow);
    else if (!strcmp(how, "sysv_signal"))
        sysv_signal(SIGSEGV, swallow);
    else if (!strcmp(how, "__sysv_signal"))
        __sysv_signal(SIGSEGV, swallow);
    else if (!strcmp(how, "bsd_signal"))
        bsd_signal(SIGSEGV, swallow);
    else if (!strcmp(how, "ssignal"))
        ssignal(SIGSEGV, swallow);
    else if (!strcmp(how, "sigignore"))
        sigignore(SIGSEGV);
    int *p = malloc(64);
    print_ptr("ptr", p);
    free(p);
    print_ptr("access", p + 3);
    int v = p[3];
    printf("NOT REACHED %d\n", v);
    return 0;
}
