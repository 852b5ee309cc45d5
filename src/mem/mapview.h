/* mapview: how many kernel mappings (VMAs) an operation on our region adds or removes,
 * predicted from the page table, so maplimit can keep count without asking the kernel.
 * The kernel keeps neighbouring pages in one mapping when they look alike: PROT_NONE
 * next to PROT_NONE, private anonymous next to private anonymous, and shared pages of the
 * memfd at consecutive file offsets. */
#ifndef OSCAR_MAPVIEW_H
#define OSCAR_MAPVIEW_H
#include "base/core.h"

/* What a page looks like to the kernel. */
enum page_view { VIEW_NONE, VIEW_SHARED, VIEW_ANON, VIEW_OTHER };

/* How PK_ARENA / PK_VIEW pages look (heap/views.c registers it at init). */
void mapview_set_arena_hook(enum page_view (*hook)(uintptr_t page, uint64_t e, uint64_t *canon));

/* Change in the number of mappings if pages [first, last] become `to` (for VIEW_SHARED:
 * canonical pages canon, canon + 1, ... in order). Call before changing the entries. */
long mapview_delta(uintptr_t first, uintptr_t last, enum page_view to, uint64_t canon);
/* Revocation: the pages become PROT_NONE. */
static inline long shadow_revoke_delta(uintptr_t first, uintptr_t last) {
    return mapview_delta(first, last, VIEW_NONE, 0);
}
#endif
