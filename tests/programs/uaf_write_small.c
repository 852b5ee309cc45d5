/* Use after free: write to a freed 24-byte (small) object at offset 8.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+8> (WRITE)". */
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
    *q = 0x5a;
    printf("NOT REACHED\n");
    return 0;
}
