/* Threads with the smallest stacks glibc allows (PTHREAD_STACK_MIN, 16 KiB: servers that run
 * many threads ask for little) free and allocate objects of 16-300 bytes. Strict and fast
 * modes made new shadow runs with 20 KiB of arrays on the allocating thread's stack (slot
 * numbers for a span and a range per page to guard): the thread ran off its stack, SIGSEGV
 * with no word. The ranges now go to the kernel 64 at a time.
 * usage: small_thread_stacks KIB THREADS ROUNDS */
#define _GNU_SOURCE
#include "common.h"

#include <pthread.h>

static long rounds;

static void *worker(void *arg) {
    unsigned char **table = calloc(1024, sizeof *table);
    uint64_t x = 88172645463325252ull ^ ((uint64_t)(uintptr_t)arg + 1) * 0x9E3779B97F4A7C15ull;
    uint64_t sum = 0;
    for (long r = 0; r < rounds; r++) {
        replace_one(table, 1024, &x);
        sum += table[x % 1024] ? table[x % 1024][0] : 0;
    }
    for (int i = 0; i < 1024; i++)
        free(table[i]);
    free(table);
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
    long kib = argc > 1 ? atol(argv[1]) : 16;
    int n = argc > 2 ? atoi(argv[2]) : 2;
    rounds = argc > 3 ? atol(argv[3]) : 300000;
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (pthread_attr_setstacksize(&a, (size_t)kib * 1024) != 0) {
        printf("setstacksize failed\n");
        return 1;
    }
    pthread_t t[64];
    uint64_t total = 0;
    for (int i = 0; i < n && i < 64; i++)
        if (pthread_create(&t[i], &a, worker, (void *)(uintptr_t)i) != 0) {
            printf("create failed\n");
            return 1;
        }
    for (int i = 0; i < n && i < 64; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (uintptr_t)r;
    }
    printf("stack %ld KiB, %d threads, sum %llu\n", kib, n, (unsigned long long)total);
    return 0;
}
