/* export_mprotect: mprotect and pkey_mprotect, noted when they take write access away: the
 * program may have written a pointer into a private file mapping and sealed it, and protect
 * mode's marks then read the pages it wrote there (scan/roots.h); and when they take read
 * access away from a block of the heap (or give it a protection key): the mark reads those
 * pages another way (heap/protect_heap.h, ph_note_foreign). libc's functions do the work;
 * errno is theirs. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/madvise.h"
#include "export/real.h"
#include "heap/protect_heap.h"
#include "scan/roots.h"

#include <errno.h>
#include <sys/mman.h>

DECLARE(int, mprotect, void *, size_t, int)
DECLARE(int, pkey_mprotect, void *, size_t, int, int)

__attribute__((constructor)) static void find_real_mprotect(void) {
    (void)real_fn_mprotect();
    (void)real_fn_pkey_mprotect();
}

void export_note_protect(uintptr_t addr, size_t len, int prot, int pkey) {
    if (!(prot & PROT_WRITE))
        roots_note_sealed(); /* (before: a mark that reads it must know) */
    if (!(prot & PROT_READ) || pkey > 0)
        ph_note_foreign(addr, len);
}

OSCAR_EXPORT int mprotect(void *addr, size_t len, int prot) {
    export_note_protect((uintptr_t)addr, len, prot, 0);
    return real_fn_mprotect()(addr, len, prot);
}

OSCAR_EXPORT int pkey_mprotect(void *addr, size_t len, int prot, int pkey) {
    export_note_protect((uintptr_t)addr, len, prot, pkey);
    if (!real_fn_pkey_mprotect()) { /* (a libc older than 2.27) */
        errno = ENOSYS;
        return -1;
    }
    return real_fn_pkey_mprotect()(addr, len, prot, pkey);
}
