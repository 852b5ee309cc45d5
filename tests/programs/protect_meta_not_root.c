/* Protect mode: Oscar's own bookkeeping is no root. A thread's alternate signal stack is a
 * malloc'd block A, and the block B that starts where A ends is freed. The only word equal to
 * B's address is then the end of that altstack, which the kernel keeps (out of the program's
 * sight) and Oscar's thread registry records each time it parks the thread. B must be handed
 * out again. (CI saw a freed object kept for ever the same way: the end of an altstack mapped
 * just below the heap, recorded in the registry, which was scanned as an anonymous mapping.)
 * Prints "adjacent 1" when A and B touch (they always do under Oscar; glibc puts a header
 * between them) and "reused N": how often the churn got B back. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define SZ 16384

static int pipe_go[2], pipe_ready[2];
static void *alt; /* A: a pointer to A's start only */

static void *thread_main(void *arg) {
    (void)arg;
    stack_t ss = {.ss_sp = alt, .ss_size = SZ, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    char c = 1;
    write(pipe_ready[1], &c, 1);
    read(pipe_go[0], &c, 1);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    return NULL;
}

/* Two blocks of SZ that touch: A is kept in `alt`, B is returned masked. */
__attribute__((noinline)) static uintptr_t make_pair(int *adjacent) {
    char *a = NULL, *b = NULL;
    for (int i = 0; i < 64; i++) {
        a = malloc(SZ);
        b = malloc(SZ);
        if (b == a + SZ)
            break;
        /* (not touching: both are left allocated, so the next pair is fresh) */
    }
    *adjacent = b == a + SZ;
    alt = a;
    return (uintptr_t)b ^ MASK;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    pipe(pipe_go);
    pipe(pipe_ready);
    int adjacent;
    uintptr_t masked = make_pair(&adjacent);
    pthread_t t;
    char c = 0;
    pthread_create(&t, NULL, thread_main, NULL);
    read(pipe_ready[0], &c, 1);
    free_object(masked);
    clear_stack();
    int reused = churn_of(masked, ROUNDS, SZ, 8);
    write(pipe_go[1], &c, 1);
    pthread_join(t, NULL);
    printf("adjacent %d\n", adjacent);
    printf("reused %d\n", reused);
    return 0;
}
