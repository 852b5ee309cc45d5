/* Protect mode: a freed object is not handed out again while a variable on the main stack
 * points to it; once it is cleared, it is. See protect_common.h. */
#include "protect_common.h"

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void *volatile hold = NULL;
    uintptr_t m = make_object();
    if (!control)
        hold = (void *)(m ^ MASK);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    hold = NULL;
    clear_stack();
    report(held, released_after(m, churn(m, ROUNDS)));
    return hold != NULL;
}
