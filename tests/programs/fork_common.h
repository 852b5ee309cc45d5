/* Helpers shared by the fork test programs (not a program itself: only *.c and *.cc are
 * built). Include after common.h. */
#ifndef OSCAR_TEST_FORK_COMMON_H
#define OSCAR_TEST_FORK_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC in seconds. */
static inline double mono_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Fork a child that exits 0 at once, and wait for it: 0 when it did, 1 otherwise. */
static inline int fork_empty_child(void) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int status;
    waitpid(pid, &status, 0);
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* Threads that free and allocate objects of 16-4015 bytes at random until churners_stop()
 * (in protect mode with a tiny quarantine floor, Oscar's stops come back to back). */
#define CHURNERS_MAX 4
static struct {
    atomic_int stop;
    int n;
    pthread_t t[CHURNERS_MAX];
} churners;

static void *churner(void *arg) {
    uint64_t seed = 7 + (uintptr_t)arg;
    void *keep[64] = {0};
    while (!atomic_load(&churners.stop)) {
        unsigned i = rng_next(&seed) % 64;
        free(keep[i]);
        keep[i] = malloc(16 + rng_next(&seed) % 4000);
    }
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    return NULL;
}

static inline void churners_start(int n) {
    churners.n = n < CHURNERS_MAX ? n : CHURNERS_MAX;
    for (int i = 0; i < churners.n; i++)
        pthread_create(&churners.t[i], NULL, churner, (void *)(uintptr_t)i);
}

static inline void churners_stop(void) {
    atomic_store(&churners.stop, 1);
    for (int i = 0; i < churners.n; i++)
        pthread_join(churners.t[i], NULL);
}

/* Two threads that take turns on one FILE's lock (flockfile, 2000 putc_unlocked, funlockfile)
 * until stdio_writers_stop(). */
static struct {
    FILE *out;
    atomic_int stop;
    atomic_long rounds;
    pthread_t t[2];
} stdio_writers;

static void *stdio_writer(void *arg) {
    (void)arg;
    FILE *out = stdio_writers.out;
    while (!atomic_load(&stdio_writers.stop)) {
        flockfile(out);
        for (int i = 0; i < 2000; i++)
            putc_unlocked('x', out);
        funlockfile(out);
        atomic_fetch_add(&stdio_writers.rounds, 1);
    }
    return NULL;
}

/* Opens /dev/null for writing and starts both writers: 0, or -1 if it cannot be opened. */
static inline int stdio_writers_start(void) {
    stdio_writers.out = fopen("/dev/null", "w");
    if (!stdio_writers.out)
        return -1;
    for (int i = 0; i < 2; i++)
        pthread_create(&stdio_writers.t[i], NULL, stdio_writer, NULL);
    return 0;
}

/* Both writers must still get the lock in turn: wait for 20 more rounds (a lock left taken
 * hangs here), then stop and join them and close the FILE. */
static inline void stdio_writers_stop(void) {
    long before = atomic_load(&stdio_writers.rounds);
    while (atomic_load(&stdio_writers.rounds) < before + 20)
        usleep(1000);
    atomic_store(&stdio_writers.stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(stdio_writers.t[i], NULL);
    fclose(stdio_writers.out);
}
#endif
