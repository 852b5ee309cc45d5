/* realloc/reallocarray edge cases and content preservation across size classes. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "common.h"

int main(void) {
    test_init();

    /* realloc(NULL, n) is malloc(n). */
    char *p = realloc(NULL, 100);
    check(p != NULL, "realloc(NULL, 100)");
    memset(p, 'x', 100);
    free(p);
    printf("realloc(NULL, n) ok\n");

    /* realloc(p, 0): glibc frees p and returns NULL. */
    p = malloc(50);
    memset(p, 'y', 50);
    void *r0 = realloc(p, 0);
    printf("realloc(p, 0) -> %s\n", r0 ? "non-NULL" : "NULL");
    free(r0);

    /* Growth then shrinkage through small, page-sized, large and huge sizes. */
    static const size_t steps[] = {1,     7,      24,     100,   1000,   4000,  4096,
                                   5000,  65536,  70000,  300000, 2 << 20, 300000, 70000,
                                   5000,  4096,   1000,   100,    24,     7,     1};
    size_t cur = steps[0];
    unsigned char *q = malloc(cur);
    fill_pattern(q, cur, 99);
    unsigned long sum = 0;
    for (size_t k = 1; k < sizeof steps / sizeof *steps; k++) {
        size_t next = steps[k];
        unsigned char *n = realloc(q, next);
        check(n != NULL, "realloc step");
        size_t keep = cur < next ? cur : next;
        check(check_pattern(n, keep, 99), "realloc preserves the common prefix");
        fill_pattern(n, next, 99);
        for (size_t i = 0; i < next; i += 97)
            sum += n[i];
        q = n;
        cur = next;
        printf("realloc -> %zu ok\n", next);
    }
    free(q);
    printf("checksum %lu\n", sum);

    /* Same size, and repeated small growth (like a string builder). */
    char *sb = NULL;
    size_t len = 0;
    for (int i = 0; i < 5000; i++) {
        char *n = realloc(sb, len + 3);
        check(n != NULL, "string builder realloc");
        sb = n;
        sb[len] = (char)('a' + i % 26);
        sb[len + 1] = (char)('A' + i % 26);
        sb[len + 2] = 0;
        len += 2;
    }
    unsigned long h = 5381;
    for (size_t i = 0; i < len; i++)
        h = h * 33 + (unsigned char)sb[i];
    char *same = realloc(sb, len + 1);
    check(same != NULL && strlen(same) == len, "realloc to the same size");
    free(same);
    printf("string builder %zu hash %lu\n", len, h);

    /* Failing realloc leaves the old object intact. */
    p = malloc(64);
    memset(p, 'k', 64);
    errno = 0;
    void *f = realloc(p, SIZE_MAX / 2);
    check(f == NULL && errno == ENOMEM, "huge realloc fails with ENOMEM");
    check(p[0] == 'k' && p[63] == 'k', "failed realloc keeps the object");
    printf("huge realloc -> %s errno %s\n", f ? "ptr" : "NULL", errno == ENOMEM ? "ENOMEM" : "other");

    /* reallocarray overflow. */
    errno = 0;
    f = reallocarray(p, SIZE_MAX / 2, 3);
    check(f == NULL && errno == ENOMEM, "reallocarray overflow fails with ENOMEM");
    check(p[0] == 'k' && p[63] == 'k', "failed reallocarray keeps the object");
    printf("reallocarray overflow -> %s errno %s\n", f ? "ptr" : "NULL",
           errno == ENOMEM ? "ENOMEM" : "other");
    free(p);

    int *arr = reallocarray(NULL, 10, sizeof(int));
    check(arr != NULL, "reallocarray(NULL, 10, 4)");
    for (int i = 0; i < 10; i++)
        arr[i] = i * i;
    arr = reallocarray(arr, 1000, sizeof(int));
    check(arr != NULL, "reallocarray grow");
    long asum = 0;
    for (int i = 0; i < 10; i++)
        asum += arr[i];
    free(arr);
    printf("reallocarray sum %ld\n", asum);
    return test_finish();
}
