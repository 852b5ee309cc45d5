/* api_abi: the table liboscar.so exports for the oscar.h shim (shim/oscar_api.c).
 *
 * liboscar.so exports ONE symbol for the API, `__oscar_api_v1`, never the public names:
 * the shim (linked into the program or a wrapper library) owns oscar_view_create & co. and
 * finds this table once with dlsym(RTLD_DEFAULT). Without liboscar.so loaded the shim
 * passes through. New functions are appended; `size` tells the shim which exist. */
#ifndef OSCAR_API_ABI_H
#define OSCAR_API_ABI_H
#include <stddef.h>

#define OSCAR_API_SYMBOL "__oscar_api_v1"

struct oscar_api_v1 {
    unsigned version; /* 1 */
    unsigned size;    /* sizeof(struct oscar_api_v1) of the library */
    int (*active)(void);
    void *(*arena_alloc)(size_t len);
    int (*arena_free)(void *arena);
    int (*view_create)(void *ptr, size_t len, void **view);
    int (*view_revoke)(void *view);
    void *(*view_origin)(void *view);
};
#endif
