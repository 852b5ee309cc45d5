/* Use after fclose: the FILE object (and its buffer) were allocated inside libc by fopen
 * and freed by fclose; reading through the stale FILE pointer is a use after free. */
#include "common.h"

int main(void) {
    test_init();
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 2;
    print_ptr("ptr", f);
    fclose(f);
    volatile int *q = (volatile int *)f; /* _flags, the FILE's first field */
    print_ptr("access", (const void *)q);
    int flags = *q;
    printf("NOT REACHED %d\n", flags);
    return 0;
}
