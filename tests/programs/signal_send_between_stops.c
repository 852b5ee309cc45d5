/* The program sends a signal to another of its threads (pthread_kill) while two threads
 * churn: under protect mode with a tiny quarantine floor, Oscar's stops of the world come
 * back to back. A send to another thread takes Oscar's world lock between two stops (so that
 * a stop's request and the program's signal never merge); it used to try for it only in the
 * moment between one stop's end and the next one's start, and lost that race again and
 * again: single sends waited up to 0.7 s, and 1000 of them took 0.5-20 s (glibc: 0.05 s).
 *
 * Argument: the signal (pwr: SIGPWR, Oscar's park signal; usr1: SIGUSR1); sends (1000).
 * Prints how many sends waited longer than SLOW_S, the handler's count, and OK. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

#define SLOW_S 0.25

static atomic_int ran, stop;

static void on_signal(int sig) {
    (void)sig;
    atomic_fetch_add(&ran, 1);
}

static void *churn(void *arg) {
    (void)arg;
    uint64_t seed = 7;
    void *keep[64] = {0};
    while (!atomic_load(&stop)) {
        unsigned i = rng_next(&seed) % 64;
        free(keep[i]);
        keep[i] = malloc(16 + rng_next(&seed) % 4000);
    }
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    return NULL;
}

static void *waiter(void *arg) {
    (void)arg;
    while (!atomic_load(&stop))
        usleep(1000);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    test_init();
    int sig = argc > 1 && !strcmp(argv[1], "usr1") ? SIGUSR1 : SIGPWR;
    int sends = argc > 2 ? atoi(argv[2]) : 1000;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    check(sigaction(sig, &sa, NULL) == 0, "sigaction");
    pthread_t c[2], w;
    for (int i = 0; i < 2; i++)
        pthread_create(&c[i], NULL, churn, NULL);
    pthread_create(&w, NULL, waiter, NULL);
    int slow = 0, lost = 0;
    for (int i = 0; i < sends; i++) {
        int before = atomic_load(&ran);
        double t0 = now();
        check(pthread_kill(w, sig) == 0, "pthread_kill");
        if (now() - t0 > SLOW_S)
            slow++;
        for (double t1 = now(); atomic_load(&ran) == before && now() - t1 < 5;)
            usleep(50); /* (its handler counts it, at most 5 s) */
        if (atomic_load(&ran) == before)
            lost++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(c[i], NULL);
    pthread_join(w, NULL);
    printf("sends slower than %.2f s: %d\n", SLOW_S, slow);
    printf("handler ran %d times\n", atomic_load(&ran));
    check(lost == 0, "no send lost");
    return test_finish();
}
