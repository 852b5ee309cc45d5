/* A use after free read through a function inlined into its caller (always_inline, so even
 * the -O0 build inlines it): the report shows the inlined function as a frame of its own
 * line, with the same pc as its caller's frame, as AddressSanitizer does. The test finds the
 * expected lines by the markers in the comments. */
#include "common.h"

static inline __attribute__((always_inline)) long peek_value(const long *p) {
    return p[2]; /* LINE_PEEK */
}

__attribute__((noinline)) long read_through_inline(const long *p) {
    return peek_value(p) + 1; /* LINE_CALL */
}

int main(void) {
    test_init();
    long *p = malloc(8 * sizeof *p);
    print_ptr("ptr", p);
    free(p);
    print_ptr("access", p + 2);
    long v = read_through_inline(p); /* LINE_MAIN */
    printf("NOT REACHED %ld\n", v);
    return 0;
}
