/* A use after free 20,000 calls deep: the report (and its stack walk) still works. */
#include "common.h"

static int *victim;

__attribute__((noinline)) int recurse(int depth) {
    if (depth == 0) {
        print_ptr("access", victim + 1);
        return victim[1];
    }
    return recurse(depth - 1) + 1;
}

int main(void) {
    test_init();
    victim = malloc(48);
    print_ptr("ptr", victim);
    printf("size 48\n");
    free(victim);
    int v = recurse(20000);
    printf("NOT REACHED %d\n", v);
    return 0;
}
