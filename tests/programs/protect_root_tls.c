/* Protect mode: a freed object is not handed out again while a __thread variable (of the
 * main thread, and of a second thread blocked on a pipe) points to it; once cleared, it is.
 * See protect_common.h. Argument "thread": the second thread's variable. */
#include "protect_common.h"
#include <pthread.h>
#include <unistd.h>

static __thread void *volatile hold;
static int pipe_go[2], pipe_ready[2];
static uintptr_t masked;

static void *holder(void *arg) {
    (void)arg;
    if (!control)
        hold = (void *)(masked ^ MASK);
    char c = 1;
    write(pipe_ready[1], &c, 1);
    read(pipe_go[0], &c, 1); /* blocked here during the first churn */
    hold = NULL;
    clear_stack(); /* (a park signal's frame below may hold a stale register copy of it) */
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int in_thread = argc > 1 && strcmp(argv[1], "thread") == 0;
    pipe(pipe_go);
    pipe(pipe_ready);
    masked = make_object();
    pthread_t t;
    char c;
    if (in_thread) {
        pthread_create(&t, NULL, holder, NULL);
        read(pipe_ready[0], &c, 1);
    } else if (!control) {
        hold = (void *)(masked ^ MASK);
    }
    free_object(masked);
    clear_stack();
    int held = churn(masked, ROUNDS);
    hold = NULL;
    if (in_thread) {
        write(pipe_go[1], &c, 1);
        pthread_join(t, NULL);
    }
    clear_stack();
    report(held, released_after(masked, churn(masked, ROUNDS)));
    return 0;
}
