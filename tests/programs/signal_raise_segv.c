/* Issue 18, defect 9: raise(SIGSEGV) with the default action kills the program by SIGSEGV
 * (Oscar's fault handler must not swallow a signal that was sent rather than a fault). With
 * an argument "ignore", SIGSEGV is ignored first: the raise is then ignored and the program
 * goes on, as under glibc. */
#include <signal.h>
#include "common.h"

int main(int argc, char **argv) {
    test_init();
    void *p = malloc(32); /* (Oscar is initialised) */
    free(p);
    if (argc > 1) {
        signal(SIGSEGV, SIG_IGN);
        raise(SIGSEGV);
        printf("ignored raise survived\n");
        return 0;
    }
    raise(SIGSEGV);
    printf("NOT REACHED after raise(SIGSEGV)\n");
    return 0;
}
