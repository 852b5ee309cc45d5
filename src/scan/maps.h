/* maps: /proc/self/maps (and other /proc files) read into a caller's static buffer, a line
 * at a time (no stdio, no allocation; signal-safe). Private to scan/ (roots.c, kroots.c). */
#ifndef OSCAR_SCAN_MAPS_H
#define OSCAR_SCAN_MAPS_H
#include "base/core.h"

struct maps_line {
    uintptr_t lo, hi;
    char perms[5];   /* "rw-p" */
    uint64_t offset;
    unsigned dev_major, dev_minor;
    uint64_t inode;
    const char *path; /* "" for anonymous; valid during the callback only */
};

#define MAPS_BUF 65536
/* Calls fn for each line (stops early when fn returns nonzero). buf: MAPS_BUF bytes.
 * 0, or -errno when the file cannot be read. */
int maps_each(char *buf, int (*fn)(const struct maps_line *m, void *arg), void *arg);
/* Calls fn for each line of the file at path, its newline cut (stops early when fn returns
 * nonzero). buf: MAPS_BUF bytes. 0, or -errno when the file cannot be read. */
int proc_lines(const char *path, char *buf, int (*fn)(char *line, void *arg), void *arg);
#endif
