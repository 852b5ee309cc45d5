/* export_ns: libc's calls that the kernel refuses (EINVAL) to a process of more than one
 * thread: unshare with CLONE_NEWUSER (or CLONE_THREAD, CLONE_SIGHAND, CLONE_VM), and setns
 * into a user namespace. Protect mode's marks start threads of Oscar's own (the marker, the
 * team's helpers: scan/mark.h); a program of one thread must still get what it gets under
 * glibc, so they leave first (mark_threads_quit) and the next marks start them again. A
 * program with threads of its own gets EINVAL as under glibc. The real functions are libc's,
 * found with dlsym(RTLD_NEXT); errno is theirs.
 *
 * And chroot: Oscar reads /proc/self through a descriptor of /proc taken at start where the
 * path is gone (os/procroot.h); a program that closed it takes it back here, before it shuts
 * itself in. */
#define _GNU_SOURCE
#include "base/core.h"
#include "os/procroot.h"
#include "scan/mark.h"

#include <dlfcn.h>
#include <sched.h>

/* libc's functions. */
static struct {
    int (*unshare)(int);    /* set at the first call (two racing calls set the same value) */
    int (*setns)(int, int); /* likewise */
    int (*chroot)(const char *); /* likewise */
} ns_state;

/* What needs a process of one thread: a new user namespace, or unsharing what threads share. */
#define SINGLE_THREADED (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

OSCAR_EXPORT int unshare(int flags) {
    if (!ns_state.unshare)
        *(void **)&ns_state.unshare = dlsym(RTLD_NEXT, "unshare");
    if (flags & SINGLE_THREADED)
        mark_threads_quit();
    return ns_state.unshare(flags);
}

/* nstype 0 accepts any namespace, a user namespace too. */
OSCAR_EXPORT int setns(int fd, int nstype) {
    if (!ns_state.setns)
        *(void **)&ns_state.setns = dlsym(RTLD_NEXT, "setns");
    if (nstype == 0 || (nstype & CLONE_NEWUSER))
        mark_threads_quit();
    return ns_state.setns(fd, nstype);
}

OSCAR_EXPORT int chroot(const char *path) {
    if (!ns_state.chroot)
        *(void **)&ns_state.chroot = dlsym(RTLD_NEXT, "chroot");
    os_proc_root_check(); /* (no errno of its own: the program sees chroot's) */
    return ns_state.chroot(path);
}
