/* free() of a global. Expected: SIGABRT, "invalid-free ... (not allocated by oscar)". */
#include "common.h"

static long global_array[32];

int main(void) {
    test_init();
    void *volatile p = &global_array[4];
    print_ptr("access", p);
    free(p);
    printf("NOT REACHED %ld\n", global_array[0]);
    return 0;
}
