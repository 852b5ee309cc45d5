/* Use after free: write to a freed 1000-byte (medium) object at offset 500.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+500> (WRITE)". */
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
    *q = 0x5a;
    printf("NOT REACHED\n");
    return 0;
}
