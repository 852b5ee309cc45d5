/* export: the libc allocation API, forwarded to alloc.c. Argument checks and errno are
 * handled here, as glibc does them; free() preserves errno. */
#define _GNU_SOURCE
#include "modes/alloc.h"
#include "modes/protect.h"
#include "modes/off.h"
#include "heap/large.h"
#include "base/core.h"
#include "base/stats.h"
#include "export/fork.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

/* Start-up: the allocator is usually initialised already by the first malloc (often inside
 * ld.so); the fork handlers are registered here, once malloc works, since pthread_atfork
 * may allocate. Runs before the program's main. */
__attribute__((constructor)) static void export_start(void) {
    oscar_init();
    if (protect_on())
        protect_fork_init(); /* (protect mode has its own heap and handlers) */
    else if (!off_now())
        fork_init();
}

OSCAR_EXPORT void *malloc(size_t size) { return alloc_malloc(size); }

/* The calling thread's errno, its address noted once: free() keeps errno, and a call to
 * libc's __errno_location on every free was 1% of a program that frees fast (churn). The
 * address is the thread's for its whole life (a fork child's thread has the parent's). */
static __thread int *errno_at __attribute__((tls_model("initial-exec")));

static inline int *thread_errno(void) {
    int *e = errno_at;
    if (__builtin_expect(!e, 0))
        e = errno_at = &errno;
    return e;
}

OSCAR_EXPORT void free(void *p) {
    int *e = thread_errno(), saved = *e;
    alloc_free(p, CALL_FREE);
    *e = saved;
}

OSCAR_EXPORT void cfree(void *p) { free(p); }

OSCAR_EXPORT void *calloc(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_calloc(total);
}

OSCAR_EXPORT void *realloc(void *p, size_t size) { return alloc_realloc(p, size); }

OSCAR_EXPORT void *reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_realloc(p, total);
}

static bool power_of_two(size_t x) { return x && !(x & (x - 1)); }

OSCAR_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
    if (!power_of_two(align) || align % sizeof(void *) != 0)
        return EINVAL;
    int saved = errno;
    void *p = alloc_aligned(size, align);
    /* (glibc's failed allocation leaves errno ENOMEM behind it; a success keeps the caller's) */
    errno = p ? saved : ENOMEM;
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* glibc's memalign: alignments that are not a power of two are rounded up to one. */
OSCAR_EXPORT void *memalign(size_t align, size_t size) {
    if (align > (SIZE_MAX >> 1) + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (!power_of_two(align)) {
        size_t a = OSCAR_MIN_ALIGN;
        while (a < align)
            a <<= 1;
        align = a;
    }
    return alloc_aligned(size, align);
}

OSCAR_EXPORT void *aligned_alloc(size_t align, size_t size) { return memalign(align, size); }

OSCAR_EXPORT void *valloc(size_t size) { return alloc_aligned(size, OSCAR_PAGE); }

OSCAR_EXPORT void *pvalloc(size_t size) {
    if (size > SIZE_MAX - OSCAR_PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_aligned(align_up(size ? size : 1, OSCAR_PAGE), OSCAR_PAGE);
}

OSCAR_EXPORT size_t malloc_usable_size(void *p) { return alloc_usable_size(p); }

/* glibc tuning knobs mean nothing to Oscar: they change nothing, and the answer is glibc's
 * (2.36): 0 for a fast-bin limit it refuses (past 160 bytes, or negative), 1 for the rest. */
OSCAR_EXPORT int mallopt(int param, int value) {
    if (param == M_MXFAST)
        return (size_t)value <= 80 * sizeof(size_t) / 4;
    return 1;
}

OSCAR_EXPORT int malloc_trim(size_t pad) {
    (void)pad; /* (Oscar keeps no top of heap that a pad would spare) */
    int saved = errno;
    int released = alloc_trim();
    errno = saved;
    return released;
}

static size_t gauge(enum stat_id id) {
    return (size_t)atomic_load_explicit(&oscar_stats[id], memory_order_relaxed);
}

OSCAR_EXPORT struct mallinfo2 mallinfo2(void) {
    struct mallinfo2 m;
    memset(&m, 0, sizeof m);
    m.arena = gauge(STAT_CANONICAL_BYTES);
    m.hblkhd = gauge(STAT_LARGE_BYTES);
    m.hblks = 0;
    m.uordblks = m.arena;
    m.usmblks = 0;
    return m;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
OSCAR_EXPORT struct mallinfo mallinfo(void) {
    struct mallinfo2 m2 = mallinfo2();
    struct mallinfo m;
    memset(&m, 0, sizeof m);
    m.arena = (int)m2.arena;
    m.hblkhd = (int)m2.hblkhd;
    m.uordblks = (int)m2.uordblks;
    return m;
}
#pragma GCC diagnostic pop

OSCAR_EXPORT void malloc_stats(void) {}
