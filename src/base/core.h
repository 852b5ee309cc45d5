/* Oscar: shared definitions for every module of the runtime.
 *
 * Glossary
 *   canonical page  A 4 KiB page of the memfd-backed canonical heap. It holds the bytes of
 *                   small objects of one size class (slots) and is never handed to the user.
 *   shadow page     A virtual page, mapped (MAP_SHARED) onto one canonical page, through which
 *                   the user reaches exactly one object. free() revokes it (a guard marker,
 *                   or PROT_NONE), so any dangling pointer into it faults. Shadow addresses
 *                   come from a bump pointer and are never reused (until the region is
 *                   used up: then those of long-dead chunks are, reclaim.h).
 *   span            RUN_PAGES consecutive canonical pages given to one size class.
 *   run             The shadow pages created by one mmap: consecutive canonical pages of a
 *                   span at consecutive shadow addresses, so the kernel keeps them as ONE
 *                   mapping (VMA). A run holds one object per canonical page.
 *   K               Objects per shadow page: 1 (classic Oscar), or a whole canonical page
 *                   for packed spans near the kernel's mapping limit (packed.h).
 *   guard marker    MADV_GUARD_INSTALL (Linux 6.15+ for shared mappings): the page faults on
 *                   every access but stays inside its run's kernel mapping, so revoking
 *                   never splits a mapping. Without it, revocation maps PROT_NONE over the
 *                   page, which costs a mapping per isolated freed object.
 *   large object    More than SMALL_MAX bytes: private anonymous pages of its own, taken from
 *                   the same never-reused address region, revoked on free.
 *   quarantine      Freed objects whose shadow we could not revoke (kernel mapping limit): the
 *                   slot is never reused until the shadow is revoked.
 *   page entry      8 bytes per shadow page in a flat table indexed by page number: what the
 *                   page holds. All metadata is out of band: nothing next to user data is
 *                   trusted.
 */
#ifndef OSCAR_INTERNAL_H
#define OSCAR_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lock.h"

#define OSCAR_PAGE 4096UL
#define OSCAR_PAGE_SHIFT 12
#define OSCAR_SMALL_MAX 2048UL
#define OSCAR_MIN_ALIGN 16UL
#define OSCAR_MAX_RUN_PAGES 1024

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define OSCAR_HIDDEN __attribute__((visibility("hidden")))
#define OSCAR_EXPORT __attribute__((visibility("default")))

static inline uintptr_t align_up(uintptr_t v, uintptr_t a) { return (v + a - 1) & ~(a - 1); }
static inline uintptr_t pages_for(size_t bytes) {
    return (bytes + OSCAR_PAGE - 1) >> OSCAR_PAGE_SHIFT;
}

/* Where the allocator's initialisation stands (modes/alloc.c's oscar_init runs it; base/core.c
 * holds the word): 0 = not started, 1 = running, 2 = done. Lower layers read it and, before
 * 2, return "not yet" to their caller instead of initialising. */
extern atomic_int oscar_init_state;

#endif
