/* Protect mode: the only pointer to a freed object lies in an anonymous page the program made
 * read-only after writing it (a table sealed with mprotect): still a root. With
 * "aftershared", the page lies right after a shared anonymous mapping (in /proc/self/maps a
 * "/dev/zero" line: a file's name, but no loaded object's, so the page is no object's
 * read-only data). With "none", the program makes the page inaccessible (PROT_NONE: a
 * collector's or a JIT's page, protected while it is not in use) and later readable again,
 * and then reads the pointer: still a root. "nonebig": the page lies in a 256 MiB reservation
 * made inaccessible whole (found by PAGEMAP_SCAN, Linux 6.7+); "readonlybig", made
 * read-only whole. With "nodump" besides, the process cannot open its own /proc/self/mem
 * (non-dumpable, and not root: root becomes nobody), and says whether it could
 * ("can_open_mem"). With "file" (before any of those),
 * the pages are a file's, mapped MAP_PRIVATE: written, they are the program's own copies, and
 * then sealed as any anonymous page. See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int file = argc > 1 && strcmp(argv[1], "file") == 0;
    if (file)
        argv++, argc--;
    int after_shared = argc > 1 && strcmp(argv[1], "aftershared") == 0;
    int big_ro = argc > 1 && strcmp(argv[1], "readonlybig") == 0;
    int big = big_ro || (argc > 1 && strcmp(argv[1], "nonebig") == 0);
    int none = big || (argc > 1 && strcmp(argv[1], "none") == 0);
    size_t len = big ? 256UL << 20 : 8192;
    int fd = file ? memfd_create("protect-shape", 0) : -1;
    if (file && (fd < 0 || ftruncate(fd, (off_t)len) != 0))
        return 2;
    if (argc > 2 && strcmp(argv[2], "nodump") == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            return 2;
        prctl(PR_SET_DUMPABLE, 0);
        int fd = open("/proc/self/mem", O_RDONLY);
        printf("can_open_mem %d\n", fd >= 0);
        if (fd >= 0)
            close(fd);
    }
    char *two = fd >= 0 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)
                        : mmap(NULL, len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (two == MAP_FAILED)
        return 2;
    if (after_shared && mmap(two, 4096, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
        return 2;
    void **page = (void **)(two + (big ? 100UL << 20 : 4096));
    if (big)
        check_sealed_in((void *volatile *)&page[7], two, len, big_ro ? PROT_READ : PROT_NONE);
    else
        check_sealed_in((void *volatile *)&page[7], page, 4096, none ? PROT_NONE : PROT_READ);
    return 0;
}
