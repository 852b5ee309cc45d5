/* larson: server-like churn (after Larson & Krishnan). Each of THREADS threads owns a table of
 * SLOTS objects and, ITERS times, frees a random slot and refills it with a fresh object of
 * 16..512 bytes that it writes and reads back. The live set stays at THREADS*SLOTS objects.
 * usage: larson ITERS_PER_THREAD [THREADS] [SLOTS] */
#include <pthread.h>
#include <string.h>
#include "bench.h"

static long iters, slots;

static void *worker(void *arg) {
    uint64_t seed = 0x9E3779B97F4A7C15ULL * (uint64_t)((uintptr_t)arg + 1);
    unsigned char **table = calloc((size_t)slots, sizeof *table);
    uint64_t sum = 0;
    for (long i = 0; i < iters; i++) {
        long k = (long)(bench_rand(&seed) % (uint64_t)slots);
        if (table[k]) {
            sum += table[k][0];
            free(table[k]);
        }
        size_t n = 16 + bench_rand(&seed) % 497;
        table[k] = malloc(n);
        memset(table[k], (int)(i & 0xff), n);
        sum += table[k][n - 1];
    }
    for (long k = 0; k < slots; k++)
        free(table[k]);
    free(table);
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
    iters = bench_arg(argc, argv, 1, 100000);
    long threads = bench_arg(argc, argv, 2, 4);
    slots = bench_arg(argc, argv, 3, 1000);
    pthread_t tid[64];
    if (threads > 64) threads = 64;
    for (long t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, worker, (void *)(uintptr_t)t);
    uint64_t sum = 0;
    for (long t = 0; t < threads; t++) {
        void *r;
        pthread_join(tid[t], &r);
        sum += (uint64_t)(uintptr_t)r;
    }
    bench_report(sum, (uint64_t)threads * (uint64_t)(iters + 1));
    return 0;
}
