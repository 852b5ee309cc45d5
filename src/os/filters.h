/* filters: the seccomp filters the program installs, as Oscar's own system calls must obey
 * them.
 *
 * A program may sandbox itself (OpenSSH's pre-authentication child, browsers' renderers,
 * services): a filter the kernel runs at every system call of the thread, which lets it
 * through, fails it with an errno, or kills the process. Oscar's calls (a mark's reading of
 * /proc, a stop's signals, a strict page's guard) are not the program's, and a filter written
 * for the program kills it at the first one it did not expect: under glibc it lives.
 *
 * So the export layer hands each filter to this module before it installs it (prctl
 * PR_SET_SECCOMP, syscall(SYS_seccomp), strict mode too), and from then on every system call
 * of Oscar's (os.c's one entry) is first run through a copy of each filter: one whose answer
 * would be to kill, trap, trace or ask a supervisor is not made, and fails with EPERM (the
 * caller's usual error path: a mark that cannot read its roots reuses nothing, a page that
 * cannot be guarded stays unguarded); one the filter would let through or fail with an errno
 * is made (the kernel then answers as it will). Conservative on two counts: a filter counts
 * for every thread (the kernel applies it to the installing thread and those it makes later;
 * strict mode, which that thread cannot leave nor make threads in, counts for it alone),
 * and a filter Oscar did not see (installed before it was loaded, across an exec, or by a raw
 * system call) is not known: those calls are made as before (a container's filter, which
 * fails what it refuses with an errno, is the common case). */
#ifndef OSCAR_OS_FILTERS_H
#define OSCAR_OS_FILTERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Some filter is known: os.c then asks os_filters_allow before each call. */
extern _Atomic bool os_filters_on;

/* Before the program installs a filter (fprog: the program's struct sock_fprog, read with
 * os_read_own: a bad pointer is the kernel's to refuse) or strict mode: a handle, or -1 when
 * Oscar has no room for it (then every call of Oscar's is refused from now on: it cannot know
 * what the filter allows). A filter whose instructions cannot be read refuses every call.
 * The filter counts from now on, so that no call of Oscar's slips through between the
 * kernel's install and os_filter_done. */
int os_filter_add(const void *fprog, bool strict);
/* The program's install of handle h returned: ok false drops the filter again. */
void os_filter_done(int h, bool ok);

/* Would every known filter let system call nr with these arguments through (or fail it with
 * an errno)? false: some filter would kill, trap, trace or notify; the first such call (of
 * the process) calls os_filters_refused_hook, for the warning. */
bool os_filters_allow(long nr, const long args[6]);

/* The same question, asked ahead (no warning): may Oscar start something that makes these
 * calls itself, past os.c (libc's pthread_create)? */
bool os_filters_would_allow(long nr, const long args[6]);

/* Called once, at the first call refused (set by an upper layer at init: it warns). */
extern void (*os_filters_refused_hook)(long nr);
#endif
