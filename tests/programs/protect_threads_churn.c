/* Protect mode: four threads each replace objects of 16-512 B in a table of their own (1000
 * live each, 4 MB live in all), more threads than this machine may have CPUs. A mark stops
 * the world; while the stop waits for threads that are not running to take its signal, the
 * running ones went on freeing, and the quarantine, meant to stay within a few times its
 * 1 MiB floor, reached 20-50 MB. With WAITING threads waiting on a condition variable beside
 * them (a thread pool with nothing to do): every stop parks those too, ~12 us each, and with
 * the quarantine at twice its trigger the pacing had no say (400 waiting threads: marking
 * took 89% of the run, 10x glibc's time). Prints a checksum (the same under every allocator).
 * usage: protect_threads_churn [ROUNDS_PER_THREAD [THREADS (1..4, 4 if not given)
 *                              [WAITING (0 if not given)]]] */
#include <pthread.h>
#include "common.h"

enum { THREADS_MAX = 4, SLOTS = 1000 };
static long rounds;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;

static void *worker(void *arg) {
    uint64_t seed = 0x9E3779B97F4A7C15ULL * ((uint64_t)(uintptr_t)arg + 1), sum = 0;
    unsigned char *table[SLOTS] = {0};
    size_t sizes[SLOTS] = {0};
    for (long r = 0; r < rounds; r++) {
        unsigned k = (unsigned)(rng_next(&seed) % SLOTS);
        if (table[k])
            sum += table[k][sizes[k] - 1];
        free(table[k]);
        sizes[k] = 16 + (size_t)(rng_next(&seed) % 497);
        table[k] = malloc(sizes[k]);
        memset(table[k], (int)(r & 0xff), sizes[k]);
    }
    for (unsigned k = 0; k < SLOTS; k++)
        free(table[k]);
    return (void *)(uintptr_t)sum;
}

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!done)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv) {
    test_init();
    rounds = argc > 1 ? atol(argv[1]) : 400000;
    long threads = argc > 2 ? atol(argv[2]) : THREADS_MAX;
    long waiting = argc > 3 ? atol(argv[3]) : 0;
    if (threads < 1 || threads > THREADS_MAX)
        threads = THREADS_MAX;
    pthread_t *waiters = calloc((size_t)(waiting > 0 ? waiting : 1), sizeof *waiters);
    long started = 0;
    for (long i = 0; i < waiting; i++)
        if (pthread_create(&waiters[started], NULL, waiter, NULL) == 0)
            started++;
    pthread_t tid[THREADS_MAX];
    for (long t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)t);
    uint64_t sum = 0;
    for (long t = 0; t < threads; t++) {
        void *r;
        pthread_join(tid[t], &r);
        sum += (uint64_t)(uintptr_t)r;
    }
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (long i = 0; i < started; i++)
        pthread_join(waiters[i], NULL);
    free(waiters);
    if (waiting)
        printf("waiting %ld ", started);
    printf("checksum %lu\n", (unsigned long)sum);
    return 0;
}
