/* A use after free inside a signal handler that runs on an alternate signal stack: the
 * SIGSEGV it causes is handled there too and Oscar still reports it. */
#include <signal.h>
#include <string.h>
#include "common.h"

static char *victim;
static char altstack[64 * 1024];

__attribute__((noinline)) static void on_usr1(int sig) {
    (void)sig;
    print_ptr("access", victim + 10);
    volatile char c = victim[10];
    printf("NOT REACHED %d\n", c);
}

int main(void) {
    test_init();
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0)
        return 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    victim = malloc(30);
    print_ptr("ptr", victim);
    printf("size 30\n");
    free(victim);
    raise(SIGUSR1);
    printf("NOT REACHED after raise\n");
    return 0;
}
