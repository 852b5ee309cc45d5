/* Protect mode: a freed object is not handed out again while the only pointer to it is on
 * the stack of another thread blocked in read() on a pipe; once that thread has dropped it
 * and exited, it is. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <unistd.h>

static int pipe_go[2], pipe_ready[2];

__attribute__((noinline)) static void blocked(uintptr_t m) {
    void *volatile local = control ? NULL : (void *)(m ^ MASK);
    char c = 1;
    write(pipe_ready[1], &c, 1);
    read(pipe_go[0], &c, 1);
    local = NULL;
}

static void *thread_main(void *arg) {
    blocked((uintptr_t)arg);
    clear_stack();
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    pipe(pipe_go);
    pipe(pipe_ready);
    uintptr_t m = make_object();
    pthread_t t;
    char c = 0;
    pthread_create(&t, NULL, thread_main, (void *)m);
    read(pipe_ready[0], &c, 1);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    write(pipe_go[1], &c, 1);
    pthread_join(t, NULL);
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS)));
    return 0;
}
