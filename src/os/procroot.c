/* procroot: see procroot.h. */
#define _GNU_SOURCE
#include "os/procroot.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* The descriptor and what it refers to: written by os_proc_root_take (init, or chroot(3):
 * the identity first, the number last), read by any thread. */
static struct {
    _Atomic int fd;            /* -1: none; set last by os_proc_root_take */
    _Atomic uint64_t dev, ino; /* what fd is: set by os_proc_root_take, before fd */
    _Atomic bool taken;        /* ever (Oscar is on): set by os_proc_root_take */
} procroot_state = {-1, 0, 0, false};

/* Is fd still the /proc it was taken as (not closed, not another file under that number)? */
static bool still_proc(int fd) {
    uint64_t dev, ino;
    return fd >= 0 && os_fd_id(fd, &dev, &ino) == 0 &&
           dev == atomic_load_explicit(&procroot_state.dev, memory_order_relaxed) &&
           ino == atomic_load_explicit(&procroot_state.ino, memory_order_relaxed);
}

int os_proc_root_take(void) {
    if (still_proc(atomic_load_explicit(&procroot_state.fd, memory_order_acquire)))
        return 0;
    uint64_t dev, ino;
    long fd = os_open_out_of_way("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC, &dev, &ino);
    if (fd < 0)
        return (int)-fd;
    atomic_store_explicit(&procroot_state.dev, dev, memory_order_relaxed);
    atomic_store_explicit(&procroot_state.ino, ino, memory_order_relaxed);
    atomic_store_explicit(&procroot_state.fd, (int)fd, memory_order_release);
    atomic_store_explicit(&procroot_state.taken, true, memory_order_relaxed);
    return 0;
}

int os_proc_root_check(void) {
    if (!atomic_load_explicit(&procroot_state.taken, memory_order_relaxed))
        return 0;
    return os_proc_root_take();
}

int os_proc_root_retry(const char **path, long err) {
    if (err != -ENOENT && err != -ENOTDIR && err != -EACCES && err != -ELOOP)
        return -1;
    if (strncmp(*path, "/proc/", 6) != 0)
        return -1;
    int fd = atomic_load_explicit(&procroot_state.fd, memory_order_acquire);
    if (!still_proc(fd))
        return -1;
    *path += 6;
    return fd;
}
