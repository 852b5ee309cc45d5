/* fork while the world cannot be stopped: a thread blocks every signal with a raw system call
 * (so Oscar's park signal too: the stop gives up after a moment, and its request stays
 * pending), unblocks them now and then (the late request is delivered, maybe while the next
 * stop runs), while two threads take turns on one FILE's lock and the main thread forks 40
 * times. Nothing may hang and the FILE must stay usable: a stop that gave up must not make
 * fork save and put back the FILE locks (they changed meanwhile), and a late park request
 * must not park its thread for a stop that is over. alarm() ends a hang. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include "fork_common.h"

static atomic_int stop;

static void nap_ms(long ms) {
    struct timespec ts = {0, ms * 1000000};
    nanosleep(&ts, NULL);
}

static void *blocker(void *arg) {
    (void)arg;
    uint64_t all = ~0ULL, none = 0;
    while (!atomic_load(&stop)) {
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8);
        nap_ms(80);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
        nap_ms(3);
    }
    return NULL;
}

int main(void) {
    test_init();
    alarm(60);
    if (stdio_writers_start() != 0)
        return 2;
    pthread_t blocking;
    pthread_create(&blocking, NULL, blocker, NULL);
    int bad = 0;
    for (int f = 0; f < 40; f++) {
        bad += fork_empty_child();
        nap_ms(f % 7);
    }
    stdio_writers_stop();
    atomic_store(&stop, 1);
    pthread_join(blocking, NULL);
    check(bad == 0, "every child exited 0");
    printf("40 forks while the world cannot be stopped: done\n");
    return test_finish();
}
