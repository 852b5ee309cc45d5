/* Chunks of large objects (2100-4000 bytes: carved from a thread's 256 KiB slabs) are
 * reclaimed once all their objects are freed, and their addresses recycled: with a tiny
 * region (OSCAR_VA_GIB=1) malloc must never return NULL while almost nothing is live.
 * argv[1] shape:
 *   fifo    argv[3] live objects of 2100-4000 bytes, freed oldest first;
 *   random  objects of 2100-4000 bytes replaced at random, about 64 MiB live;
 *   thread  a ring of 64 such objects, one live 1 MiB object allocated while a second thread
 *           exists (it allocated and freed one large object, then sleeps);
 * argv[2] allocations in all; argv[4], if given and not 0, the size of every object (4096:
 * exactly a page). Objects are checked before their free. Prints OK, or "FAIL malloc returned NULL at N" (exit 2). */
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>
#include "common.h"

static int wake[2];

static void *sleeper(void *arg) {
    (void)arg;
    free(malloc(3000)); /* (a slab of its own) */
    char c;
    while (read(wake[0], &c, 1) < 0)
        ;
    return NULL;
}

int main(int argc, char **argv) {
    test_init();
    const char *shape = argc > 1 ? argv[1] : "fifo";
    long n = argc > 2 ? atol(argv[2]) : 600000;
    long live = argc > 3 ? atol(argv[3]) : 21000;
    size_t fixed = argc > 4 ? (size_t)atol(argv[4]) : 0;
    pthread_t t;
    void *big = NULL;
    bool threaded = !strcmp(shape, "thread");
    if (threaded) {
        check(pipe(wake) == 0, "pipe");
        check(pthread_create(&t, NULL, sleeper, NULL) == 0, "thread started");
        usleep(20000);
        big = malloc(1 << 20);
        check(big != NULL, "big");
        memset(big, 1, 1 << 20);
        live = 64;
    } else if (!strcmp(shape, "random")) {
        live = (64L << 20) / 3050;
    }
    unsigned char **ring = calloc((size_t)live, sizeof *ring);
    size_t *len = calloc((size_t)live, sizeof *len);
    check(ring && len, "ring");
    uint64_t seed = 12345;
    for (long i = 0; i < n; i++) {
        uint64_t r = rng_next(&seed);
        long k = !strcmp(shape, "random") ? (long)((r >> 20) % (uint64_t)live) : i % live;
        if (ring[k]) {
            check(ring[k][0] == (unsigned char)k && ring[k][len[k] - 1] == (unsigned char)k,
                  "object intact");
            free(ring[k]);
        }
        len[k] = fixed ? fixed : 2100 + r % 1900;
        ring[k] = malloc(len[k]);
        if (!ring[k]) {
            printf("FAIL malloc returned NULL at %ld\n", i);
            fflush(stdout);
            exit(2);
        }
        ring[k][0] = ring[k][len[k] - 1] = (unsigned char)k;
    }
    for (long k = 0; k < live; k++)
        free(ring[k]);
    free(ring);
    free(len);
    if (threaded) {
        check(write(wake[1], "x", 1) == 1, "wake");
        pthread_join(t, NULL);
        free(big);
    }
    return test_finish();
}
