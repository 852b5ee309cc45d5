/* malloc_usable_size, errno preservation by free, and the glibc tuning calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <string.h>
#include "common.h"

int main(void) {
    test_init();

    check(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) is 0");

    /* Usable size covers the request and all of it is writable without touching neighbours. */
    static const size_t sizes[] = {1, 2, 8, 15, 16, 17, 24, 31, 33, 100, 255, 1000, 2049,
                                   4095, 4096, 4097, 10000, 65535, 131072, 500000};
    enum { N = sizeof sizes / sizeof *sizes };
    unsigned char *objs[N][3];
    size_t usable[N][3];
    for (int k = 0; k < N; k++) {
        for (int j = 0; j < 3; j++) {
            objs[k][j] = malloc(sizes[k]);
            check(objs[k][j] != NULL, "malloc");
            usable[k][j] = malloc_usable_size(objs[k][j]);
            check(usable[k][j] >= sizes[k], "usable size >= requested");
            fill_pattern(objs[k][j], usable[k][j], (uint64_t)(k * 3 + j));
        }
    }
    for (int k = 0; k < N; k++)
        for (int j = 0; j < 3; j++) {
            check(check_pattern(objs[k][j], usable[k][j], (uint64_t)(k * 3 + j)),
                  "the whole usable size is ours");
            free(objs[k][j]);
        }
    printf("malloc_usable_size ok\n");

    /* free keeps errno, for every kind of object. */
    void *small = malloc(16), *medium = malloc(3000), *large = malloc(1 << 20), *al = NULL;
    check(posix_memalign(&al, 4096, 64) == 0, "posix_memalign");
    void *objs2[] = {small, medium, large, al};
    for (int k = 0; k < 4; k++) {
        errno = 777;
        free(objs2[k]);
        check(errno == 777, "free keeps errno");
    }
    printf("free keeps errno ok\n");

    /* glibc tuning calls: callable, harmless. Return values are allocator-specific. */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    mallopt(M_ARENA_MAX, 2);
    /* (what glibc refuses, it says so: 0; Oscar said 1 to everything) */
    printf("mallopt M_MXFAST 64 %d, 100000 %d, -1 %d\n", mallopt(M_MXFAST, 64),
           mallopt(M_MXFAST, 100000), mallopt(M_MXFAST, -1));
    printf("mallopt M_MMAP_THRESHOLD 64 MiB %d, -1 %d\n", mallopt(M_MMAP_THRESHOLD, 64 << 20),
           mallopt(M_MMAP_THRESHOLD, -1));
    void *t = malloc(200000);
    memset(t, 1, 200000);
    free(t);
    malloc_trim(0);
    struct mallinfo2 mi = mallinfo2();
    (void)mi;
    char *after = malloc(64);
    check(after != NULL, "malloc after mallopt/malloc_trim/mallinfo2");
    strcpy(after, "tuning calls are harmless");
    printf("%s\n", after);
    free(after);
    return test_finish();
}
