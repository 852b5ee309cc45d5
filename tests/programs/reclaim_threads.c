/* Reclaiming and recycling while threads churn and the main thread forks (reclaim.h): four
 * threads each push N objects (small, and a large one in sixteen) through a ring of 128,
 * checking each before freeing it, and free some of the others' objects through a shared
 * exchange slot; the main thread forks children that churn and check on their own. Run with
 * a small OSCAR_VA_GIB, the region is used up and its reclaimed addresses handed out again
 * while all of this goes on. argv[3] "large": objects of 2-32 KiB (carved from slabs) and,
 * one in four, of 64-132 KiB (whose pages go through the keep) instead. Prints "OK" when
 * every object kept its bytes. */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define THREADS 4
#define RING 128

static long per_thread;
static bool large_mix;
static bool in_child; /* the child frees only its own objects (below) */
static _Atomic(unsigned char *) exchange;
static atomic_int failures;

static size_t size_of(uint64_t r) {
    if (large_mix)
        return r % 4 == 0 ? 66000 + r % 70000 : 2100 + r % 30000;
    return r % 16 == 0 ? 3000 + r % 70000 : 16 + r % 1500;
}

/* Objects carry their own length and a fill byte, so any thread can check one. */
static unsigned char *make(uint64_t r, unsigned char fill) {
    size_t n = size_of(r);
    unsigned char *p = malloc(n);
    if (!p) {
        printf("FAIL malloc returned NULL\n");
        exit(2);
    }
    memcpy(p, &n, sizeof n);
    memset(p + sizeof n, fill, n - sizeof n);
    return p;
}

static void check_and_free(unsigned char *p, unsigned char fill) {
    size_t n;
    memcpy(&n, p, sizeof n);
    if (p[sizeof n] != fill || p[n - 1] != fill)
        atomic_fetch_add(&failures, 1);
    free(p);
}

static void *worker(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg * 7919 + 1;
    unsigned char fill = (unsigned char)(0x40 + (uintptr_t)arg);
    unsigned char *ring[RING] = {0};
    for (long i = 0; i < per_thread; i++) {
        int k = (int)(i % RING);
        if (ring[k]) {
            if (i % 7 == 0 && !in_child) { /* hand it to whichever thread takes it next */
                unsigned char *old = atomic_exchange(&exchange, ring[k]);
                if (old)
                    check_and_free(old, old[sizeof(size_t)]);
            } else {
                check_and_free(ring[k], fill);
            }
        }
        ring[k] = make(rng_next(&seed), fill);
    }
    for (int k = 0; k < RING; k++)
        if (ring[k])
            check_and_free(ring[k], fill);
    return NULL;
}

int main(int argc, char **argv) {
    test_init();
    per_thread = argc > 1 ? atol(argv[1]) : 50000;
    int forks = argc > 2 ? atoi(argv[2]) : 8;
    large_mix = argc > 3 && !strcmp(argv[3], "large");
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        check(pthread_create(&t[i], NULL, worker, (void *)i) == 0, "pthread_create");
    for (int f = 0; f < forks; f++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* Not the exchange slot: an object another thread wrote while fork copied the
             * heap may show older bytes in the child (README, "API and process shapes"). */
            in_child = true;
            per_thread /= 8;
            worker((void *)9);
            _exit(atomic_load(&failures) ? 1 : 0);
        }
        int status = 0;
        check(pid > 0 && waitpid(pid, &status, 0) == pid, "fork and wait");
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child checked its objects");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    unsigned char *last = atomic_exchange(&exchange, NULL);
    if (last)
        check_and_free(last, last[sizeof(size_t)]);
    check(atomic_load(&failures) == 0, "every object kept its bytes");
    return test_finish();
}
