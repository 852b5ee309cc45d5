/* Protect mode, concurrent marks: a live heap large enough that a mark reads it for several
 * milliseconds while the program runs, and a thread that keeps moving the only pointer to a
 * freed object between heap objects far apart (one the mark may have read already, one it has
 * not), a fresh large object (pages handed out after the mark began), a register only (both
 * memory copies cleared), a global and its stack. Each move writes the new place before it
 * clears the old one, so at every instant some root holds the pointer; a concurrent mark that
 * reads the new place before the write and the old one after the clear would lose it unless
 * it reads the written pages again. The object must never be handed out again while held.
 * With "closefrom", the main thread also closes every descriptor from 3 up between churns
 * (daemons do; Oscar's own descriptors among them) and checks that open() still returns 3.
 * See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define NODES (1 << 18) /* 256 Ki nodes of 64 bytes: 16 MiB live */

static void **volatile *table;
static void *volatile global;
static atomic_int stop;

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void pause_us(uint64_t *seed) {
    struct timespec ts = {0, (long)(next_rand(seed) % 3000) * 1000};
    nanosleep(&ts, NULL);
}

/* The pointer rests in a node near the heap's top (read late by a mark), then one near its
 * bottom (read early), then in a fresh large object, each for up to 3 ms: a mark that reads
 * the heap once while it moves sees it nowhere. Also via a global and the stack. */
static void *mover(void *arg) {
    (void)arg;
    uint64_t seed = 88172645463325252ULL;
    void *volatile *at = &table[0][0];
    unsigned long n = 0;
    while (!atomic_load(&stop)) {
        void *volatile *high = &table[NODES - 1 - next_rand(&seed) % 256][0];
        move_word(high, at);
        pause_us(&seed);
        void *volatile *low = &table[next_rand(&seed) % 256][1];
        move_word(low, high);
        pause_us(&seed);
        void *volatile *fresh = malloc((64 + n++ % 64) << 10);
        move_word(&fresh[(n % 8) * 512], low);
        pause_us(&seed);
        move_word(&global, &fresh[(n % 8) * 512]);
        free((void *)fresh);
        void *volatile local;
        move_word(&local, &global);
        at = &table[next_rand(&seed) % NODES][2];
        move_word(at, &local);
    }
    *at = NULL;
    clear_stack();
    return NULL;
}

/* Churn for a while (marks run meanwhile); with closefrom, descriptors too. */
static int churn_closing(uintptr_t m, double secs, int closing, int *bad_fd) {
    int held = 0;
    double end = now_seconds() + secs;
    while (now_seconds() < end) {
        held += churn(m, 20);
        if (closing) {
            syscall(SYS_close_range, 3, ~0U, 0);
            int fd = open("/dev/null", O_RDONLY);
            *bad_fd += fd != 3;
            if (fd >= 0)
                close(fd);
        }
    }
    return held;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int closing = argc > 1 && strcmp(argv[argc - 1], "closefrom") == 0;
    table = malloc(NODES * sizeof *table);
    for (size_t i = 0; i < NODES; i++) {
        table[i] = malloc(64);
        memset((void *)table[i], 0, 64);
    }
    uintptr_t m = make_object();
    if (!control)
        table[0][0] = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    pthread_t t;
    pthread_create(&t, NULL, mover, NULL);
    int bad_fd = 0;
    int held = churn_closing(m, 3.0, closing, &bad_fd);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    global = NULL;
    clear_stack();
    int released = released_after(m, churn_closing(m, 1.0, 0, &bad_fd));
    report(held, released);
    printf("bad_fd %d\n", bad_fd);
    return 0;
}
