/* Issue 18, defect 15: a buffer grown by realloc in 64-byte steps (a string builder), to 8
 * and to 32 MiB; the contents are checked as it grows. Prints the same under every allocator;
 * the seconds each size took go to stderr ("seconds MIB S") for the test to compare: linear
 * growth takes about 4 times as long for 32 MiB as for 8, quadratic 16 times. */
#include "common.h"

#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int append(size_t mib) {
    size_t max = mib << 20, n = 0;
    unsigned char *p = NULL;
    int ok = 1;
    double start = now();
    while (n < max) {
        unsigned char *q = realloc(p, n + 64);
        if (!q)
            return 0;
        p = q;
        memset(p + n, (int)(n >> 6 & 0xff), 64);
        n += 64;
        if ((n & ((1 << 20) - 1)) == 0) /* every MiB: the first byte of each 64 still there */
            for (size_t i = 0; i < n; i += 4096 + 64)
                ok &= p[i] == (unsigned char)(i >> 6 & 0xff);
    }
    fprintf(stderr, "seconds %zu %.4f\n", mib, now() - start);
    free(p);
    return ok;
}

int main(void) {
    test_init();
    check(append(8), "8 MiB buffer intact");
    check(append(32), "32 MiB buffer intact");
    printf("appended 8 and 32 MiB\n");
    return test_finish();
}
