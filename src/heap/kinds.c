/* kinds: see kinds.h. */
#include "heap/kinds.h"
#include "mem/canon.h"
#include "mem/region.h"
#include "base/size_class.h"
#include "os/os.h"

#define SLOTS_PER_PAGE 256 /* (the free-slot bitmap's width: canon.h) */
#define PER_WORD 32        /* two bits per object */

_Atomic bool kinds_used;
/* The kind tables (kinds_used, above, is read by modes/alloc.c: set once, relaxed). */
static struct {
    /* Reserved once by the first object of another kind (tables(): CAS on small_kinds,
     * then large_kinds published with release); their words are written lock-free. */
    _Atomic(_Atomic uint64_t *) small_kinds; /* by canonical page * 256 + slot */
    _Atomic(_Atomic uint64_t *) large_kinds; /* by region page */
    uint64_t small_n, large_n; /* objects each table covers: set once by kinds_init */
} kinds_state;

/* The tables are reserved on the first object of another kind than malloc's, not at start:
 * a C program (bash, under a RLIMIT_AS it lowers itself) never reserves their address space,
 * which is large (two bits per slot of the whole canonical heap and per page of the region). */
int kinds_init(void) {
    kinds_state.small_n = atomic_load(&oscar_canon.max_pages) * SLOTS_PER_PAGE;
    kinds_state.large_n = (oscar_region.end - oscar_region.base) >> OSCAR_PAGE_SHIFT;
    return 0;
}

/* Reserve both tables once (a thread that loses the race gives its copies back). False when
 * the address space is refused: then no kinds are recorded. */
static bool tables(void) {
    if (atomic_load_explicit(&kinds_state.large_kinds, memory_order_acquire))
        return true;
    int err = 0;
    size_t sb = (kinds_state.small_n / PER_WORD + 1) * sizeof(uint64_t);
    size_t lb = (kinds_state.large_n / PER_WORD + 1) * sizeof(uint64_t);
    _Atomic uint64_t *s = os_alloc_meta(sb, &err), *l = s ? os_alloc_meta(lb, &err) : NULL;
    if (!l) {
        if (s)
            os_unmap((void *)s, sb);
        return false;
    }
    _Atomic uint64_t *none = NULL;
    if (!atomic_compare_exchange_strong(&kinds_state.small_kinds, &none, s)) {
        os_unmap((void *)s, sb);
        os_unmap((void *)l, lb);
        while (!atomic_load_explicit(&kinds_state.large_kinds, memory_order_acquire))
            ; /* (the winner publishes the second table next) */
        return true;
    }
    atomic_store_explicit(&kinds_state.large_kinds, l, memory_order_release);
    return true;
}

/* The word and shift of the object at a; NULL when it has none. */
static _Atomic uint64_t *word_of(uintptr_t a, uint64_t e, unsigned *shift) {
    uint64_t i;
    _Atomic uint64_t *table;
    switch (entry_kind(e)) {
    case PK_SMALL:
        i = entry_canon(e) * SLOTS_PER_PAGE + entry_slot(e);
        table = atomic_load_explicit(&kinds_state.small_kinds, memory_order_acquire);
        if (i >= kinds_state.small_n)
            return NULL;
        break;
    case PK_PACKED:
        i = entry_canon(e) * SLOTS_PER_PAGE + class_slot_at(a & (OSCAR_PAGE - 1), entry_class(e));
        table = atomic_load_explicit(&kinds_state.small_kinds, memory_order_acquire);
        if (i >= kinds_state.small_n)
            return NULL;
        break;
    case PK_LARGE:
        i = region_page_index(a);
        table = atomic_load_explicit(&kinds_state.large_kinds, memory_order_acquire);
        if (i >= kinds_state.large_n)
            return NULL;
        break;
    default:
        return NULL;
    }
    if (!table)
        return NULL;
    *shift = (unsigned)(i % PER_WORD) * 2;
    return &table[i / PER_WORD];
}

void kinds_set(uintptr_t a, uint64_t e, enum alloc_kind kind) {
    unsigned shift;
    if (kind == KIND_MALLOC || !tables())
        return;
    _Atomic uint64_t *w = word_of(a, e, &shift);
    if (!w)
        return;
    if (!atomic_load_explicit(&kinds_used, memory_order_relaxed))
        atomic_store_explicit(&kinds_used, true, memory_order_relaxed);
    atomic_fetch_or_explicit(w, (uint64_t)kind << shift, memory_order_relaxed);
}

enum alloc_kind kinds_get(uintptr_t a, uint64_t e) {
    unsigned shift;
    _Atomic uint64_t *w = word_of(a, e, &shift);
    if (!w)
        return KIND_MALLOC;
    return (enum alloc_kind)(atomic_load_explicit(w, memory_order_relaxed) >> shift & 3);
}

enum alloc_kind kinds_take(uintptr_t a, uint64_t e) {
    unsigned shift;
    _Atomic uint64_t *w = word_of(a, e, &shift);
    if (!w)
        return KIND_MALLOC;
    enum alloc_kind k = (enum alloc_kind)(atomic_load_explicit(w, memory_order_relaxed) >> shift & 3);
    if (k != KIND_MALLOC)
        atomic_fetch_and_explicit(w, ~((uint64_t)3 << shift), memory_order_relaxed);
    return k;
}
