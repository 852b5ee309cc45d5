/* Protect mode: the team's helpers (scan/team.h) are slow to start. Every thread this program
 * sees started (its pthread_create, which Oscar's calls reach too) first spends 200 ms with
 * every signal blocked, as a new thread does that a loaded machine has not run yet. A stop
 * gives up on a thread that blocks its signal for 50 ms, so the first mark after the helpers
 * were started failed, and no other came before the program ended (released_reused 0,
 * scan_skipped 1). Then the usual check: a global holds the freed object, cleared, churned
 * again. See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *volatile hold;

struct start {
    void *(*fn)(void *);
    void *arg;
};
static struct start starts[64];
static atomic_int nstarts;

static void *slow_start(void *p) {
    struct start *s = p;
    uint64_t all = ~0ull, old;
    /* (The raw call: Oscar keeps its own signal open through sigprocmask and its kin.) */
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
    return s->fn(s->arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    int k = atomic_fetch_add(&nstarts, 1);
    if (k >= 64)
        return next(t, attr, fn, arg);
    starts[k] = (struct start){fn, arg};
    return next(t, attr, slow_start, &starts[k]);
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    check_held_in(&hold);
    printf("threads_started %d\n", atomic_load(&nstarts));
    return 0;
}
