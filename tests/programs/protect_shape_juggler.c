/* Protect mode, many shapes at once: three threads each keep moving the only pointers to four
 * freed objects of their own (16 bytes to 100 KiB: small classes and a large object) at
 * random between kinds of root: a global, the thread's TLS, its stack, the program's own
 * anonymous mapping, a fresh heap object (freed once the pointer left it), a fresh large
 * object, and on the way a general or a vector register while the thread spins; a box that
 * holds one may be grown or shrunk by realloc (the pointer copied with it). Every move
 * writes the new place before it clears the old one, so at every instant some root holds each
 * pointer, whatever a mark (stopped, concurrent, snapshot) reads when. Now and then a thread
 * drops one of its pointers and frees a new object in its place, so objects are freed while
 * marks run. Every thread churns the sizes meanwhile (a thread's freed slots go back to its
 * own pages: each mover churns its own sizes, the main thread all of them) and counts the
 * allocations that returned an object while it was held ("held_reused", must be 0); once the
 * movers have dropped everything, each churns until one of its dropped objects comes back
 * ("released_reused", > 0). With "control" each pointer is dropped right after its object's
 * free: held_reused is then > 0, so the check can fail. The program keeps the addresses it
 * compares masked (MASK). See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#define MOVERS 3
#define PER 4 /* pointers per mover */
#define N (MOVERS * PER)
#define HELD_SECS 2.5

static const size_t sizes[N] = {16, 48, 128, 256, 512, 1024, 2048, 4096, 40, 96, 3000, 100 << 10};

static _Atomic uintptr_t held_masked[N]; /* pointer i's object while it is held, masked; or 0 */
static void *volatile globals[N];
static __thread void *volatile tls_slots[PER];
static void *volatile *mapping;          /* the program's own anonymous mapping */
static atomic_int stop;
static atomic_long moves;
static atomic_int held_hits, released_hits;

enum kind { GLOBAL, TLS, STACK, MAPPING, HEAP, LARGE, KINDS };

struct mover {
    int id;
    uint64_t seed;
    void *volatile *at[PER];     /* where pointer k lies now */
    void *volatile *box[PER];    /* the heap object holding it (HEAP, LARGE), else NULL */
};

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* *to = *from, *from = 0, the pointer only in r12 (or xmm7) for `spins` iterations between:
 * a park signal may catch it there. */
static void via_register(void *volatile *to, void *volatile *from, unsigned long spins) {
    __asm__ volatile("movq (%1), %%r12\n\t"
                     "movq $0, (%1)\n\t"
                     "1: decq %2\n\t"
                     "jnz 1b\n\t"
                     "movq %%r12, (%0)\n\t"
                     "xorl %%r12d, %%r12d"
                     : "+r"(to), "+r"(from), "+r"(spins)
                     :
                     : "r12", "memory");
}

static void via_vector(void *volatile *to, void *volatile *from, unsigned long spins) {
    __asm__ volatile("movq (%1), %%xmm7\n\t"
                     "movq $0, (%1)\n\t"
                     "1: decq %2\n\t"
                     "jnz 1b\n\t"
                     "movq %%xmm7, (%0)\n\t"
                     "pxor %%xmm7, %%xmm7"
                     : "+r"(to), "+r"(from), "+r"(spins)
                     :
                     : "xmm7", "memory");
}

/* Is q an object held now? (Or, held NULL: one of the n objects in plain.) */
static int is_held(const void *q, const uintptr_t *plain, int n) {
    uintptr_t m = (uintptr_t)q ^ MASK;
    int hit = 0;
    for (int i = 0; i < n; i++)
        hit |= (plain ? plain[i] : atomic_load(&held_masked[i])) == m;
    return hit;
}

/* A batch of each size in `which` (n_which of them); how many allocations were an object
 * held now (plain NULL) or one of the n in plain? */
static int churn_sizes(const int *which, int n_which, const uintptr_t *plain, int n) {
    int hits = 0;
    void *volatile objs[8];
    for (int w = 0; w < n_which; w++) {
        size_t size = sizes[which[w]];
        int batch = size > 8192 ? 1 : 8;
        for (int b = 0; b < batch; b++) {
            objs[b] = malloc(size);
            hits += is_held((void *)objs[b], plain, n);
        }
        for (int b = 0; b < batch; b++) {
            free(objs[b]);
            objs[b] = NULL;
        }
    }
    return hits;
}

/* A new object for pointer i, its only pointer put at *at (unless control), held from before
 * its free; returns nothing that points to it. */
__attribute__((noinline)) static void renew(int i, void *volatile *at) {
    unsigned char *p = must_malloc(sizes[i]);
    atomic_fetch_add(&held_hits, is_held(p, NULL, N));
    memset(p, 0x33, sizes[i]);
    *at = control ? NULL : (void *)p;
    atomic_store(&held_masked[i], (uintptr_t)p ^ MASK);
    free(p);
    p = NULL;
}

/* Pointer k of mover m (object i) no longer held: cleared where it lies, its box freed. */
static void drop(struct mover *m, int k, int i) {
    atomic_store(&held_masked[i], 0);
    *m->at[k] = NULL;
    free((void *)m->box[k]);
    m->box[k] = NULL;
}

