/* nopark: stretches of a thread's code that a stop of the world (scan/world.c) must not park
 * it in. Strict and fast modes mark a freed object's shadow page revoked in its entry, then
 * revoke it with a system call; a fork that parked the thread in between left the page, in
 * the child, mapped onto the parent's heap (export/fork.c remaps only what the entries call
 * mapped): a dangling write in the child reached the parent's object in that slot
 * (tests/programs/fork_revoke_window.c).
 *
 * A park request that arrives inside such a stretch is noted and the handler returns; when
 * the outermost stretch ends, the thread sends itself the park signal again and parks then.
 * The stopper waits for it as for any thread (a stretch is one system call long). Per thread,
 * no lock, signal-safe: only the thread itself and its own signal handler touch it. */
#ifndef OSCAR_OS_NOPARK_H
#define OSCAR_OS_NOPARK_H
#include "os/os.h"
#include <stdatomic.h>
#include <stdint.h>

struct os_nopark {
    int depth; /* stretches entered and not left */
    int due;   /* a park request arrived inside one: by the park signal (1) or the second
                * one (its number: os_nopark_defer_second) */
};
extern __thread struct os_nopark os_nopark_tls __attribute__((tls_model("initial-exec")));
/* The park signal and the cookie of its requests (os_send_request; set once by scan/world.c's
 * init; signal 0: none, nothing to send). */
extern int os_nopark_signal;
extern uint64_t os_nopark_cookie;
/* Testing: nanoseconds to spin inside every stretch (OSCAR_TEST_REVOKE_SPIN_US; set once at
 * init), so a test can stop the world or fork in one. */
extern uint64_t os_nopark_spin_ns;

void os_nopark_repark(void);

static inline void os_nopark_enter(void) {
    os_nopark_tls.depth++;
    atomic_signal_fence(memory_order_seq_cst);
}

/* Testing: the spin, where a stretch is at its most fragile. */
static inline void os_nopark_test_pause(void) {
    if (__builtin_expect(os_nopark_spin_ns != 0, 0))
        os_spin_ns(os_nopark_spin_ns);
}

static inline void os_nopark_leave(void) {
    atomic_signal_fence(memory_order_seq_cst);
    if (--os_nopark_tls.depth == 0 && __builtin_expect(os_nopark_tls.due, 0))
        os_nopark_repark();
}

/* For the park handler: true if the thread is inside a stretch (the request is noted). A
 * request handled outside one clears a noted one (os_nopark_parked). */
static inline int os_nopark_defer(void) {
    if (!os_nopark_tls.depth)
        return 0;
    os_nopark_tls.due = 1;
    return 1;
}
/* ... for a request by the second park signal sig (a thread that blocks the first): the
 * request made again at the stretch's end is by sig. */
static inline int os_nopark_defer_second(int sig) {
    if (!os_nopark_tls.depth)
        return 0;
    os_nopark_tls.due = sig;
    return 1;
}
static inline void os_nopark_parked(void) { os_nopark_tls.due = 0; }
#endif
