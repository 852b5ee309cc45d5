/* Protect mode: a freed object is not handed out again while the only pointer is an interior
 * one (argument "interior": 24 bytes in) or one past its end (argument "end": object + 48,
 * which is also the start of the next slot of its 48-byte class); once cleared, it is.
 * See protect_common.h. */
#include "protect_common.h"

static volatile uintptr_t hold;

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int end = argc > 1 && strcmp(argv[1], "end") == 0;
    uintptr_t m = make_object();
    if (!control)
        hold = (m ^ MASK) + (end ? OBJ_SIZE : 24);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    hold = 0;
    clear_stack();
    report(held, churn(m, ROUNDS));
    return 0;
}
