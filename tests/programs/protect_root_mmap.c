/* Protect mode: a freed object is not handed out again while the program's own anonymous
 * mapping points to it; once cleared, it is. See protect_common.h. */
#include "protect_common.h"
#include <sys/mman.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void *volatile *map = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return 2;
    check_held_in(&map[70000]); /* deep inside: not the first page */
    return 0;
}
