/* Protect mode: free() of a slot address inside the heap that was never handed out.
 * Expected: SIGABRT, "invalid-free on address <access> (never allocated)". */
#include "common.h"

int main(void) {
    test_init();
    char *p = malloc(48);
    char *volatile never = p + 48 * 200; /* a slot of the same page, not handed out yet */
    print_ptr("ptr", p);
    print_ptr("access", never);
    free(never);
    printf("NOT REACHED\n");
    return 0;
}
