/* Protect mode: the only pointer to a freed object moves, every millisecond or so, into an
 * object on pages the heap hands out just then (its top grows: nothing is freed that they
 * could come from), and the old place is cleared. A mark that fixes which pages to read
 * before it stops the world reads the object the pointer left and not the one it went to.
 * (Snapshot marks did, until 2026-11-28: the pages were counted before the candidates were
 * chosen, the copy made after; 1 run in 3 of protect_shape_concurrent_move handed the object
 * out on a loaded machine.) See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* Two of the heap's 64 KiB pages each: no page a mark releases from the churn's small
 * objects (one page at most) can hold one, so each comes from the top of the heap. Never
 * freed, and only one word of each is written. */
#define FRESH_BYTES (66 << 10)
#define FRESH_MAX 500

static atomic_int stop;
static void *volatile holder; /* where the pointer starts */

static void *mover(void *arg) {
    (void)arg;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    void *volatile *at = &holder;
    for (int n = 0; n < FRESH_MAX && !atomic_load(&stop); n++) {
        void *volatile *fresh = malloc(FRESH_BYTES);
        void *volatile *to = &fresh[(n * 61) % (FRESH_BYTES / sizeof(void *))];
        move_word(to, at);
        at = to;
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        struct timespec ts = {0, (long)(seed % 1000) * 1000};
        nanosleep(&ts, NULL);
    }
    /* (The pointer stays where it is until main clears it: the heap stops growing here.) */
    while (!atomic_load(&stop)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    *at = NULL;
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    check_moved_by(&holder, mover, &stop, 2.5, 1.0);
    return 0;
}
