/* Protect mode: many threads waiting on a condition variable (a thread pool with nothing to
 * do) beside one thread that replaces small objects in a table. Every stop of the world
 * parks every thread, the waiting ones too, and each costs a stop ~12 us; with the quarantine
 * at twice its trigger the pacing had no say, and with 400 waiting threads marking took 89%
 * of the run (10x glibc's time). Prints a checksum (the same under every allocator).
 * usage: protect_idle_threads [WAITING_THREADS [ROUNDS]] */
#include <pthread.h>
#include "common.h"

enum { SLOTS = 10000 };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;

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
    long n = argc > 1 ? atol(argv[1]) : 200;
    long rounds = argc > 2 ? atol(argv[2]) : 2000000;
    pthread_t *tid = calloc((size_t)(n > 0 ? n : 1), sizeof *tid);
    long started = 0;
    for (long i = 0; i < n; i++)
        if (pthread_create(&tid[i], NULL, waiter, NULL) == 0)
            started++;
    static unsigned char *table[SLOTS];
    static size_t sizes[SLOTS];
    uint64_t seed = 0x9E3779B97F4A7C15ULL, sum = 0;
    for (long r = 0; r < rounds; r++) {
        unsigned k = (unsigned)(rng_next(&seed) % SLOTS);
        if (table[k])
            sum += table[k][sizes[k] - 1];
        free(table[k]);
        sizes[k] = 16 + (size_t)(rng_next(&seed) % 256);
        table[k] = malloc(sizes[k]);
        memset(table[k], (int)(r & 0xff), sizes[k]);
    }
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (long i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    for (unsigned k = 0; k < SLOTS; k++)
        free(table[k]);
    free(tid);
    printf("threads %ld checksum %lu\n", started, (unsigned long)sum);
    return 0;
}
