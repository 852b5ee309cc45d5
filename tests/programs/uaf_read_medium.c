/* Use after free: read from a freed 1000-byte (medium) object at offset 500.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+500> (READ)". */
#include "common.h"

int main(void) {
    test_init();
    unsigned char *p = malloc(1000);
    if (!p)
        return 2;
    for (size_t i = 0; i < 1000; i++)
        p[i] = (unsigned char)i;
    print_ptr("ptr", p);
    printf("size %d\noffset %d\n", 1000, 500);
    free(p);
    volatile unsigned char *q = p + 500;
    print_ptr("access", (const void *)q);
    unsigned char v = *q;
    printf("NOT REACHED %u\n", v);
    return 0;
}
