/* posix_memalign, aligned_alloc, memalign, valloc, pvalloc. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

int main(void) {
    test_init();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    /* posix_memalign: every power of two from 8 to 1 MiB, several sizes. */
    for (size_t a = 8; a <= (1u << 20); a <<= 1) {
        size_t sizes[] = {1, 24, 100, a, a + 1, 3 * a / 2};
        void *keep[6];
        for (int k = 0; k < 6; k++) {
            void *p = (void *)1;
            errno = 4242;
            int rc = posix_memalign(&p, a, sizes[k]);
            check(rc == 0, "posix_memalign succeeds");
            check(errno == 4242, "posix_memalign success keeps errno");
            check(p != NULL && aligned(p, a), "posix_memalign alignment");
            fill_pattern(p, sizes[k], a + k);
            keep[k] = p;
        }
        for (int k = 0; k < 6; k++) {
            check(check_pattern(keep[k], sizes[k], a + k), "posix_memalign objects intact");
            free(keep[k]);
        }
        printf("posix_memalign %zu ok\n", a);
    }

    /* Invalid alignments: EINVAL returned, errno untouched. */
    static const size_t bad[] = {0, 1, 2, 4, 3, 12, 24, 48, 4097, (size_t)1 << 63 | 8};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        void *p = NULL;
        errno = 4242;
        int rc = posix_memalign(&p, bad[k], 64);
        check(rc == EINVAL, "bad alignment gives EINVAL");
        check(errno == 4242, "bad alignment keeps errno");
        printf("posix_memalign(align=%#zx) -> %s\n", bad[k], rc == EINVAL ? "EINVAL" : "other");
        if (rc == 0)
            free(p);
    }
    void *p = NULL;
    errno = 4242;
    int rc = posix_memalign(&p, 64, SIZE_MAX / 2);
    check(rc == ENOMEM, "huge posix_memalign gives ENOMEM");
    printf("posix_memalign(huge) -> %s\n", rc == ENOMEM ? "ENOMEM" : "other");
    /* (glibc's failing allocation sets errno on the way, and posix_memalign leaves it: Oscar
     * kept the caller's, a difference a program can see) */
    printf("errno after it: %s\n", errno == ENOMEM ? "ENOMEM" : errno == 4242 ? "kept" : "other");

    /* aligned_alloc with size a multiple of the alignment. */
    for (size_t a = 8; a <= 65536; a <<= 1) {
        unsigned char *q = aligned_alloc(a, 2 * a);
        check(q != NULL && aligned(q, a), "aligned_alloc alignment");
        memset(q, 0x11, 2 * a);
        free(q);
    }
    printf("aligned_alloc ok\n");

    /* memalign. */
    for (size_t a = 16; a <= (1u << 20); a <<= 1) {
        unsigned char *q = memalign(a, 100);
        check(q != NULL && aligned(q, a), "memalign alignment");
        memset(q, 0x22, 100);
        free(q);
    }
    printf("memalign ok\n");

    /* valloc and pvalloc: page aligned; pvalloc rounds the size up to a page. */
    unsigned char *v = valloc(100);
    check(v != NULL && aligned(v, page), "valloc(100) page aligned");
    memset(v, 0x33, 100);
    unsigned char *v2 = valloc(3 * page + 5);
    check(v2 != NULL && aligned(v2, page), "valloc(3 pages + 5) page aligned");
    memset(v2, 0x34, 3 * page + 5);
    free(v);
    free(v2);
    unsigned char *pv = pvalloc(100);
    check(pv != NULL && aligned(pv, page), "pvalloc(100) page aligned");
    check(malloc_usable_size(pv) >= page, "pvalloc(100) usable size is a whole page");
    memset(pv, 0x44, page);
    free(pv);
    printf("valloc/pvalloc ok\n");

    /* An aligned object can be realloc'd and keeps its contents. */
    void *ar = NULL;
    check(posix_memalign(&ar, 4096, 1000) == 0, "posix_memalign for realloc");
    fill_pattern(ar, 1000, 5);
    unsigned char *ar2 = realloc(ar, 50000);
    check(ar2 != NULL && check_pattern(ar2, 1000, 5), "realloc of an aligned object");
    free(ar2);
    printf("realloc aligned ok\n");
    return test_finish();
}
