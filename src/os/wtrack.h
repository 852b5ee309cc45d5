/* wtrack: which pages of a range were written since a moment, for protect mode's concurrent
 * mark (scan/mark.c): a userfaultfd in asynchronous write-protect mode (Linux 6.7+,
 * UFFD_FEATURE_WP_ASYNC: a write to a protected page is let through by the kernel itself, no
 * handler thread, and unprotects the page) and the PAGEMAP_SCAN ioctl, which lists the pages
 * written since they were protected. Soft-dirty bits would do the same job, but are compiled
 * out of many kernels.
 *
 * A tracker lives as long as the process (a fork child opens its own): each mark protects the
 * heap, reads what was written, and unprotects it. Its descriptor sits high and close-on-exec.
 * If the program closes or replaces it, wtrack_written fails and the caller treats every
 * page as written (and opens a new tracker). */
#ifndef OSCAR_OS_WTRACK_H
#define OSCAR_OS_WTRACK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wtrack {
    int fd;            /* the userfaultfd, or -1 */
    uint64_t dev, ino; /* its identity: closed only while it is still ours */
};

/* A page range written since it was protected: [lo, hi). */
struct wtrack_run {
    uint64_t lo, hi, flags;
};

/* Open a tracker (no range yet). 0, or an errno value (ENOSYS, EINVAL: the kernel has no
 * asynchronous write-protect; EPERM: userfaultfd is forbidden here). The descriptor is the
 * lowest free one for a moment before it moves high: open it while the program's threads
 * are stopped, or a descriptor the program opens at the same time may get another number. */
int wtrack_open(struct wtrack *t);
/* Still our descriptor (the program may have closed or replaced it). */
bool wtrack_valid(const struct wtrack *t);
/* Track [lo, lo + len) (page aligned, all of it mapped; memory mapped there since the last
 * call is registered too) and protect it: writes from now on are listed by wtrack_written.
 * on false: every page of it writable again (what closing the tracker also does). */
int wtrack_protect(struct wtrack *t, uintptr_t lo, size_t len, bool on);
/* Pages of [*from, hi) written since they were protected (or last re-protected), in runs,
 * at most max of them: returns how many, with *from moved past what was read (hi once done);
 * a negative errno when the tracking was lost (the tracker closed by the program, a range not
 * tracked). reprotect: protect the pages listed again in the same step (a write after it
 * counts for the next call). pagemap_fd: /proc/self/pagemap, opened by this process. */
long wtrack_written(int pagemap_fd, uintptr_t *from, uintptr_t hi, struct wtrack_run *runs,
                    size_t max, bool reprotect);
/* Pages of [*from, hi) present or swapped out, in runs, as wtrack_written (without any
 * tracker: PAGEMAP_SCAN, Linux 6.7+, which skips the empty parts of the page tables, so a
 * reservation of terabytes costs little). copied: only those that are no file's page (a
 * private file mapping's pages the process wrote). A negative errno where the kernel has no
 * such call. */
long wtrack_present(int pagemap_fd, uintptr_t *from, uintptr_t hi, struct wtrack_run *runs,
                    size_t max, bool copied);
/* Close the tracker (if the descriptor is still ours): every page is writable again. */
void wtrack_close(struct wtrack *t);
#endif
