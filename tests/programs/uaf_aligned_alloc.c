/* Use after free of an aligned_alloc(256, 512) object, written at offset 300. */
#include "common.h"

int main(void) {
    test_init();
    unsigned char *p = aligned_alloc(256, 512);
    if (!p)
        return 2;
    for (int i = 0; i < 512; i++)
        p[i] = (unsigned char)i;
    print_ptr("ptr", p);
    printf("size 512\noffset 300\n");
    free(p);
    volatile unsigned char *q = p + 300;
    print_ptr("access", (const void *)q);
    *q = 1;
    printf("NOT REACHED\n");
    return 0;
}
