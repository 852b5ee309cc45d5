/* Helpers for the protect-mode root tests (tests/test_protect.py). Not a program itself.
 *
 * Each program holds a pointer to one freed object in one kind of root only, churns objects
 * of the same size class while marks run (the test sets a tiny quarantine floor), and counts
 * how often a new allocation is the freed object: "held_reused 0" is the claim. Then it drops
 * the pointer, churns again, and counts again: "released_reused" > 0 shows the memory is
 * handed out again (and that the check above could have failed). The program itself never
 * keeps the freed address in plain sight: its own copies are XORed with MASK, so they are no
 * pointers to a conservative mark. With the argument "control" the root is left empty:
 * held_reused must then be > 0 too. */
#ifndef OSCAR_PROTECT_COMMON_H
#define OSCAR_PROTECT_COMMON_H
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aULL)
#define OBJ_SIZE 48
#define BATCH 64

static int control;

/* malloc that says so and exits when it returns NULL (errno), rather than a bare SIGSEGV at
 * the first write: a crash of a shape program then tells an allocation that failed from a
 * fault of Oscar's (which names itself: "oscar: internal error: crash"). */
static inline void *must_malloc(size_t size) {
    void *p = malloc(size);
    if (!p) {
        int e = errno;
        fprintf(stderr, "malloc(%zu) returned NULL (errno %d)\n", size, e);
        exit(3);
    }
    return p;
}

/* PROTECT_BALLAST_KIB=N: first N KiB of live objects of 16-4096 bytes, never freed, that
 * point to nothing (a heap of many pages: a mark then shares its reading among its team's
 * threads, scan/team.h, and the object that holds a root test's pointer lies past them). */
static inline void ballast(void) {
    const char *kib = getenv("PROTECT_BALLAST_KIB");
    size_t left = kib ? (size_t)strtoul(kib, NULL, 10) << 10 : 0;
    for (size_t size = 16; left >= size; size = size >= 4096 ? 16 : size * 2) {
        memset(must_malloc(size), 0x22, size);
        left -= size;
    }
}

static inline void protect_test_init(int argc, char **argv) {
    test_init();
    ballast();
    for (int i = 1; i < argc; i++)
        control |= strcmp(argv[i], "control") == 0;
}

/* A fresh object, returned masked (its raw address dies with this frame). */
__attribute__((noinline)) static uintptr_t make_object(void) {
    unsigned char *p = malloc(OBJ_SIZE);
    memset(p, 0x11, OBJ_SIZE);
    return (uintptr_t)p ^ MASK;
}

__attribute__((noinline)) static void free_object(uintptr_t masked) {
    free((void *)(masked ^ MASK));
}

/* Overwrite the dead stack below the caller's frame (stale copies of raw addresses). */
__attribute__((noinline)) static void clear_stack(void) {
    volatile char buf[65536];
    memset((char *)buf, 0, sizeof buf);
}

/* Allocate and free `rounds` batches of `batch` (<= BATCH) objects of `size` bytes (the freed
 * one's class); how many of the allocations were the freed object? */
__attribute__((noinline)) static int churn_of(uintptr_t masked, int rounds, size_t size,
                                              int batch) {
    int hits = 0;
    void *volatile objs[BATCH];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < batch; i++) {
            objs[i] = malloc(size);
            if (((uintptr_t)objs[i] ^ MASK) == masked)
                hits++;
        }
        for (int i = 0; i < batch; i++) {
            free(objs[i]);
            objs[i] = NULL;
        }
    }
    return hits;
}

static inline int churn(uintptr_t masked, int rounds) {
    return churn_of(masked, rounds, OBJ_SIZE, BATCH);
}

/* *to = *from, *from = 0, through one scratch register cleared after: no copy of the pointer
 * is left in a register (a parked thread's registers are roots: a stale copy would hide a
 * lost pointer). For the shapes that move the only pointer while marks run. */
static inline __attribute__((unused)) void move_word(void *volatile *to, void *volatile *from) {
    __asm__ volatile("movq (%1), %%rax\n\t"
                     "movq %%rax, (%0)\n\t"
                     "movq $0, (%1)\n\t"
                     "xorl %%eax, %%eax"
                     :
                     : "r"(to), "r"(from)
                     : "rax", "memory");
}

#define ROUNDS 400

