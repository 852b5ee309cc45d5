/* Use after free of a posix_memalign(4096, 3000) object, read at offset 100. */
#include "common.h"

int main(void) {
    test_init();
    void *v = NULL;
    if (posix_memalign(&v, 4096, 3000) != 0)
        return 2;
    unsigned char *p = v;
    for (int i = 0; i < 3000; i++)
        p[i] = (unsigned char)i;
    print_ptr("ptr", p);
    printf("size 3000\noffset 100\n");
    free(p);
    volatile unsigned char *q = p + 100;
    print_ptr("access", (const void *)q);
    unsigned char x = *q;
    printf("NOT REACHED %u\n", x);
    return 0;
}
