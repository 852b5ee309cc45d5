/* free() of a stack address. Expected: SIGABRT, "invalid-free ... (not allocated by oscar)". */
#include "common.h"

int main(void) {
    test_init();
    char buf[64];
    buf[0] = 0;
    void *volatile p = buf;
    print_ptr("access", p);
    free(p);
    printf("NOT REACHED %d\n", buf[0]);
    return 0;
}
