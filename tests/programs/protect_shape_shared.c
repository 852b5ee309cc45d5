/* Protect mode: the only pointer to a freed object lies in shared memory of the program's own:
 * argv[1] = "memfd" (memfd_create + MAP_SHARED), "shm" (shm_open, /dev/shm), "anon"
 * (MAP_SHARED | MAP_ANONYMOUS), "file" (a file of its own in $TMPDIR or /tmp, MAP_SHARED), or
 * in a private mapping of that file ("fileprivate": written, so the page is the process's own
 * copy). Still a root. See protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "memfd";
    void **page;
    if (strcmp(how, "anon") == 0) {
        page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    } else if (strncmp(how, "file", 4) == 0) {
        const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        char name[512];
        snprintf(name, sizeof name, "%s/oscar-test-%d", dir, (int)getpid());
        int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        unlink(name);
        if (fd < 0 || ftruncate(fd, 4096) != 0) {
            perror("file");
            return 2;
        }
        int flags = strcmp(how, "fileprivate") == 0 ? MAP_PRIVATE : MAP_SHARED;
        page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, flags, fd, 0);
        close(fd);
    } else {
        char name[64];
        snprintf(name, sizeof name, "/oscar-test-%d", (int)getpid());
        int fd = strcmp(how, "shm") == 0 ? shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600)
                                         : memfd_create("program-memfd", 0);
        if (strcmp(how, "shm") == 0)
            shm_unlink(name);
        if (fd < 0 || ftruncate(fd, 4096) != 0) {
            perror("shared memory");
            return 2;
        }
        page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    }
    check_held_in((void *volatile *)&page[3]);
    return 0;
}
