/* small: objects of at most SMALL_MAX bytes. Each lives in a slot of a canonical page and
 * is reached through a shadow page of its own (K = 1). Shadows are created a run at a time
 * (one mmap for up to RUN_PAGES objects, one kernel mapping) and wait in the thread's
 * cache; free revokes the object's shadow, then gives its slot back. */
#ifndef OSCAR_SMALL_H
#define OSCAR_SMALL_H
#include "mem/mapview.h"
#include "mem/region.h"
#include "heap/thread.h"

void *small_alloc_from_span(unsigned cls, size_t size);

/* Fast path: pop a ready shadow from this thread's cache. No lock, no syscall. */
static inline void *small_alloc(unsigned cls, size_t size) {
    struct thread_cache *tc = oscar_tc;
    struct class_cache *c = &tc->cls[cls];
    if (likely(c->count)) {
        uintptr_t a = c->objs[--c->count];
        _Atomic uint64_t *ep = region_entry(a);
        uint64_t e = atomic_load_explicit(ep, memory_order_relaxed);
        atomic_store_explicit(ep, entry_with_size(entry_with_kind(e, PK_SMALL), size),
                              memory_order_release);
        tc->n_alloc++;
        tc->n_small++;
        return (void *)a;
    }
    return small_alloc_from_span(cls, size);
}

/* Free the live small object at a (entry e, already checked to be its exact start).
 * Returns false if e changed under us (the caller reloads and dispatches again). */
bool small_free(uintptr_t a, uint64_t e);
/* A shadow page around `page` (canonical page canon) was guarded: once every page of its
 * run (one kernel mapping: consecutive canonical pages of strict, or of packed, shadows)
 * is guarded, replace the run by PROT_NONE memory, which merges with the free space around
 * it, so dead runs never pile up as kernel mappings. (Two threads finishing one run at the
 * same moment may both miss it: the run then stays, guarded and harmless.) */
void shadow_retire_run_if_dead(uintptr_t page, uint64_t canon, bool packed);
/* Revoke a quarantined shadow if the mapping budget allows; true when done. */
bool small_revoke_deferred(uintptr_t page);
#endif
