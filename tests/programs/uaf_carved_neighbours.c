/* Objects of a few pages sit side by side in one mapping (large.c carves them from a
 * thread's chunk). Allocate 100 objects of SIZE bytes (argument, default 5000), fill each
 * with its own pattern, free every other one, and check that the live neighbours kept every
 * byte and stay writable, and that no freed address is handed out again; then read a freed
 * object in the middle.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+SIZE/2> (READ)". */
#include "common.h"

#include <string.h>

enum { N = 100 };

int main(int argc, char **argv) {
    test_init();
    size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 5000;
    unsigned char *p[N];
    for (int i = 0; i < N; i++) {
        p[i] = malloc(size);
        if (!p[i])
            return 2;
        memset(p[i], i + 1, size);
    }
    for (int i = 1; i < N; i += 2)
        free(p[i]);
    int bad = 0;
    for (int i = 0; i < N; i += 2) {
        for (size_t j = 0; j < size; j++)
            bad += p[i][j] != (unsigned char)(i + 1);
        memset(p[i], 0xee, size);
    }
    printf("neighbours %s\n", bad ? "CORRUPTED" : "intact");
    int reused = 0;
    for (int i = 0; i < N; i++) {
        unsigned char *q = malloc(size);
        for (int k = 1; k < N; k += 2)
            reused += q == p[k];
        if (i % 2 == 0)
            free(q);
    }
    printf("reused %s\n", reused ? "YES" : "no");
    unsigned char *freed = p[N / 2 + 1];
    print_ptr("ptr", freed);
    printf("size %zu\noffset %zu\n", size, size / 2);
    volatile unsigned char *a = freed + size / 2;
    print_ptr("access", (const void *)a);
    unsigned char v = *a;
    printf("NOT REACHED %u\n", v);
    return 0;
}
