/* wtrack: see wtrack.h. The kernel's structures and numbers are spelled out here: Debian
 * 12's headers (Linux 6.1) predate them. */
#define _GNU_SOURCE
#include "os/wtrack.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define FEATURE_WP_ASYNC (1ULL << 15)

struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted,
        category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN_IOCTL _IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING (1ULL << 0)
#define PM_SCAN_CHECK_WPASYNC (1ULL << 1)
#define PAGE_IS_WRITTEN (1ULL << 1)
#define PAGE_IS_FILE (1ULL << 2)
#define PAGE_IS_PRESENT (1ULL << 3)
#define PAGE_IS_SWAPPED (1ULL << 4)

/* A system call through os.c's one entry (counted, and run past the program's seccomp
 * filters: os/filters.h); errno is not touched. */
static long call(long n, long a, long b, long c) { return os_syscall(n, a, b, c, 0, 0); }

int wtrack_open(struct wtrack *t) {
    t->fd = -1;
    long fd = call(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY, 0, 0);
    if (fd < 0)
        return (int)-fd;
    fd = os_fd_out_of_way((int)fd);
    struct uffdio_api api = {.api = UFFD_API, .features = FEATURE_WP_ASYNC};
    long r = call(SYS_ioctl, fd, (long)UFFDIO_API, (long)&api);
    if (r == 0 && !(api.features & FEATURE_WP_ASYNC))
        r = -EINVAL;
    if (r == 0)
        r = -os_fd_id((int)fd, &t->dev, &t->ino);
    if (r != 0) {
        os_close((int)fd);
        return (int)-r;
    }
    t->fd = (int)fd;
    return 0;
}

bool wtrack_valid(const struct wtrack *t) {
    uint64_t dev, ino;
    return t->fd >= 0 && os_fd_id(t->fd, &dev, &ino) == 0 && dev == t->dev && ino == t->ino;
}

int wtrack_protect(struct wtrack *t, uintptr_t lo, size_t len, bool on) {
    if (!wtrack_valid(t))
        return EBADF;
    long r = 0;
    if (on) {
        struct uffdio_register reg = {.range = {.start = lo, .len = len},
                                      .mode = UFFDIO_REGISTER_MODE_WP};
        r = call(SYS_ioctl, t->fd, (long)UFFDIO_REGISTER, (long)&reg);
    }
    struct uffdio_writeprotect wp = {.range = {.start = lo, .len = len},
                                     .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    if (r == 0)
        r = call(SYS_ioctl, t->fd, (long)UFFDIO_WRITEPROTECT, (long)&wp);
    return (int)-r;
}

static long pagemap_scan(int pagemap_fd, struct pm_scan_arg *a, uintptr_t *from, uintptr_t hi) {
    long n = call(SYS_ioctl, pagemap_fd, (long)PAGEMAP_SCAN_IOCTL, (long)a);
    if (n < 0)
        return n;
    *from = a->walk_end ? (uintptr_t)a->walk_end : hi;
    return n;
}

long wtrack_written(int pagemap_fd, uintptr_t *from, uintptr_t hi, struct wtrack_run *runs,
                    size_t max, bool reprotect) {
    struct pm_scan_arg a = {
        .size = sizeof a,
        .flags = PM_SCAN_CHECK_WPASYNC | (reprotect ? PM_SCAN_WP_MATCHING : 0),
        .start = *from,
        .end = hi,
        .vec = (uint64_t)(uintptr_t)runs,
        .vec_len = max,
        .category_mask = PAGE_IS_WRITTEN,
        .return_mask = PAGE_IS_WRITTEN,
    };
    return pagemap_scan(pagemap_fd, &a, from, hi);
}

long wtrack_present(int pagemap_fd, uintptr_t *from, uintptr_t hi, struct wtrack_run *runs,
                    size_t max, bool copied) {
    struct pm_scan_arg a = {
        .size = sizeof a,
        .start = *from,
        .end = hi,
        .vec = (uint64_t)(uintptr_t)runs,
        .vec_len = max,
        /* (copied: PAGE_IS_FILE inverted and required, so absent) */
        .category_inverted = copied ? PAGE_IS_FILE : 0,
        .category_mask = copied ? PAGE_IS_FILE : 0,
        .category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
        .return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
    };
    return pagemap_scan(pagemap_fd, &a, from, hi);
}

void wtrack_close(struct wtrack *t) {
    if (wtrack_valid(t))
        os_close(t->fd);
    t->fd = -1;
}
