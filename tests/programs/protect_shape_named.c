/* Protect mode: the only pointer to a freed object lies in memory whose name looked like
 * memory the mark must not read:
 *   memfd      a memfd of the program's named "oscar-..." (Oscar's own memfds are named so,
 *              and were told apart by name: the program's was left out too)
 *   devfile    a regular file under /dev, mapped shared (as hugetlbfs at /dev/hugepages):
 *              all of /dev was taken for device memory and left out
 *   devgone    the same file, private and unlinked (its line says "(deleted)")
 * Both were handed out again in every run; Oscar's memfds are now told apart by inode, and
 * only character and block devices are left out. (See protect_common.h.)
 * usage: protect_shape_named memfd|devfile|devgone [control] */
#define _GNU_SOURCE
#include "protect_common.h"

#include <fcntl.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "memfd";
    char path[64];
    int fd;
    if (!strcmp(how, "memfd")) {
        fd = memfd_create("oscar-program", 0);
    } else {
        snprintf(path, sizeof path, "/dev/oscar-test-%d", (int)getpid());
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            printf("unsupported open(%s): %s\n", path, strerror(errno));
            return 0;
        }
    }
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
        perror("file");
        return 2;
    }
    void **p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                    !strcmp(how, "devgone") ? MAP_PRIVATE : MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    if (!strcmp(how, "devgone"))
        unlink(path);
    check_held_in((void *volatile *)&p[7]);
    if (!strcmp(how, "devfile"))
        unlink(path);
    return 0;
}
