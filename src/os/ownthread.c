/* ownthread: see ownthread.h. */
#define _GNU_SOURCE
#include "os/ownthread.h"
#include "os/os.h"

#include <errno.h>
#include <pthread.h>

int os_thread_start(void *(*fn)(void *), void *arg, void *stack, size_t size,
                    const sigset_t *open, const char *name) {
    int saved = errno;
    pthread_attr_t attr;
    int err = pthread_attr_init(&attr);
    if (err)
        return err;
    sigset_t mask;
    sigfillset(&mask);
    for (int s = 1; s < NSIG; s++)
        if (sigismember(open, s) == 1)
            sigdelset(&mask, s);
    pthread_t t;
    if (!(err = pthread_attr_setstack(&attr, stack, size)) &&
        !(err = pthread_attr_setsigmask_np(&attr, &mask)) &&
        !(err = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)) &&
        !(err = pthread_create(&t, &attr, fn, arg)))
        pthread_setname_np(t, name);
    pthread_attr_destroy(&attr);
    errno = saved;
    return err;
}

bool os_thread_gone(long tid, uint64_t timeout_ns) {
    _Atomic uint32_t nap = 0;
    for (uint64_t t0 = os_monotonic_ns();;) {
        if (os_tgkill(os_getpid(), tid, 0) == ESRCH) /* (ESRCH once the kernel released it) */
            return true;
        if (os_monotonic_ns() - t0 > timeout_ns)
            return false;
        os_futex_wait(&nap, 0, 50 * 1000); /* (a 50 us nap) */
    }
}
