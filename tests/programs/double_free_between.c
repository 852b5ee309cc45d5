/* Double free with many allocations and frees of the same size in between (a free list that
 * reuses the chunk would hide it). */
#include "common.h"

int main(void) {
    test_init();
    void *volatile p = malloc(64);
    print_ptr("ptr", p);
    free(p);
    void *others[1000];
    for (int i = 0; i < 1000; i++)
        others[i] = malloc(64);
    for (int i = 0; i < 1000; i += 2)
        free(others[i]);
    free(p);
    printf("NOT REACHED\n");
    return 0;
}