static void move(struct mover *m, int k, int i, void *volatile *stack_slots) {
    uint64_t r = next_rand(&m->seed);
    if (m->box[k] && (r >> 60) % 4 == 0) {
        /* The box it lies in, grown or shrunk by realloc: moved (copied, the old one freed)
         * or not, the word kept. */
        size_t at = (size_t)(m->at[k] - m->box[k]), words = at + 1 + (r >> 8) % 20000;
        void *volatile *grown = realloc((void *)m->box[k], words * sizeof(void *));
        if (!grown)
            return;
        atomic_fetch_add(&held_hits, is_held((void *)grown, NULL, N));
        m->box[k] = grown;
        m->at[k] = &grown[at];
        atomic_fetch_add_explicit(&moves, 1, memory_order_relaxed);
        return;
    }
    void *volatile *to, *volatile *box = NULL;
    switch ((enum kind)(r % KINDS)) {
    case GLOBAL:
        to = &globals[i];
        break;
    case TLS:
        to = &tls_slots[k];
        break;
    case STACK:
        to = &stack_slots[k];
        break;
    case MAPPING:
        to = &mapping[i * 64 + (r >> 8) % 64];
        break;
    case HEAP: {
        size_t words = 4 + (r >> 8) % 252;
        box = must_malloc(words * sizeof(void *));
        atomic_fetch_add(&held_hits, is_held((void *)box, NULL, N));
        to = &box[(r >> 20) % words];
        break;
    }
    default: {
        size_t words = ((64 + (r >> 8) % 64) << 10) / sizeof(void *);
        box = must_malloc(words * sizeof(void *));
        atomic_fetch_add(&held_hits, is_held((void *)box, NULL, N));
        to = &box[(r >> 20) % words];
        break;
    }
    }
    if (to == m->at[k]) {
        free((void *)box);
        return;
    }
    unsigned how = (unsigned)(r >> 40) % 8;
    if (how == 0)
        via_register(to, m->at[k], 1 + (r >> 44) % 100000);
    else if (how == 1)
        via_vector(to, m->at[k], 1 + (r >> 44) % 100000);
    else
        move_word(to, m->at[k]);
    free((void *)m->box[k]); /* (the pointer has left it) */
    m->box[k] = box;
    m->at[k] = to;
    atomic_fetch_add_explicit(&moves, 1, memory_order_relaxed);
}

static void *mover(void *arg) {
    struct mover *m = arg;
    void *volatile stack_slots[PER] = {NULL};
    int own[PER];
    for (int k = 0; k < PER; k++)
        own[k] = k * MOVERS + m->id;
    for (int k = 0; k < PER; k++) {
        int i = k * MOVERS + m->id;
        m->at[k] = &globals[i];
        renew(i, m->at[k]);
    }
    while (!atomic_load(&stop)) {
        uint64_t r = next_rand(&m->seed);
        int k = (int)(r % PER), i = k * MOVERS + m->id;
        if ((r >> 8) % 64 == 0) {
            drop(m, k, i);
            m->at[k] = &globals[i];
            renew(i, m->at[k]);
        } else {
            move(m, k, i, stack_slots);
        }
        atomic_fetch_add(&held_hits, churn_sizes(own, PER, NULL, N));
        if ((r >> 16) % 4 == 0) {
            struct timespec ts = {0, (long)((r >> 24) % 300) * 1000};
            nanosleep(&ts, NULL);
        }
    }
    uintptr_t last[PER];
    for (int k = 0; k < PER; k++) {
        int i = k * MOVERS + m->id;
        last[k] = atomic_load(&held_masked[i]);
        drop(m, k, i);
    }
    clear_stack();
    /* Until one of any mover's comes back, at most 10 s (as released_after: a loaded
     * machine's marks run late). (A mover's dropped slot may lie in a page another thread
     * took meanwhile, whose owner no longer allocates: any mover's will do.) */
    double end = now_seconds() + 10.0;
    while (atomic_load(&released_hits) == 0 && now_seconds() < end)
        atomic_fetch_add(&released_hits, churn_sizes(own, PER, last, PER));
    clear_stack(); /* (an exited thread's stack stays mapped) */
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    mapping = mmap(NULL, N * 64 * sizeof(void *), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED)
        return 2;
    static struct mover movers[MOVERS];
    pthread_t t[MOVERS];
    for (int j = 0; j < MOVERS; j++) {
        movers[j].id = j;
        movers[j].seed = 0x9E3779B97F4A7C15ULL * (uint64_t)(j + 1);
        pthread_create(&t[j], NULL, mover, &movers[j]);
    }
    int all[N];
    for (int i = 0; i < N; i++)
        all[i] = i;
    double end = now_seconds() + HELD_SECS;
    while (now_seconds() < end)
        atomic_fetch_add(&held_hits, churn_sizes(all, N, NULL, N));
    atomic_store(&stop, 1);
    for (int j = 0; j < MOVERS; j++)
        pthread_join(t[j], NULL);
    printf("moves_over_100 %d\n", atomic_load(&moves) > 100);
    report(atomic_load(&held_hits), atomic_load(&released_hits));
    return 0;
}
