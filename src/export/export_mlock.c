/* export_mlock: mlockall, locking pages as they are touched (MCL_ONFAULT) rather than all at
 * once. MCL_CURRENT locks every mapping of the process, and MCL_FUTURE every one made after,
 * and without MCL_ONFAULT the kernel makes each page of them resident at once: Oscar's are
 * reservations of hundreds of GiB (its heap, its metadata, strict mode's shadow region), so
 * a program that locks its memory against swapping (as key agents and real-time programs do)
 * was killed by the OOM killer in every mode, or made the machine swap (`mlockall_heap`).
 * With MCL_ONFAULT every page the program has or touches is locked all the same, and nothing
 * is made resident that would not be: what changes is that pages not touched yet are not
 * faulted in ahead (a program that counts on no page fault after mlockall takes them as it
 * first touches its pages). libc's function does the work; errno is its. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"

#include <errno.h>
#include <sys/mman.h>

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

DECLARE(int, mlockall, int)

__attribute__((constructor)) static void find_real_mlockall(void) { (void)real_fn_mlockall(); }

OSCAR_EXPORT int mlockall(int flags) {
    if (!real_fn_mlockall()) {
        errno = ENOSYS;
        return -1;
    }
    /* (flags the kernel refuses stay refused: EINVAL, as under glibc) */
    if (flags & (MCL_CURRENT | MCL_FUTURE))
        flags |= MCL_ONFAULT;
    return real_fn_mlockall()(flags);
}
