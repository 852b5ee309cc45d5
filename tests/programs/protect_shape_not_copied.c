/* Protect mode: the only pointer to a freed object lies in a private page the program marked
 * not to be copied to child processes: argv[1] = "wipeonfork" (MADV_WIPEONFORK: a child sees
 * zeros there) or "dontfork" (MADV_DONTFORK: a child has no such page). A snapshot mark reads
 * a child's copy of the process, so it must not rely on one here. See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int wipe = argc > 1 && strcmp(argv[1], "wipeonfork") == 0;
    void *volatile *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED || madvise((void *)page, 4096, wipe ? MADV_WIPEONFORK : MADV_DONTFORK) != 0) {
        perror("mmap, madvise");
        return 2;
    }
    check_held_in(&page[5]);
    return 0;
}
