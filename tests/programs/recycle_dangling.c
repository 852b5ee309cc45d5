/* Strict and fast mode's address recycling (issue 17, item 9): once the shadow region is used
 * up (run with a tiny OSCAR_VA_GIB), old addresses are handed out again only where no pointer
 * into them remains. An object is freed and a pointer to it is kept ONLY in (argv[1]):
 *   global  a global variable;
 *   stack   a variable of main's frame;
 *   heap    a live heap object;
 *   thread  another thread's stack, while that thread sleeps in read(2);
 *   none    nowhere (the control: its addresses are recycled).
 * Then argv[2] objects churn through a small ring (the region is used up and recycled many
 * times over), and no new object may ever cover the page of the held pointer. Then the pointer
 * is dropped and up to argv[3] more objects churn: its 2 MiB-aligned window must be handed out
 * again (the addresses are not kept out of use for ever).
 *
 * The program's own checks never hold the address: only its page number, xor-ed with MASK (so
 * that neither it nor a copy of it points anywhere). Prints held_hits, reused_after (or
 * "never_reused") and OK. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>
#include "common.h"

#define MASK 0x5a5a5a5a5a5a5a5aULL
#define RING 64

static void *volatile global_hold;         /* (a) */
static void **volatile box;                /* (c): a live object that holds the pointer */
static _Atomic uint64_t handoff;           /* (d): the masked address, for the thread */
static atomic_int thread_has_it;
static int wake[2];

static void *holder(void *arg) {
    (void)arg;
    while (!atomic_load(&handoff))
        usleep(1000);
    void *volatile local = (void *)(uintptr_t)(atomic_exchange(&handoff, 0) ^ MASK);
    atomic_store(&thread_has_it, 1);
    char c;
    while (read(wake[0], &c, 1) < 0) /* sleeps in the kernel: parked there */
        ;
    local = NULL;
    return (void *)local;
}

/* Frees an object, keeps its pointer where `where` says, returns its masked page number
 * (*window: the masked number of its 2 MiB-aligned window). */
__attribute__((noinline)) static uint64_t setup(const char *where, void *volatile *stack_slot,
                                                uint64_t *window) {
    char *v = malloc(3000); /* (a size the churn uses: no ready page of its class stays behind) */
    strcpy(v, "dangling");
    free(v);
    uint64_t page = ((uintptr_t)v >> 12) ^ MASK;
    *window = ((uintptr_t)v >> 21) ^ MASK;
    if (!strcmp(where, "global"))
        global_hold = v;
    else if (!strcmp(where, "stack"))
        *stack_slot = v + 8; /* (an interior pointer) */
    else if (!strcmp(where, "heap"))
        box[3] = v;
    else if (!strcmp(where, "thread")) {
        atomic_store(&handoff, (uintptr_t)v ^ MASK);
        while (!atomic_load(&thread_has_it))
            usleep(1000);
    }
    v = NULL;
    return page;
}

/* Overwrites the dead stack below the caller, where stale copies of the pointer may lie. */
__attribute__((noinline)) static void scrub_stack(void) {
    volatile char buf[64 * 1024];
    for (size_t i = 0; i < sizeof buf; i += 8)
        buf[i] = 0;
}

/* n objects through the ring (each checked before its free); returns how many covered the
 * page (2^shift bytes) whose masked number is page, stopping at the first if first_only (*at:
 * the allocation that did first, counted from 1). */
__attribute__((noinline)) static long churn(long n, uint64_t page, int shift, bool first_only,
                                            long *at) {
    static unsigned char *ring[RING];
    static size_t len[RING];
    static uint64_t seed = 12345;
    long hits = 0;
    for (long i = 0; i < n; i++) {
        int k = (int)(i % RING);
        if (ring[k]) {
            check(ring[k][0] == (unsigned char)k && ring[k][len[k] - 1] == (unsigned char)k,
                  "churned object intact");
            free(ring[k]);
        }
        uint64_t r = rng_next(&seed);
        len[k] = 2100 + r % 1900; /* (one object a page in fast mode too) */
        ring[k] = malloc(len[k]);
        if (!ring[k]) {
            printf("FAIL malloc returned NULL at %ld\n", i);
            exit(2);
        }
        ring[k][0] = ring[k][len[k] - 1] = (unsigned char)k;
        uint64_t lo = (uintptr_t)ring[k] >> shift;
        uint64_t hi = ((uintptr_t)ring[k] + len[k] - 1) >> shift;
        uint64_t p = page ^ MASK; /* (a page number: points nowhere) */
        if (p >= lo && p <= hi) {
            hits++;
            if (at && !*at)
                *at = i + 1;
            if (first_only)
                break;
        }
    }
    return hits;
}

int main(int argc, char **argv) {
    test_init();
    const char *where = argc > 1 ? argv[1] : "none";
    long n1 = argc > 2 ? atol(argv[2]) : 600000, n2 = argc > 3 ? atol(argv[3]) : 1200000;
    pthread_t t;
    if (!strcmp(where, "thread")) {
        check(pipe(wake) == 0, "pipe");
        check(pthread_create(&t, NULL, holder, NULL) == 0, "thread started");
    }
    box = malloc(200 * sizeof(void *));
    memset((void *)box, 0, 200 * sizeof(void *));
    churn(12000, 0, 12, false, NULL); /* past the box's chunks (a thread's slice of addresses) */
    void *volatile stack_slot = NULL; /* (b) */
    uint64_t window, page = setup(where, &stack_slot, &window);
    churn(2048, 0, 12, false, NULL); /* the victim's neighbours are freed too */
    scrub_stack();
    long first = 0;
    long held = churn(n1, page, 12, false, &first);
    printf("held_hits %ld\n", held);
    if (held)
        printf("held_first_hit %ld\n", first);
    if (strcmp(where, "none"))
        check(held == 0, "no new object on the page of a held pointer");
    /* Drop it. */
    global_hold = NULL;
    stack_slot = NULL;
    box[3] = NULL;
    if (!strcmp(where, "thread")) {
        check(write(wake[1], "x", 1) == 1, "wake");
        pthread_join(t, NULL);
    }
    scrub_stack();
    long at = 0;
    churn(n2, window, 21, true, &at);
    if (at)
        printf("reused_after %ld\n", at);
    else
        printf("never_reused\n");
    check(at != 0, "the addresses around it are handed out again once the pointer is dropped");
    free((void *)box);
    return test_finish();
}
