/* filecopy: copying part of one file into another in the kernel (fork's copy of the canonical
 * heap, mem/canon.c), and the parent process's pid (a forked child helping with that copy
 * stops waiting for its parent once it is gone). */
#ifndef OSCAR_OS_FILECOPY_H
#define OSCAR_OS_FILECOPY_H
#include <stdint.h>

/* Copy bytes [from, to) of file src to the same offsets of file dst (copy_file_range). 0 or
 * an errno value. */
int os_copy_range(int src, int dst, uint64_t from, uint64_t to);
/* Read bytes [from, to) of file src to the same offsets from dst, memory. 0 or an errno. */
int os_read_range(int src, void *dst, uint64_t from, uint64_t to);
int os_parent_pid(void);
#endif
