/* Protect mode: the only pointer to a freed object lies in a shared mapping of four pages
 * whose second page faults when read: a guard marker (MADV_GUARD_INSTALL, Linux 6.15+ on
 * shared memory), which the mark counts as there (mincore). The read of the mapping stopped
 * at the fault and the pages after it were never read: the object, held on the third page,
 * was handed out again in every run. The read now goes on after a page that faults.
 * usage: protect_shape_fault_page memfd|shanon [control]   (see protect_common.h) */
#define _GNU_SOURCE
#include "protect_common.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "memfd";
    char *p;
    if (!strcmp(how, "shanon")) {
        p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    } else {
        int fd = memfd_create("program", 0);
        if (fd < 0 || ftruncate(fd, 4 * 4096) != 0) {
            perror("memfd");
            return 2;
        }
        p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (p == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memset(p, 0, 4 * 4096);
    if (madvise(p + 4096, 4096, MADV_GUARD_INSTALL) != 0) {
        printf("unsupported madvise(MADV_GUARD_INSTALL) on shared memory: %s\n", strerror(errno));
        return 0;
    }
    check_held_in((void *volatile *)(p + 2 * 4096 + 64));
    return 0;
}
