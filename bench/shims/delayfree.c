/* delayfree: glibc's malloc with a quarantine and nothing else, the cost of delaying reuse
 * alone (docs/benchmarks.md, "What delaying reuse costs by itself"). free() zeroes the object
 * (as protect mode poisons it) and holds it, first in first out, until DELAYFREE_KIB KiB of
 * later frees (per thread; 1024 if unset) have passed (DELAYFREE_ZERO=0: not zeroed, to
 * tell the two costs apart); then glibc's own free() takes it. No
 * mark, no proof: a floor under any design that keeps freed memory out of use for as long.
 * The free() it passes objects to is the next one in the search order: glibc's, or another
 * allocator's preloaded after this library (LD_PRELOAD="libdelayfree.so libmimalloc.so.2").
 * (realloc is that allocator's: a block it moves is reused at once. Each thread's queue is
 * mapped on its first free and never given back.) Built as
 * <build>/bench/shims/libdelayfree.so; used as
 * `bench/run.py --allocator delay=<that path>:DELAYFREE_KIB=1024`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void (*next_free)(void *p); /* the allocator's own free, past this library's */
static __thread int resolving;      /* dlsym may free: those few are leaked */

static void pass_on(void *p) {
    if (!next_free) {
        if (resolving)
            return;
        resolving = 1;
        next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
        resolving = 0;
    }
    next_free(p);
}

struct held {
    void *p;
    size_t size;
};

struct queue {
    struct held *ring;
    size_t cap, head, n; /* entries: ring[head], ... ring[(head + n - 1) % cap] */
    size_t bytes, limit;
    int zero; /* zero freed objects (DELAYFREE_ZERO, 1 if unset) */
};

static __thread struct queue *queue;

static struct queue *queue_make(void) {
    const char *kib = getenv("DELAYFREE_KIB");
    size_t limit = (kib ? strtoul(kib, NULL, 10) : 1024) << 10;
    size_t cap = limit / 16 + 2; /* (the smallest chunk glibc hands out holds 16 bytes) */
    void *m = mmap(NULL, sizeof(struct queue) + cap * sizeof(struct held),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct queue *q = m;
    q->ring = (struct held *)(q + 1);
    q->cap = cap;
    q->limit = limit;
    const char *zero = getenv("DELAYFREE_ZERO");
    q->zero = !zero || strcmp(zero, "0") != 0;
    return q;
}

/* The oldest object held goes to the allocator's own free. */
static void pass_oldest(struct queue *q) {
    struct held *h = &q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    q->bytes -= h->size;
    pass_on(h->p);
}

void free(void *p) {
    if (!p || resolving)
        return;
    if (!queue && !(queue = queue_make())) {
        pass_on(p);
        return;
    }
    struct queue *q = queue;
    size_t size = malloc_usable_size(p);
    if (q->zero)
        memset(p, 0, size);
    if (q->n == q->cap) /* (full of small objects: the oldest goes first) */
        pass_oldest(q);
    q->ring[(q->head + q->n) % q->cap] = (struct held){p, size};
    q->n++;
    q->bytes += size;
    while (q->bytes > q->limit)
        pass_oldest(q);
}
