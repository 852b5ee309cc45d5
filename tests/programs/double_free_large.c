/* Double free of a large (256 KB) object, immediately. */
#include "common.h"

int main(void) {
    test_init();
    void *volatile p = malloc(256 * 1024);
    print_ptr("ptr", p);
    free(p);
    free(p);
    printf("NOT REACHED\n");
    return 0;
}