static inline void report(int held, int released) {
    printf("held_reused %d\n", held);
    printf("released_reused %d\n", released);
}

/* Monotonic seconds, and churn batches for `secs` of them (the shapes whose pointer moves
 * while marks run, for a time rather than a count of rounds). By the system call, not libc's
 * vDSO: protect_shape_after_bss moves the vDSO, and libc's clock_gettime would then jump into
 * nothing. */
static inline __attribute__((unused)) double now_seconds(void) {
    struct timespec t;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static inline __attribute__((unused)) int churn_for(uintptr_t masked, double secs) {
    int held = 0;
    double end = now_seconds() + secs;
    while (now_seconds() < end)
        held += churn(masked, 20);
    return held;
}

/* The released phase's count: `hits` from its churn and, if that churn saw the object never
 * come back, more churn until it does (at most 10 s). A loaded machine may run the marks late
 * for the churn the phase gives them; a passing run pays nothing, a release that never comes
 * still counts 0. */
static inline __attribute__((unused)) int released_within_of(uintptr_t masked, int hits,
                                                             double secs, size_t size) {
    double end = now_seconds() + secs;
    while (hits == 0 && now_seconds() < end)
        hits += churn_of(masked, 20, size, BATCH);
    return hits;
}

static inline __attribute__((unused)) int released_within(uintptr_t masked, int hits,
                                                          double secs) {
    return released_within_of(masked, hits, secs, OBJ_SIZE);
}

/* How long a released phase may wait: PROTECT_RELEASE_WAIT_S=N seconds (10 without it; 0 for
 * a test that expects no release and need not wait for one). */
static inline double release_wait_secs(void) {
    const char *secs = getenv("PROTECT_RELEASE_WAIT_S");
    return secs ? strtod(secs, NULL) : 10.0;
}

static inline __attribute__((unused)) int released_after(uintptr_t masked, int hits) {
    return released_within(masked, hits, release_wait_secs());
}

static void *(*moved_by)(void *);

/* The mover, then its dead stack cleared: an exited thread's stack stays mapped (glibc keeps
 * it for the next thread), and a copy of the pointer left there below the mover's frames (a
 * park signal's frame that caught it in a register) would keep the object, released. */
static inline __attribute__((unused)) void *run_mover(void *arg) {
    moved_by(arg);
    clear_stack();
    return NULL;
}

/* The shapes whose pointer a thread keeps moving: the object, its pointer in *start (unless
 * control), `mover` started; churn for held_secs; *stop set (the mover clears the pointer
 * where it is and returns), joined; churn for released_secs; report. */
static inline __attribute__((unused)) void check_moved_by(void *volatile *start,
                                                         void *(*mover)(void *),
                                                         atomic_int *stop, double held_secs,
                                                         double released_secs) {
    uintptr_t m = make_object();
    if (!control)
        *start = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    pthread_t t;
    moved_by = mover;
    pthread_create(&t, NULL, run_mover, NULL);
    int held = churn_for(m, held_secs);
    atomic_store(stop, 1);
    pthread_join(t, NULL);
    clear_stack();
    report(held, released_after(m, churn_for(m, released_secs)));
}

/* check_held_in, with [seal, seal + len) given protection prot while the object is freed
 * and churned (a page the program seals: read-only or inaccessible), then made writable
 * again before the slot is cleared. */
__attribute__((noinline, unused)) static void check_sealed_in(void *volatile *slot, void *seal,
                                                              size_t len, int prot) {
    uintptr_t m = make_object();
    *slot = control ? NULL : (void *)(m ^ MASK);
    mprotect(seal, len, prot);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    mprotect(seal, len, PROT_READ | PROT_WRITE);
    *slot = NULL;
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS)));
}

/* The plain check, the pointer held at *slot (a global, a live heap object, a mapping of the
 * program's): make the object, put the pointer there (unless control), free the object,
 * churn, clear the slot, churn again (and on, up to wait_secs, until the object is handed
 * out), report. */
__attribute__((noinline, unused)) static void check_held_within(void *volatile *slot,
                                                                double wait_secs) {
    uintptr_t m = make_object();
    if (!control)
        *slot = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    *slot = NULL;
    clear_stack();
    report(held, released_within(m, churn(m, ROUNDS), wait_secs));
}

__attribute__((unused)) static void check_held_in(void *volatile *slot) {
    check_held_within(slot, release_wait_secs());
}
#endif
