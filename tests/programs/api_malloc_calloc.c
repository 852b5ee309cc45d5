/* malloc/calloc/free edge cases. Output must match glibc's byte for byte. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "common.h"

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

int main(void) {
    test_init();

    /* malloc(0): a unique, freeable pointer. */
    void *z1 = malloc(0), *z2 = malloc(0);
    check(z1 != NULL && z2 != NULL, "malloc(0) returns non-NULL");
    check(z1 != z2, "two malloc(0) results differ");
    free(z1);
    free(z2);
    printf("malloc(0) ok\n");

    /* free(NULL) does nothing and keeps errno. */
    errno = 1234;
    free(NULL);
    check(errno == 1234, "free(NULL) keeps errno");
    printf("free(NULL) ok\n");

    /* calloc zeroes, including memory that was dirty before (reuse under glibc). */
    static const size_t sizes[] = {1, 8, 24, 100, 1000, 4096, 5000, 70000, 200000, 1 << 21};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        for (int round = 0; round < 3; round++) {
            unsigned char *d = malloc(n);
            check(d != NULL, "malloc for dirtying");
            memset(d, 0xa5, n);
            free(d);
            unsigned char *c = calloc(n, 1);
            check(c != NULL, "calloc returns memory");
            check(all_zero(c, n), "calloc memory is zero");
            memset(c, 0x5a, n);
            free(c);
        }
        unsigned char *c = calloc(n / 8 + 1, 8);
        check(c != NULL && all_zero(c, (n / 8 + 1) * 8), "calloc(n, 8) is zero");
        free(c);
        printf("calloc %zu ok\n", n);
    }
    void *c0 = calloc(0, 5);
    check(c0 != NULL, "calloc(0, 5) returns non-NULL");
    free(c0);

    /* calloc overflow. */
    errno = 0;
    void *ov = calloc(SIZE_MAX / 2, 3);
    check(ov == NULL, "calloc(SIZE_MAX/2, 3) is NULL");
    check(errno == ENOMEM, "calloc overflow sets ENOMEM");
    printf("calloc overflow -> %s errno %s\n", ov ? "ptr" : "NULL", errno == ENOMEM ? "ENOMEM" : "other");
    errno = 0;
    ov = calloc(1u << 31, 1u << 31);
    check(ov == NULL && errno == ENOMEM, "calloc(2^31, 2^31) (exactly 2^62 bytes) fails");
    ov = calloc(SIZE_MAX, SIZE_MAX);
    check(ov == NULL, "calloc(SIZE_MAX, SIZE_MAX) is NULL");

    /* Requests no allocator can satisfy. */
    static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2, (size_t)PTRDIFF_MAX + 1,
                                  (size_t)1 << 46};
    for (size_t k = 0; k < sizeof huge / sizeof *huge; k++) {
        errno = 0;
        void *h = malloc(huge[k]);
        check(h == NULL, "huge malloc is NULL");
        check(errno == ENOMEM, "huge malloc sets ENOMEM");
        printf("malloc(%#zx) -> %s errno %s\n", huge[k], h ? "ptr" : "NULL",
               errno == ENOMEM ? "ENOMEM" : "other");
        free(h);
    }

    /* Everything still works afterwards. */
    char *s = malloc(32);
    check(s != NULL, "malloc after failures");
    strcpy(s, "still alive");
    printf("%s\n", s);
    free(s);
    return test_finish();
}
