/* realloc() of an already freed pointer: reported as a double free. */
#include "common.h"

int main(void) {
    test_init();
    void *volatile p = malloc(40);
    print_ptr("ptr", p);
    free(p);
    void *q = realloc(p, 80);
    print_ptr("NOT REACHED", q);
    return 0;
}
