/* kept: see kept.h. */
#include "os/kept.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>

/* Is k->fd still the file k opened (in this process or, inherited, in a fork's child)? */
static bool same_file(const struct os_kept *k) {
    uint64_t dev, ino;
    return k->fd >= 0 && os_fd_id(k->fd, &dev, &ino) == 0 && dev == k->dev && ino == k->ino;
}

int os_kept_open(struct os_kept *k) {
    /* The old one closed if it is still ours (a fork's child inherits it); a number the
     * program closed is left be: it may be the program's now. */
    if (same_file(k))
        os_close(k->fd);
    k->fd = -1;
    uint64_t dev, ino;
    long fd = os_open_out_of_way(k->path, O_RDONLY | O_CLOEXEC, &dev, &ino);
    if (fd < 0)
        return (int)-fd;
    k->fd = (int)fd;
    k->pid = os_getpid();
    k->dev = dev;
    k->ino = ino;
    return 0;
}

bool os_kept_usable(const struct os_kept *k) { return k->pid == os_getpid() && same_file(k); }

int os_kept_count_lines(struct os_kept *k, long *lines) {
    if (!os_kept_usable(k))
        return EBADF;
    char buf[4096];
    long count = 0;
    for (uint64_t off = 0;;) {
        os_count(OS_CALL_OTHER);
        long n = os_pread(k->fd, buf, sizeof buf, off);
        if (n < 0)
            return (int)-n;
        if (n == 0)
            break;
        off += (uint64_t)n;
        for (long i = 0; i < n; i++)
            count += buf[i] == '\n';
    }
    *lines = count;
    return 0;
}
