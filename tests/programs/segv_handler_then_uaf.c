/* The program has its own SIGSEGV handler (which would swallow the fault and exit 0), yet
 * a use after free is still reported by Oscar and kills the program with SIGSEGV. */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

static void swallow(int sig) {
    (void)sig;
    static const char msg[] = "PROGRAM HANDLER RAN\n";
    write(1, msg, sizeof msg - 1);
    _exit(0);
}

int main(void) {
    test_init();
    signal(SIGSEGV, swallow);
    int *p = malloc(64);
    print_ptr("ptr", p);
    printf("size 64\n");
    free(p);
    print_ptr("access", p + 3);
    int v = p[3];
    printf("NOT REACHED %d\n", v);
    return 0;
}
