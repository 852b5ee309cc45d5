/* Issue 18, item 19: a library loaded with RTLD_DEEPBIND binds malloc to glibc's own, not to
 * the preloaded allocator, and hands its pointers to the program, which frees, reallocates and
 * measures them with the malloc it sees (Oscar's). Here libc itself is that library:
 * dlopen("libc.so.6", RTLD_DEEPBIND) and its "malloc" is glibc's. A small chunk (brk heap)
 * and a large one (mapped by glibc for itself). Expected: what glibc alone prints, and no
 * invalid-free report. */
#define _GNU_SOURCE
#include "common.h"
#include <dlfcn.h>
#include <malloc.h>

int main(void) {
    test_init();
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_DEEPBIND);
    void *(*libc_malloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
    check(libc_malloc != NULL, "libc's malloc");
    if (!libc_malloc)
        return test_finish();
    size_t sizes[] = {40, 1000, 200000, 3 << 20};
    for (int i = 0; i < 4; i++) {
        size_t n = sizes[i];
        char *p = libc_malloc(n);
        memset(p, 'a' + i, n);
        check(malloc_usable_size(p) >= n, "usable size");
        char *q = realloc(p, n * 2); /* (Oscar's realloc of glibc's pointer) */
        check(q && q[0] == 'a' + i && q[n - 1] == 'a' + i, "realloc keeps the bytes");
        free(q);
        char *r = libc_malloc(n);
        memset(r, 'z', n);
        free(r); /* (Oscar's free of glibc's pointer) */
        printf("size %zu ok\n", n);
    }
    return test_finish();
}
