/* Protect mode: the only pointer to a freed object lies in a private page the program marked
 * not to be copied to child processes: argv[1] = "wipeonfork" (MADV_WIPEONFORK: a child sees
 * zeros there) or "dontfork" (MADV_DONTFORK: a child has no such page); "rawwipeonfork" and
 * "rawdontfork" the same by syscall(SYS_madvise), past libc's madvise; "droppable" a mapping
 * made MAP_DROPPABLE (Linux 6.11+: the kernel wipes it on fork too). A snapshot mark reads a
 * child's copy of the process, so it must not rely on one here: the raw calls and the
 * droppable mapping went unseen, and the object was handed out again in every run. See
 * protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <sys/mman.h>
#include <sys/syscall.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif
#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08
#endif

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "dontfork";
    int raw = !strncmp(how, "raw", 3), wipe = strstr(how, "wipeonfork") != NULL;
    if (!strcmp(how, "droppable")) {
        void *volatile *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                    MAP_DROPPABLE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) {
            printf("unsupported MAP_DROPPABLE: %s\n", strerror(errno));
            return 0;
        }
        check_held_in(&page[5]);
        return 0;
    }
    void *volatile *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int advice = wipe ? MADV_WIPEONFORK : MADV_DONTFORK;
    void *at = (void *)page;
    if (page == MAP_FAILED ||
        (raw ? syscall(SYS_madvise, at, 4096, advice) : madvise(at, 4096, advice)) != 0) {
        perror("mmap, madvise");
        return 2;
    }
    check_held_in(&page[5]);
    return 0;
}
