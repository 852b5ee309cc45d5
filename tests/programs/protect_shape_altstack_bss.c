/* Protect mode: a global keeps a freed object while another thread has an alternate signal
 * stack in the same bss mapping (a static buffer, the usual way) and sits blocked in read().
 * The altstack's range must not hide the rest of its mapping from the mark, nor a stack
 * pointer inside it cut the mapping short. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

/* One object, so the pointer and the altstack share a mapping whatever the linker does. */
static struct {
    char altstack[256 * 1024];
    void *volatile hold;
} g;
static int pipe_go[2], pipe_ready[2];

static void *thread_main(void *arg) {
    (void)arg;
    stack_t ss = {.ss_sp = g.altstack, .ss_size = sizeof g.altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    char c = 1;
    write(pipe_ready[1], &c, 1);
    read(pipe_go[0], &c, 1);
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    pipe(pipe_go);
    pipe(pipe_ready);
    pthread_t t;
    char c = 0;
    pthread_create(&t, NULL, thread_main, NULL);
    read(pipe_ready[0], &c, 1);
    uintptr_t m = make_object();
    if (!control)
        g.hold = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    g.hold = NULL;
    clear_stack();
    int released = released_after(m, churn(m, ROUNDS));
    write(pipe_go[1], &c, 1);
    pthread_join(t, NULL);
    report(held, released);
    return 0;
}
