/* Helpers shared by the programs whose main thread keeps the world stopping while another
 * thread waits (waits_across_stops.c, timed_io_across_stops.c, waits_signal_in_retry.c). Not
 * a program itself. */
#ifndef OSCAR_TEST_STOPS_COMMON_H
#define OSCAR_TEST_STOPS_COMMON_H
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int forking; /* "fork": busy() forks instead of allocating */

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* What the main thread does meanwhile: allocate and free (protect mode's marks stop the
 * world), or with "fork" fork a child that exits at once (every mode stops the world around
 * a fork of a program with threads). */
static inline void busy(void) {
    if (forking) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return;
    }
    void *volatile p[16];
    for (int k = 0; k < 16; k++)
        p[k] = malloc(32 + 16 * k);
    for (int k = 0; k < 16; k++)
        free(p[k]);
}
#endif
