/* Helpers shared by the fork test programs (not a program itself: only *.c and *.cc are
 * built). Include after common.h. */
#ifndef OSCAR_TEST_FORK_COMMON_H
#define OSCAR_TEST_FORK_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Fork a child that exits 0 at once, and wait for it: 0 when it did, 1 otherwise. */
static inline int fork_empty_child(void) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int status;
    waitpid(pid, &status, 0);
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
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
