/* free() of a pointer 10 bytes into a live 100-byte object. Expected: SIGABRT,
 * "invalid-free on address <ptr+10> (interior pointer)". */
#include "common.h"

int main(void) {
    test_init();
    char *p = malloc(100);
    char *volatile inner = p + 10;
    print_ptr("ptr", p);
    printf("size 100\noffset 10\n");
    print_ptr("access", inner);
    free(inner);
    printf("NOT REACHED\n");
    return 0;
}
