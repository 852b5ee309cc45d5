/* views: arenas and views, the custom-allocator API of include/oscar.h inside the runtime
 * (export/api.c exports them as one table).
 *
 * An arena is a stretch of shadow region mapped MAP_SHARED from its own memfd (the arena
 * file: offsets handed out by a bump pointer, never reused, punched when the arena is
 * freed). A view maps the arena file pages under a range at fresh region addresses.
 *
 * Page entries (region.h): PK_ARENA / PK_VIEW; payload bit 0 = dead (arena freed, view
 * revoked), the rest = distance in pages to the first page. The first page of each arena or
 * view has a 16-byte side record (indexed by page, like stack records):
 *   arena: word0 = file page << 32 | live views, word1 = length in bytes
 *   view:  word0 = the origin address (arena address of the view's first byte),
 *          word1 = length in bytes. */
#ifndef OSCAR_VIEWS_H
#define OSCAR_VIEWS_H
#include "mem/mapview.h"
#include "heap/object.h"

static inline bool entry_api_dead(uint64_t e) { return entry_payload(e) & 1; }
static inline uint64_t entry_api_dist(uint64_t e) { return entry_payload(e) >> 1; }

/* The operations of the API table (base/api_abi.h): results as include/oscar.h says. */
int views_active(void);
void *views_arena_alloc(size_t len);
int views_arena_free(void *arena);
int views_create(void *ptr, size_t len, void **view);
int views_revoke(void *view);
void *views_origin(void *view);
/* Registers the hooks mem/mapview.c and report/report.c call (views_page_view,
 * views_origin_of). Called once at init. */
void views_register_hooks(void);
/* object_describe for PK_ARENA / PK_VIEW pages. */
void views_describe(uintptr_t addr, uintptr_t page, uint64_t e, struct object_info *o);
/* mapview: how the kernel sees an arena or view page. */
enum page_view views_page_view(uintptr_t page, uint64_t e, uint64_t *canon);
/* report: the origin of a view (0 if addr is not in one). */
uintptr_t views_origin_of(uintptr_t addr);
/* reclaim.c: the side records of pages [page, page + pages), to give back with the chunk's
 * other metadata; false while the API was never used (no records). */
bool views_records_range(uintptr_t page, size_t pages, uintptr_t *at, size_t *len);
/* fork.c: copy the arena file (prepare), drop the copy (parent), remap (child). */
void views_fork_prepare(void);
void views_fork_parent(void);
void views_fork_child(void);
#endif
