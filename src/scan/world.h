/* world: the registry of the process's threads, and stopping them all at a safe point.
 *
 * Shared by protect mode's mark (scan/mark.c) and by fork (export/fork.c). A stop sends the
 * park signal to every other thread of the process (found in /proc/self/task, so threads
 * created by any means are seen, also those blocked in the kernel); each one saves its
 * registers in its signal frame, records where its stack is, and waits until world_resume().
 * The program can never block the park signal (export/ wraps sigprocmask and friends with
 * world_unblockable()). A thread that does not answer within the timeout makes the stop fail:
 * the caller skips its round instead of hanging.
 *
 * Locks: world_stop() takes the world lock (rank in base/lock.h) and keeps it until
 * world_resume(). Never call either from a signal handler. */
#ifndef OSCAR_SCAN_WORLD_H
#define OSCAR_SCAN_WORLD_H
#include "base/core.h"
#include "os/kheld.h"
#include <signal.h>
#include <sys/types.h>

#define WORLD_MAX 32768 /* threads parked at once (a stop with more fails) */

/* One parked thread, as it was when it stopped. Valid between world_stop and world_resume. */
struct world_thread {
    pid_t tid;
    pid_t proc_tid;                     /* its number in /proc: tid, unless that /proc is of
                                         * another pid namespace (unshare -p without a /proc
                                         * of its own): the stopper's, from NSpid */
    uintptr_t sp;                       /* stack pointer at the moment it was interrupted */
    uintptr_t altstack_lo, altstack_hi; /* its sigaltstack, if one is set (else 0, 0) */
    uintptr_t regs_lo, regs_hi;         /* where its saved registers (ucontext) lie */
    uintptr_t tp;                       /* its thread pointer (os_thread_pointer) */
    uintptr_t kheld[OS_KHELD];          /* what the kernel keeps for it (os/kheld.h) */
};

int world_init(void);                 /* installs the park handler; 0 or -errno */
/* Maps world_init's tables (2.7 MB of address space, untouched until a stop uses them) ahead
 * of it: strict and fast modes do so before their own reservations, which under a tight
 * RLIMIT_AS (512 MiB) took what was left, so that no stop, and no proof that old addresses
 * may be handed out again, could ever be made. 0 or -errno. */
int world_reserve(void);
int world_stop(void);                 /* 0: every other thread parked; -ETIMEDOUT / -errno:
                                         none left parked, nothing to undo */
/* Are Oscar's `own` threads all that is left of the process (its first thread gone with
 * pthread_exit, and every other thread of the program's too)? Then they must leave: glibc
 * ends the process with exit(0) when its last pthread exits, and Oscar's are pthreads. */
bool world_only_own_threads(unsigned own);
/* world_stop, or -EBUSY at once where a stop is under way (another thread's, or this one's:
 * a path that may run inside a stop of its own, mem/maplimit.c's reopen). */
int world_try_stop(void);
size_t world_count(void);             /* parked threads (the caller is not one of them) */
const struct world_thread *world_thread_at(size_t i);
void world_resume(void);
int world_park_signal(void);          /* the signal number used to park */
/* Both park signals as a mask (bit n - 1 for signal n, as in /proc): SIGPWR and the second,
 * glibc's SIGSETXID, sent to a thread that blocks the first. What holds one back (the fault
 * handler, a handler of the program's on an alternate stack) holds both. */
uint64_t world_park_mask(void);
/* How many of the calling thread's system calls a park request has cut short: EINTR from a
 * call the kernel does not restart after a handler (poll, epoll_wait, select, nanosleep,
 * pause, sigsuspend...), with no signal of the program's waiting. A wrapper of such a call
 * reads it before and after: changed, the EINTR was ours, and it goes on waiting
 * (export/export_waits.c). */
uint32_t world_calls_cut(void);
/* When the wrapper's current call (world_call_begins) was first cut (CLOCK_MONOTONIC ns, no
 * earlier than the moment it stopped waiting): a sleep that goes on with the time the kernel
 * said was left counts from here, so the time spent parked is not slept again. */
uint64_t world_cut_at(void);
/* A wrapper is about to make its call (again): the next cut is this call's. */
void world_call_begins(void);
/* Testing (OSCAR_TEST_PARK_SPIN_US; set once at init): nanoseconds a thread that took the
 * park signal spins before it counts as parked, and again once resumed, before it leaves the
 * handler. */
extern uint64_t world_test_park_spin_ns;
/* The calling thread (one of Oscar's own, that holds no lock and no pointer of the program's)
 * is left running by every stop from now on. false: the table (WORLD_EXEMPT_MAX) is full.
 * _clear: none is, and the only thread known is the caller (a fork child: the threads were the
 * parent's). */
#define WORLD_EXEMPT_MAX 16
bool world_exempt_self(void);
void world_exempt_drop(void); /* the calling thread no longer is (it is about to exit) */
void world_exempt_clear(void);
void world_unblockable(sigset_t *set); /* removes the park signal from a mask the program sets */
/* The program's sigaction for the park signal (export/export_signal.c): recorded, ours stays
 * installed; a park signal that is not a request of ours goes on to it. 1, or 0 before
 * world_init (then the caller goes to libc). */
int world_program_sigaction(const struct sigaction *act, struct sigaction *old);
/* The program sends the park signal to one of its own threads (raise, pthread_kill, tgkill,
 * pthread_sigqueue): the send goes between _begin and _end. The park signal is a standard
 * signal, pending at most once per thread: a request of ours pending at that thread would
 * swallow the program's. To itself (self): the park signal is blocked meanwhile and the
 * thread notes the send, so a delivery of ours answers the program's too. To another: under
 * the world lock with every signal blocked (a stop asks and is answered under that lock, so
 * no request of ours is pending then). (tests/programs/signal_park_counts.c) */
struct world_send {
    sigset_t old; /* the caller's mask */
    bool active;  /* _begin did something for _end to undo */
    bool locked;  /* the world lock is held */
};
void world_program_send_begin(bool self, struct world_send *w);
void world_program_send_end(struct world_send *w);
/* The program execs: the real call goes between _begin and _end. A stop asks each thread
 * with a signal of its own, and one pending at a thread that execs stays pending in the new
 * image, whose handler is the default one: termination. _begin takes the world lock (no stop
 * can ask meanwhile: world_program_send_begin) and puts the caller's mask back; true if it
 * did (false: a vfork child, whose lock is its parent's, or an exec inside one). _end, after
 * an exec that failed, lets stops go on. */
bool world_exec_begin(struct world_send *w);
void world_exec_end(struct world_send *w);
void world_fork_child(void); /* the fork child's state (after world_resume) */
#endif
