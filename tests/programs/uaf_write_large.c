/* Use after free: write to a freed 102400-byte (large) object at offset 50000.
 * Expected under oscar: SIGSEGV, "heap-use-after-free on address <ptr+50000> (WRITE)". */
#include "common.h"

int main(void) {
    test_init();
    unsigned char *p = malloc(102400);
    if (!p)
        return 2;
    for (size_t i = 0; i < 102400; i++)
        p[i] = (unsigned char)i;
    print_ptr("ptr", p);
    printf("size %d\noffset %d\n", 102400, 50000);
    free(p);
    volatile unsigned char *q = p + 50000;
    print_ptr("access", (const void *)q);
    *q = 0x5a;
    printf("NOT REACHED\n");
    return 0;
}
