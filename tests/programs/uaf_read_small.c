/* Use after free: read from a freed 24-byte (small) object at offset 8.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+8> (READ)". */
#include "common.h"

int main(void) {
    test_init();
    unsigned char *p = malloc(24);
    if (!p)
        return 2;
    for (size_t i = 0; i < 24; i++)
        p[i] = (unsigned char)i;
    print_ptr("ptr", p);
    printf("size %d\noffset %d\n", 24, 8);
    free(p);
    volatile unsigned char *q = p + 8;
    print_ptr("access", (const void *)q);
    unsigned char v = *q;
    printf("NOT REACHED %u\n", v);
    return 0;
}
