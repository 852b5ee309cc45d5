/* export_madvise: madvise, noted when it makes memory that child processes do not get as it
 * is (MADV_DONTFORK, MADV_WIPEONFORK), and mmap when it maps such memory (MAP_DROPPABLE,
 * Linux 6.11+: wiped on fork): protect mode's snapshot marks read a child's copy of the
 * process, and stop for good (scan/mark.h; syscall(SYS_madvise) is noted by
 * export/export_seccomp.c's syscall). libc's functions do the work; errno is theirs. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/madvise.h"
#include "export/real.h"
#include "heap/protect_heap.h"
#include "scan/mark.h"

#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* (Linux 6.13) */
#endif

#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08
#endif

DECLARE(int, madvise, void *, size_t, int)
DECLARE(void *, mmap, void *, size_t, int, int, int, off_t)

__attribute__((constructor)) static void find_real_madvise(void) {
    (void)real_fn_madvise();
    (void)real_fn_mmap();
}

void export_note_madvise(int advice) {
    if (advice == MADV_DONTFORK || advice == MADV_WIPEONFORK)
        mark_note_not_copied();
}

void export_note_advice_before(uintptr_t addr, size_t len, int advice) {
    if (advice == MADV_GUARD_INSTALL)
        ph_note_foreign(addr, len);
}

void export_note_map_fixed(uintptr_t addr, size_t len, int flags) {
    if (!(flags & MAP_FIXED) || !ph_note_foreign(addr, len))
        return;
    if ((flags & MAP_TYPE) != MAP_PRIVATE)
        mark_note_not_copied();
}

/* (mmap64 is the same function in glibc: an alias of it here too.) */
OSCAR_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    export_note_map_fixed((uintptr_t)addr, len, flags);
    void *p = real_fn_mmap()(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && (flags & MAP_TYPE) == MAP_DROPPABLE)
        mark_note_not_copied();
    return p;
}
OSCAR_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

OSCAR_EXPORT int madvise(void *addr, size_t len, int advice) {
    export_note_advice_before((uintptr_t)addr, len, advice);
    int r = real_fn_madvise()(addr, len, advice);
    if (r == 0)
        export_note_madvise(advice);
    return r;
}
