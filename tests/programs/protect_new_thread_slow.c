/* Protect mode: a thread of the program's is slow to start. It spends its first 200 ms
 * running with every signal blocked, as a new thread does before glibc sets its mask when a
 * loaded machine gives it no CPU (simulated with a raw rt_sigprocmask: Oscar keeps its own
 * signal open through libc's calls), while the main thread frees and marks run. A stop gave
 * up after 50 ms on any thread that blocked its signal, and the next try came 10 ms later, and
 * later each time: the marks of a short program never came (released_reused 0, seen in CI's
 * signal_move shape). One that blocks every signal and runs is now waited for (1 s at most).
 * Then the usual check: a global holds the freed object, cleared, churned again. See
 * protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *volatile hold;
static atomic_int stop;

static void *slow(void *arg) {
    (void)arg;
    uint64_t all = ~0ull, old;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
    double end = now_seconds() + 0.2;
    while (now_seconds() < end) /* (spinning: a thread that waits for a CPU never sleeps) */
        ;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
    while (!atomic_load(&stop))
        usleep(1000);
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    pthread_t t;
    pthread_create(&t, NULL, slow, NULL);
    check_held_in(&hold); /* (its first marks meet the blocked thread) */
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    return 0;
}
