/* A thread runs a signal handler of the program's on a small alternate signal stack (1 KiB
 * beside the kernel's signal frame, AT_MINSIGSTKSZ, whatever this CPU's is: as a 4 KiB stack
 * is where that frame is 3 KiB) for a while, as a program's crash or watchdog handler may,
 * while the main thread frees enough to start marks (protect mode) or forks (a world stop in
 * every mode). A stop's park signal must not land on that stack: its frame does not fit
 * beside the first, and the kernel kills the program. Under glibc the program prints "done"
 * and exits 0. usage: altstack_handler_during_marks [fork] */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

static atomic_int in_handler, leave;

static void handler(int sig) {
    (void)sig;
    atomic_store(&in_handler, 1);
    while (!atomic_load(&leave))
        __asm__ volatile("pause");
}

static void *runner(void *arg) {
    (void)arg;
    size_t frame = getauxval(AT_MINSIGSTKSZ);
    if (frame == 0)
        frame = 2048;
    size_t size = (frame + 1024 + 15) & ~(size_t)15;
    unsigned char *m = mmap(NULL, size + 8192, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(m, 4096, PROT_NONE); /* nothing below the stack may be written */
    stack_t ss = {.ss_sp = m + 4096, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        printf("FAIL sigaltstack\n");
        exit(1);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_kill(pthread_self(), SIGUSR1);
    return NULL;
}

int main(int argc, char **argv) {
    test_init();
    int forks = argc > 1 && strcmp(argv[1], "fork") == 0;
    pthread_t t;
    pthread_create(&t, NULL, runner, NULL);
    while (!atomic_load(&in_handler))
        ;
    /* ~64 MB of frees: many marks at the test's small quarantine floor */
    for (int r = 0; r < 200000; r++) {
        void *volatile p = malloc(320);
        memset(p, r, 320);
        free(p);
        if (forks && r % 20000 == 0) {
            pid_t c = fork();
            if (c == 0)
                _exit(0);
            waitpid(c, NULL, 0);
        }
    }
    atomic_store(&leave, 1);
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
}
