/* Protect mode: a freed object is not handed out again while a global (bss) variable points
 * to it; once the variable is cleared, it is. See protect_common.h. */
#include "protect_common.h"

static void *volatile hold;

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    check_held_in(&hold);
    return 0;
}
