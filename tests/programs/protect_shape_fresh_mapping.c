/* Protect mode: the only pointer to a freed object moves, about every half millisecond, into a
 * mapping the program makes just then (an anonymous mmap, or "mremap": the old mapping moved
 * to a new address, pointer and all), and the mapping it was in is unmapped. A mark that lists
 * the program's mappings once, before it stops the world, misses the new one. See
 * protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#define MAP_BYTES (16 << 10)

static atomic_int stop;
static int use_mremap;
static void *volatile holder; /* where the pointer starts */

static void *fresh_map(void) {
    void *p = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        abort();
    return p;
}

static void *mover(void *arg) {
    (void)arg;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    void *volatile *at = &holder;
    char *region = NULL;
    /* A reservation to move into: mremap to a fixed place of it (a new address each time). */
    char *spare = mmap(NULL, 64 * MAP_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (unsigned n = 0; !atomic_load(&stop); n++) {
        unsigned word = (n * 61) % (MAP_BYTES / sizeof(void *));
        if (use_mremap && region) {
            char *to = spare + (size_t)(n % 64) * MAP_BYTES;
            if (to == region)
                to = spare + (size_t)((n + 1) % 64) * MAP_BYTES;
            char *moved = mremap(region, MAP_BYTES, MAP_BYTES, MREMAP_MAYMOVE | MREMAP_FIXED, to);
            if (moved == MAP_FAILED)
                abort();
            /* (The pointer moved with its page: `at` names its old place.) */
            at = (void *volatile *)(moved + ((char *)at - region));
            region = moved;
        } else {
            char *fresh = fresh_map();
            void *volatile *to = (void *volatile *)fresh + word;
            move_word(to, at);
            if (region)
                munmap(region, MAP_BYTES);
            region = fresh;
            at = to;
        }
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        struct timespec ts = {0, (long)(seed % 1000) * 1000};
        nanosleep(&ts, NULL);
    }
    *at = NULL;
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    for (int i = 1; i < argc; i++)
        use_mremap |= strcmp(argv[i], "mremap") == 0;
    check_moved_by(&holder, mover, &stop, 0.8, 0.4);
    return 0;
}
