/* Protect mode: a block of 64 KiB registered as the alternate signal stack (sigaltstack) and
 * freed while still registered. The kernel keeps its base and would write the next signal's
 * frame into it, whatever the block had become: it was handed out again at once (the only
 * pointer to it is the kernel's). The base of each thread's registered altstack is now a
 * root; once the program unregisters it (SS_DISABLE), the block is handed out again.
 *   self     the freeing (and marking) thread's own altstack
 *   thread   another thread's, blocked in read() meanwhile
 * usage: protect_shape_freed_altstack self|thread [control]   (see protect_common.h) */
#define _GNU_SOURCE
#include "protect_common.h"

#include <pthread.h>
#include <signal.h>

#define ALT_SIZE 65536
#define ALT_ROUNDS 40 /* (each free of 64 KiB is a mark: past the floor, folded at once) */

static int go[2], ready[2];
static uintptr_t block; /* masked */

/* Registers the block (unless control), and frees it still registered. */
__attribute__((noinline)) static void register_and_free(void) {
    void *p = must_malloc(ALT_SIZE);
    block = (uintptr_t)p ^ MASK;
    stack_t ss = {.ss_sp = p, .ss_size = ALT_SIZE, .ss_flags = 0};
    if (!control && sigaltstack(&ss, NULL) != 0) {
        perror("sigaltstack");
        exit(2);
    }
    ss.ss_sp = NULL;
    p = NULL;
    free((void *)(block ^ MASK));
}

__attribute__((noinline)) static void unregister(void) {
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
}

static void *holder(void *arg) {
    (void)arg;
    register_and_free();
    clear_stack();
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
        exit(2);
    unregister();
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int thread = argc > 1 && !strcmp(argv[1], "thread");
    pthread_t t;
    if (thread) {
        char c;
        if (pipe(go) || pipe(ready) || pthread_create(&t, NULL, holder, NULL) ||
            read(ready[0], &c, 1) != 1)
            return 2;
    } else {
        register_and_free();
    }
    clear_stack();
    int held = churn_of(block, ALT_ROUNDS, ALT_SIZE, 16);
    if (thread) {
        char c = 0;
        if (write(go[1], &c, 1) != 1)
            return 2;
        pthread_join(t, NULL);
    } else {
        unregister();
    }
    clear_stack();
    report(held, released_after(block, churn_of(block, ALT_ROUNDS, ALT_SIZE, 16)));
    return 0;
}
