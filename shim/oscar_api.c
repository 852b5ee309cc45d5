/* liboscar_api.a: the functions of include/oscar.h, linked into the program (or a wrapper
 * library). When liboscar.so is loaded they forward to it through the table it exports
 * (src/base/api_abi.h), looked up once with dlsym(RTLD_DEFAULT); otherwise they pass through:
 * arena = page-aligned malloc, view = the pointer itself, revoke = nothing, origin =
 * identity. Also compiled straight into test programs (#include of this file). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "../include/oscar.h"
#include "../src/base/api_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#define OSCAR_SHIM_PAGE 4096UL

/* NULL: pass-through (no liboscar.so, or one without this API version). */
static const struct oscar_api_v1 *oscar_shim_table(void) {
    static _Atomic(const struct oscar_api_v1 *) table;
    static atomic_int looked; /* 0 = not yet, 1 = done */
    if (atomic_load_explicit(&looked, memory_order_acquire))
        return atomic_load_explicit(&table, memory_order_relaxed);
    const struct oscar_api_v1 *t = (const struct oscar_api_v1 *)dlsym(RTLD_DEFAULT, OSCAR_API_SYMBOL);
    if (t && (t->version != 1 || t->size < sizeof *t))
        t = NULL;
    atomic_store_explicit(&table, t, memory_order_relaxed);
    atomic_store_explicit(&looked, 1, memory_order_release);
    return t;
}

const char *oscar_strerror(int result) {
    switch (result) {
    case OSCAR_OK:
        return "success";
    case OSCAR_EINVAL:
        return "invalid argument (NULL out-pointer, interior pointer or overflowing size)";
    case OSCAR_ENOTOURS:
        return "not memory from an oscar arena, or not a view";
    case OSCAR_EREVOKED:
        return "view already revoked (or arena already freed)";
    case OSCAR_EBUSY:
        return "the arena still has live views";
    case OSCAR_ENOMEM:
        return "out of memory, address space or kernel mappings";
    case OSCAR_ENOTSUP:
        return "operation not supported by the loaded oscar runtime";
    }
    return "unknown oscar result code";
}

int oscar_active(void) {
    const struct oscar_api_v1 *t = oscar_shim_table();
    return t ? t->active() : 0;
}

void *oscar_arena_alloc(size_t len) {
    const struct oscar_api_v1 *t = oscar_shim_table();
    if (t)
        return t->arena_alloc(len);
    if (!len || len > SIZE_MAX - OSCAR_SHIM_PAGE) {
        errno = len ? ENOMEM : EINVAL;
        return NULL;
    }
    size_t bytes = (len + OSCAR_SHIM_PAGE - 1) & ~(OSCAR_SHIM_PAGE - 1);
    void *p = NULL;
    int err = posix_memalign(&p, OSCAR_SHIM_PAGE, bytes);
    if (err) {
        errno = err;
        return NULL;
    }
    for (size_t i = 0; i < bytes; i += sizeof(long)) /* zero filled, as under oscar */
        *(long *)((char *)p + i) = 0;
    return p;
}

int oscar_arena_free(void *arena) {
    const struct oscar_api_v1 *t = oscar_shim_table();
    if (t)
        return t->arena_free(arena);
    free(arena);
    return OSCAR_OK;
}

int oscar_view_create(void *ptr, size_t len, void **view) {
    const struct oscar_api_v1 *t = oscar_shim_table();
    if (t)
        return t->view_create(ptr, len, view);
    if (!view)
        return OSCAR_EINVAL;
    *view = ptr;
    return OSCAR_OK;
}

int oscar_view_revoke(void *view) {
    const struct oscar_api_v1 *t = oscar_shim_table();
    return t ? t->view_revoke(view) : OSCAR_OK;
}

void *oscar_view_origin(void *view) {
    const struct oscar_api_v1 *t = oscar_shim_table();
    return t ? t->view_origin(view) : view;
}
