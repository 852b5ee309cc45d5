/* Double free of a small object, immediately. Expected: SIGABRT, "double-free on address <ptr>". */
#include "common.h"

int main(void) {
    test_init();
    void *volatile p = malloc(32);
    print_ptr("ptr", p);
    free(p);
    free(p);
    printf("NOT REACHED\n");
    return 0;
}
