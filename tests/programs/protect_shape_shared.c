/* Protect mode: the only pointer to a freed object lies in shared memory of the program's own:
 * argv[1] = "memfd" (memfd_create + MAP_SHARED), "shm" (shm_open, /dev/shm), "anon"
 * (MAP_SHARED | MAP_ANONYMOUS), "file" (a file of its own in $TMPDIR or /tmp, MAP_SHARED), or
 * in a private mapping of that file ("fileprivate": written, so the page is the process's own
 * copy), or "sysv" (a System V segment, shmget + shmat, removed once attached), or huge pages
 * of the kernel's pool ("hugetlb", "hugetlbshared": MAP_HUGETLB, 2 MiB; "unsupported" where
 * the pool is empty), or "secret" (memfd_secret: memory out of the kernel's own map;
 * "unsupported" where the kernel refuses it). Still a root. With "sealed" after it, the
 * page is made read-only while the object is freed (shared memory the program seals). See
 * protect_common.h. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "memfd";
    void **page;
    if (strcmp(how, "anon") == 0) {
        page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    } else if (strncmp(how, "hugetlb", 7) == 0) {
        int flags = strcmp(how, "hugetlbshared") == 0 ? MAP_SHARED : MAP_PRIVATE;
        page = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS | MAP_HUGETLB,
                    -1, 0);
        if (page == MAP_FAILED) {
            printf("unsupported MAP_HUGETLB: %s\n", strerror(errno));
            return 0;
        }
        page[0] = page; /* (the huge page made present) */
    } else if (strcmp(how, "secret") == 0) {
        int fd = (int)syscall(SYS_memfd_secret, 0);
        if (fd < 0 || ftruncate(fd, 4096) != 0) {
            printf("unsupported memfd_secret: %s\n", strerror(errno));
            return 0;
        }
        page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (page == MAP_FAILED) {
            printf("unsupported memfd_secret's mapping: %s\n", strerror(errno));
            return 0;
        }
    } else if (strcmp(how, "sysv") == 0) {
        int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
        page = id < 0 ? (void *)-1 : shmat(id, NULL, 0);
        if (id < 0 || page == (void *)-1) {
            perror("shmget/shmat");
            return 2;
        }
        shmctl(id, IPC_RMID, NULL); /* (gone once detached: at exit) */
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
    if (argc > 2 && strcmp(argv[2], "sealed") == 0)
        check_sealed_in((void *volatile *)&page[3], page, 4096, PROT_READ);
    else
        check_held_in((void *volatile *)&page[3]);
    return 0;
}
