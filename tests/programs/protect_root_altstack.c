/* Protect mode: a freed object is not handed out again while the only pointer to it is a
 * local of a signal handler running on an alternate signal stack (in a thread blocked in
 * read() inside the handler); once the handler has returned, it is. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

static int pipe_go[2], pipe_ready[2];
static uintptr_t masked;

static void handler(int sig) {
    (void)sig;
    void *volatile local = control ? NULL : (void *)(masked ^ MASK);
    char c = 1;
    write(pipe_ready[1], &c, 1);
    read(pipe_go[0], &c, 1);
    local = NULL;
    volatile char wipe[4096];
    memset((char *)wipe, 0, sizeof wipe);
}

static void *thread_main(void *arg) {
    (void)arg;
    stack_t ss;
    ss.ss_sp = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ss.ss_size = 1 << 16;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    raise(SIGUSR1);
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    pipe(pipe_go);
    pipe(pipe_ready);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    masked = make_object();
    pthread_t t;
    char c = 0;
    pthread_create(&t, NULL, thread_main, NULL);
    read(pipe_ready[0], &c, 1);
    free_object(masked);
    clear_stack();
    int held = churn(masked, ROUNDS);
    write(pipe_go[1], &c, 1);
    pthread_join(t, NULL);
    clear_stack();
    report(held, released_after(masked, churn(masked, ROUNDS)));
    return 0;
}
