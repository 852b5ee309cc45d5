/* A use after free inside libc, whose string functions have no frame pointers:
 * `uaf_in_libc memset` writes a freed object with memset, `memcpy` copies into it, `strlen`
 * reads it. The access stack must still reach main (the frame-pointer walk alone skipped
 * main: from inside memset, rbp is still main's frame, whose return address is libc's). */
#include "common.h"

int main(int argc, char **argv) {
    test_init();
    const char *what = argc > 1 ? argv[1] : "memset";
    char *p = malloc(100);
    memset(p, 'x', 99);
    p[99] = 0;
    print_ptr("ptr", p);
    free(p);
    print_ptr("access", p);
    char src[100] = "source";
    size_t n = 0;
    if (!strcmp(what, "memset"))
        memset(p, 0, 100); /* LINE_ACCESS memset */
    else if (!strcmp(what, "memcpy"))
        memcpy(p, src, sizeof src); /* LINE_ACCESS memcpy */
    else
        n = strlen(p); /* LINE_ACCESS strlen */
    printf("NOT REACHED %zu\n", n);
    return 0;
}
