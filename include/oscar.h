/* oscar.h: protect the objects of a custom allocator with Oscar.
 *
 * Oscar protects every object that passes through malloc. An allocator that carves objects
 * out of its own big blocks (a slab or pool allocator) hides them from Oscar: a dangling
 * pointer to a freed pool object still reaches memory the pool hands out again. With this
 * API the allocator gives each object a *view*: a fresh virtual address, never used before
 * and never used again, aliasing the object's bytes in an *arena*. Revoking the view on free
 * makes every later access through it fault with Oscar's normal report
 * (`oscar: heap-use-after-free on address ...`), while the arena memory itself is reused by
 * the allocator as before.
 *
 *     char *slab = oscar_arena_alloc(1 << 20);          // the allocator's backing memory
 *     void *item;
 *     if (oscar_view_create(slab + off, size, &item) != OSCAR_OK)
 *         item = slab + off;                              // unprotected, still correct
 *     ...                                                 // the program uses item
 *     void *raw = oscar_view_origin(item);                // == slab + off
 *     oscar_view_revoke(item);                            // item faults from now on
 *
 * Link with `pkg-config --cflags --libs oscar` (the static library liboscar_api.a). Without
 * Oscar loaded (no LD_PRELOAD of liboscar.so) every call is a harmless pass-through:
 * oscar_arena_alloc is a page-aligned malloc, a view is the pointer it was created from,
 * revoking does nothing and returns OSCAR_OK, oscar_view_origin returns its argument and
 * oscar_active returns 0. A program correct under Oscar behaves the same without it.
 *
 * Thread safety: every function may be called from any thread at any time, concurrently
 * with each other and with malloc/free and fork. Revoking the same view from two threads:
 * exactly one call returns OSCAR_OK. None of them takes a lock shared with malloc.
 *
 * Misuse (revoking twice, a range Oscar did not hand out, an interior pointer) never crashes
 * the program: the call returns an error code and, under Oscar, prints one line
 *     oscar: api-error: FUNCTION(0xADDR): OSCAR_ECODE: explanation
 * on stderr (or OSCAR_REPORT_FILE) followed by the stack of the call and, for a view or
 * arena, where it was created and revoked. Without Oscar misuse cannot be detected.
 *
 * Costs under Oscar: a view costs one mmap to create and one to revoke, a page of address
 * space per page it spans (never reused), 16 bytes of metadata forever, and one kernel
 * mapping while live (vm.max_map_count, 65530 by default, limits live views to about
 * 60,000 unless raised; near the limit oscar_view_create returns OSCAR_ENOMEM and the
 * allocator should hand out the arena pointer unprotected).
 */
#ifndef OSCAR_H
#define OSCAR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OSCAR_API_VERSION 1

enum oscar_result {
    OSCAR_OK = 0,
    OSCAR_EINVAL = 1,   /* a NULL out-pointer, an interior pointer, a size that overflows */
    OSCAR_ENOTOURS = 2, /* the range is not inside one live Oscar arena (or not a view) */
    OSCAR_EREVOKED = 3, /* the view was already revoked, or the arena already freed */
    OSCAR_EBUSY = 4,    /* oscar_arena_free: views of the arena are still live */
    OSCAR_ENOMEM = 5,   /* out of address space, memory, or kernel mappings */
    OSCAR_ENOTSUP = 6,  /* liboscar.so is loaded but does not implement this API version */
};

/* A short English description of a result code ("view already revoked", ...). Never NULL. */
const char *oscar_strerror(int result);

/* 1 when Oscar (liboscar.so) is loaded and views really protect, 0 in pass-through mode. */
int oscar_active(void);

/* Backing memory for a custom allocator: len bytes (rounded up to whole pages), page
 * aligned, zero filled, readable and writable, in Oscar's address region. NULL when len is 0
 * or memory is exhausted (errno EINVAL / ENOMEM). Arena addresses are never reused after
 * oscar_arena_free; accessing a freed arena faults with the use-after-free report.
 * Do not pass arena memory to free() or realloc(). */
void *oscar_arena_alloc(size_t len);

/* Give an arena back. NULL: OSCAR_OK. OSCAR_EBUSY (nothing freed) while views of it are
 * live: revoke them first. OSCAR_EREVOKED when already freed, OSCAR_EINVAL for a pointer
 * inside an arena but not its start, OSCAR_ENOTOURS for anything else. */
int oscar_arena_free(void *arena);

/* Map the pages covering [ptr, ptr + len) at a fresh address and store in *view the address
 * that aliases ptr (same offset within its page). Reads and writes through the view and
 * through ptr see the same bytes. The range must lie inside one live arena (OSCAR_ENOTOURS
 * otherwise, e.g. for malloc memory, a freed arena, or a view: pass oscar_view_origin of
 * it); len 0 counts as 1. Bytes of the covered pages outside the range are reachable through
 * the view too (page granularity, as for malloc'd objects). On any error *view is set to
 * NULL and nothing is mapped; on OSCAR_ENOMEM the allocator may hand out ptr itself. */
int oscar_view_create(void *ptr, size_t len, void **view);

/* Revoke a view: from now on every access through any address of it faults with
 * `oscar: heap-use-after-free on address ...` naming the view's range, where it was created
 * and where it was revoked. The arena bytes are untouched and stay usable through the arena
 * pointer (call oscar_view_origin first if you need it). view must be exactly what
 * oscar_view_create returned: OSCAR_EINVAL for an interior pointer, OSCAR_EREVOKED the
 * second time, OSCAR_ENOTOURS for anything that is not a view. */
int oscar_view_revoke(void *view);

/* The arena address a view address aliases (also for revoked views and interior
 * addresses); any pointer that is not inside a view is returned unchanged. */
void *oscar_view_origin(void *view);

#ifdef __cplusplus
}
#endif
#endif
