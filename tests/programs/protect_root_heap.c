/* Protect mode: a freed object is not handed out again while a live heap object points to it
 * (interior of the holder too: the pointer sits at an odd word of it); once the holder is
 * cleared, it is. See protect_common.h. */
#include "protect_common.h"

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void *volatile *holder = calloc(16, sizeof(void *));
    uintptr_t m = make_object();
    if (!control)
        holder[5] = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    holder[5] = NULL;
    clear_stack();
    report(held, churn(m, ROUNDS));
    free((void *)holder);
    return 0;
}
