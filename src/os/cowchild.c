/* cowchild: see cowchild.h. */
#define _GNU_SOURCE
#include "os/cowchild.h"
#include "os/os.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define CHAN_BYTES ((sizeof(struct cow_chan) + 4095) & ~(size_t)4095)
#define NAP_NS (20 * 1000 * 1000) /* how often a waiting parent looks whether the child died */
#define CLOSE_WAIT_NS (200 * 1000 * 1000) /* the most the parent waits for the child's closes */

/* The child's copies of the program's descriptors, closed: while it held them, a descriptor
 * the program closed stayed open underneath (a flock lock held, no end of file at a pipe's
 * reader, a port that could not be bound again: snapshot_keeps_descriptors). */
static void close_copies(void) {
    if (os_syscall(SYS_close_range, 0, ~0u, 0, 0, 0) == 0)
        return;
    struct rlimit64 lim; /* (Linux < 5.9: one at a time) */
    long n = os_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&lim, 0) == 0 &&
                     lim.rlim_cur < 65536
                 ? (long)lim.rlim_cur
                 : 65536;
    for (long fd = 0; fd < n; fd++)
        os_syscall(SYS_close, fd, 0, 0, 0, 0);
}

int cow_child_start(struct cow_child *c, const char *name) {
    int err;
    struct cow_chan *ch = os_map_shared_anon(CHAN_BYTES, &err);
    if (!ch)
        return -err;
    int parent = os_getpid();
    /* Exit signal 0, no sharing: fork's copy of the memory, without libc's fork (no atfork
     * handler of the program runs, no lock of libc is reset). */
    long r = os_syscall(SYS_clone, 0, 0, 0, 0, 0);
    if (r < 0) {
        os_unmap(ch, CHAN_BYTES);
        return (int)r;
    }
    c->ch = ch;
    if (r > 0) {
        /* The program goes on once the child holds none of its descriptors. */
        c->pid = (int)r;
        uint64_t t0 = os_monotonic_ns();
        while (!atomic_load_explicit(&ch->closed, memory_order_acquire) &&
               !os_child_gone(c->pid) && os_monotonic_ns() - t0 < CLOSE_WAIT_NS)
            os_futex_wait_shared(&ch->closed, 0, 1000000);
        return 1;
    }
    /* The child. Holds no descriptor of the program's; dies with the thread that made it; if
     * that is gone already, leaves. */
    close_copies();
    atomic_store_explicit(&ch->closed, 1, memory_order_release);
    os_futex_wake_shared(&ch->closed, 1);
    os_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (os_syscall(SYS_getppid, 0, 0, 0, 0, 0) != parent)
        cow_child_exit(1);
    os_syscall(SYS_prctl, PR_SET_NAME, (long)name, 0, 0, 0);
    /* If memory runs out while it lives (its copies of the pages the program writes), the
     * kernel kills it before the program: its round then releases nothing. */
    int fd;
    if (os_open_write("/proc/self/oom_score_adj", &fd) == 0) {
        os_write_all(fd, "1000", 4);
        os_close(fd);
    }
    /* A fault while reading is recovered by Oscar's handler (a mapping past its file's end):
     * a blocked synchronous fault signal would kill the child instead. */
    sigset_t open;
    sigemptyset(&open);
    sigaddset(&open, SIGSEGV);
    sigaddset(&open, SIGBUS);
    os_sigprocmask(SIG_UNBLOCK, &open, NULL);
    c->pid = 0;
    return 0;
}

void cow_child_send(struct cow_child *c, const uint64_t *words, unsigned n, bool last) {
    struct cow_chan *ch = c->ch;
    uint32_t s = atomic_load_explicit(&ch->sent, memory_order_relaxed);
    uint32_t t;
    while ((t = atomic_load_explicit(&ch->taken, memory_order_acquire)) != s)
        os_futex_wait_shared(&ch->taken, t, 0);
    memcpy(ch->words, words, n * sizeof *words);
    ch->n = n;
    ch->last = last;
    atomic_store_explicit(&ch->sent, s + 1, memory_order_release);
    os_futex_wake_shared(&ch->sent, 1);
}

void cow_child_exit(int code) {
    for (;;)
        os_syscall(SYS_exit_group, code, 0, 0, 0, 0);
}

long cow_child_take(struct cow_child *c, uint64_t *words, bool *last, uint64_t timeout_ns) {
    struct cow_chan *ch = c->ch;
    uint32_t t = atomic_load_explicit(&ch->taken, memory_order_relaxed);
    uint64_t t0 = os_monotonic_ns();
    while (atomic_load_explicit(&ch->sent, memory_order_acquire) == t) {
        /* (The child may have sent and exited between the load and this check.) */
        if (os_child_gone(c->pid) && atomic_load_explicit(&ch->sent, memory_order_acquire) == t)
            return -ECHILD;
        if (os_monotonic_ns() - t0 >= timeout_ns)
            return -ETIMEDOUT;
        os_futex_wait_shared(&ch->sent, t, NAP_NS);
    }
    unsigned n = ch->n <= COW_WORDS ? ch->n : COW_WORDS;
    memcpy(words, ch->words, n * sizeof *words);
    *last = ch->last != 0;
    atomic_store_explicit(&ch->taken, t + 1, memory_order_release);
    os_futex_wake_shared(&ch->taken, 1);
    return n;
}

bool cow_child_end(struct cow_child *c, bool kill) {
    if (kill)
        os_syscall(SYS_kill, c->pid, SIGKILL, 0, 0, 0);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    long r;
    do
        r = os_syscall(SYS_waitid, P_PID, c->pid, (long)&info, WEXITED | __WCLONE, 0);
    while (r == -EINTR);
    cow_child_forget(c->ch);
    c->ch = NULL;
    return r == 0 && info.si_code == CLD_EXITED && info.si_status == 0;
}

void cow_child_forget(struct cow_chan *ch) { os_unmap(ch, CHAN_BYTES); }
