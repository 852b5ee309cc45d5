/* api: the custom-allocator API of include/oscar.h, exported as one versioned table
 * (base/api_abi.h); shim/oscar_api.c finds it with dlsym. The arenas and views themselves live
 * in heap/views.c. */
#include "base/api_abi.h"
#include "heap/views.h"
#include "modes/alloc.h"

/* Each entry initialises the allocator first: the API may be the process's first call. */
static int api_active(void) { return views_active(); }
static void *api_arena_alloc(size_t len) {
    oscar_init();
    return views_arena_alloc(len);
}
static int api_arena_free(void *arena) {
    oscar_init();
    return views_arena_free(arena);
}
static int api_view_create(void *ptr, size_t len, void **view) {
    oscar_init();
    return views_create(ptr, len, view);
}
static int api_view_revoke(void *view) {
    oscar_init();
    return views_revoke(view);
}
static void *api_view_origin(void *view) {
    oscar_init();
    return views_origin(view);
}

OSCAR_EXPORT const struct oscar_api_v1 __oscar_api_v1 = {
    .version = 1,
    .size = sizeof(struct oscar_api_v1),
    .active = api_active,
    .arena_alloc = api_arena_alloc,
    .arena_free = api_arena_free,
    .view_create = api_view_create,
    .view_revoke = api_view_revoke,
    .view_origin = api_view_origin,
};

