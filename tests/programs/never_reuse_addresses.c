/* Freed addresses are never handed out again: record the ranges of 20,000 freed objects
 * (small, medium, large), then do 200,000 mallocs and 2,000 plain mmap() calls and check that
 * no new object or mapping overlaps a freed object. Prints "OK" or "REUSED ..." lines. */
#include <sys/mman.h>
#include "common.h"

#define FREED 20000
#define NEW_MALLOCS 200000
#define NEW_MMAPS 2000

struct range {
    uintptr_t lo, hi;
};

static struct range freed[FREED];
static void *live[NEW_MALLOCS];

static int cmp_range(const void *a, const void *b) {
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* freed[] is sorted and non-overlapping (the objects were live at the same time). */
static int overlaps(uintptr_t lo, uintptr_t hi) {
    size_t a = 0, b = FREED;
    while (a < b) { /* first range with hi > lo */
        size_t mid = (a + b) / 2;
        if (freed[mid].hi <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    return a < FREED && freed[a].lo < hi;
}

static size_t size_for(uint64_t r) {
    switch (r % 10) {
    case 0: return 2000 + r % 60000;
    case 1: return 100000 + r % 200000;
    default: return 1 + r % 300;
    }
}

int main(void) {
    test_init();
    uint64_t rng = 9;
    void *objs[FREED];
    for (int i = 0; i < FREED; i++) {
        size_t n = size_for(rng_next(&rng));
        objs[i] = malloc(n);
        if (!objs[i])
            return 2;
        freed[i].lo = (uintptr_t)objs[i];
        freed[i].hi = (uintptr_t)objs[i] + n;
        ((unsigned char *)objs[i])[0] = 1;
    }
    for (int i = 0; i < FREED; i++)
        free(objs[i]);
    qsort(freed, FREED, sizeof *freed, cmp_range);

    long reused = 0;
    for (int i = 0; i < NEW_MALLOCS; i++) {
        size_t n = size_for(rng_next(&rng)) / (i % 2 ? 1 : 4) + 1;
        live[i] = malloc(n);
        if (!live[i])
            return 2;
        if (overlaps((uintptr_t)live[i], (uintptr_t)live[i] + n) && reused++ < 5)
            printf("REUSED malloc %d of %zu bytes at 0x%lx\n", i, n, (unsigned long)(uintptr_t)live[i]);
        if (i % 3 == 0) { /* churn: free some of the new ones too */
            free(live[i]);
            live[i] = NULL;
        }
    }
    for (int i = 0; i < NEW_MMAPS; i++) {
        size_t len = 4096 * (1 + (size_t)(rng_next(&rng) % 64));
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return 2;
        if (overlaps((uintptr_t)m, (uintptr_t)m + len) && reused++ < 10)
            printf("REUSED mmap %d of %zu bytes at 0x%lx\n", i, len, (unsigned long)(uintptr_t)m);
        if (i % 2 == 0)
            munmap(m, len);
    }
    for (int i = 0; i < NEW_MALLOCS; i++)
        free(live[i]);
    if (reused) {
        printf("REUSED %ld times\n", reused);
        return 1;
    }
    printf("OK\n");
    return 0;
}
