/* Protect mode: fork while marks run. argv[1] = "thread": another thread forks in a loop while
 * the main thread churns (each child allocates, frees, checks its copy of a global's object,
 * exits 0); "signal": a timer's handler on the marking thread itself forks (fork is
 * async-signal-safe), so a fork can arrive in the middle of a mark. Nothing hangs, every
 * child exits 0, and a global still keeps its freed object. See protect_common.h. */
#include "protect_common.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile hold;
static atomic_int stop, bad_children, forks;

static int child_work(void) {
    for (int i = 0; i < 20; i++) { /* (few: no mark in the child) */
        void *p = malloc(16 + (size_t)i * 8);
        memset(p, 0x5a, 16);
        free(p);
    }
    return 0;
}

static void fork_once(void) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_work());
    if (pid > 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            atomic_fetch_add(&bad_children, 1);
        atomic_fetch_add(&forks, 1);
    }
}

static void *forker(void *arg) {
    (void)arg;
    while (!atomic_load(&stop))
        fork_once();
    return NULL;
}

static void on_alarm(int sig) {
    (void)sig;
    int e = errno;
    fork_once();
    errno = e;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    bool by_signal = argc > 1 && strcmp(argv[1], "signal") == 0;
    uintptr_t m = make_object();
    if (!control)
        hold = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    pthread_t t;
    if (by_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 20000}, {0, 20000}};
        setitimer(ITIMER_REAL, &it, NULL);
    } else {
        pthread_create(&t, NULL, forker, NULL);
    }
    /* Until a fork happened (the timer's first tick may come after one churn: marks are
     * paced), at most 5 s. */
    int held = churn(m, ROUNDS);
    for (int i = 0; i < 500 && !atomic_load(&forks); i++)
        held += churn(m, ROUNDS / 10);
    if (by_signal) {
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    } else {
        atomic_store(&stop, 1);
        pthread_join(t, NULL);
    }
    hold = NULL;
    clear_stack();
    int released = released_after(m, churn(m, ROUNDS));
    printf("forks_done %d\nbad_children %d\n", atomic_load(&forks) > 0, atomic_load(&bad_children));
    report(held, released);
    return 0;
}
