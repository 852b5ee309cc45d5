/* export_madvise: madvise, noted when it makes memory that child processes do not get as it
 * is (MADV_DONTFORK, MADV_WIPEONFORK): protect mode's snapshot marks read a child's copy of
 * the process, and stop for good (scan/mark.h). libc's function does the work; errno is its. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "scan/mark.h"

#include <sys/mman.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

DECLARE(int, madvise, void *, size_t, int)

__attribute__((constructor)) static void find_real_madvise(void) { (void)real_fn_madvise(); }

OSCAR_EXPORT int madvise(void *addr, size_t len, int advice) {
    int r = real_fn_madvise()(addr, len, advice);
    if (r == 0 && (advice == MADV_DONTFORK || advice == MADV_WIPEONFORK))
        mark_note_not_copied();
    return r;
}
