/* kept: a /proc file of this process that Oscar reads again and again while the program runs
 * (the mapping count's /proc/self/maps, mem/maplimit.c), opened once and kept past the soft
 * RLIMIT_NOFILE (os_fd_out_of_way), read with pread from offset 0. An open while the program
 * runs takes the lowest free number for a moment: a thread of the program that closes every
 * descriptor and opens one then gets the next (tests/programs/lowest_descriptor.c).
 *
 * Opened again only where it must be, by its user: in a fork's child (the file named the
 * parent when it was opened; maplimit_fork_child, single-threaded), and once the program
 * closed it (closefrom, close_range: its number may hold a file of the program's now, told
 * apart by device and inode and then never read nor closed). Not thread-safe: its user
 * serializes the calls. */
#ifndef OSCAR_KEPT_H
#define OSCAR_KEPT_H
#include <stdbool.h>
#include <stdint.h>

struct os_kept {
    const char *path;
    int fd;           /* -1: not open */
    int pid;          /* the process that opened it */
    uint64_t dev, ino; /* its identity, to tell it from a descriptor of the program's */
};
#define OS_KEPT_INIT(p) {(p), -1, 0, 0, 0}

/* Opens (again) k->path, past the soft limit. 0 or an errno. */
int os_kept_open(struct os_kept *k);
/* Is k open, in this process, and still the file it opened (the program did not close it)? */
bool os_kept_usable(const struct os_kept *k);
/* The count of k's lines, read whole from offset 0. EBADF where k is not usable: the caller
 * opens it again (os_kept_open) when no thread of the program can open a file meanwhile.
 * 0 or an errno. */
int os_kept_count_lines(struct os_kept *k, long *lines);
#endif
