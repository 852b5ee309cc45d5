/* Protect mode: a freed object is not handed out again while a live heap object points to it
 * (interior of the holder too: the pointer sits at an odd word of it); once the holder is
 * cleared, it is. See protect_common.h. */
#include "protect_common.h"

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void *volatile *holder = calloc(16, sizeof(void *));
    check_held_in(&holder[5]);
    free((void *)holder);
    return 0;
}
