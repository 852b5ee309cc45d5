/* giveway: waiters that a busy thread lets go first. Some things are taken in turns by
 * stopping and retrying: a send of the park signal to another thread takes the world lock
 * only between two stops (scan/world.c), a fork starts only while no mark is stopping the
 * world (scan/mark.c). A waiter yields between its tries, so a thread that stops the world
 * again and again (marks back to back: a tiny quarantine floor, two threads freeing) won
 * that race nearly every time: sends and forks waited up to seconds. So a waiter says it
 * waits, and a stopper about to begin yields to it first, a bounded time.
 *
 * A waiter that never says it is done (a handler of the program's jumped out of its wait)
 * would leave the count up for good: once a stopper's yield timed out, the stoppers do not
 * wait again until another wait begins. Lock-free; signal-safe. */
#ifndef OSCAR_OS_GIVEWAY_H
#define OSCAR_OS_GIVEWAY_H
#include <stdatomic.h>
#include <stdint.h>

struct os_giveway {
    _Atomic uint32_t waiting;  /* waits begun and not ended */
    _Atomic uint32_t begun;    /* waits ever begun (a new one makes a stale count count) */
    _Atomic uint32_t stale_at; /* begun + 1 when a yield last timed out; 0: never */
};

/* The waiter's side: before its first try, and once it got what it waited for (or gave up). */
void os_giveway_wait_begins(struct os_giveway *g);
void os_giveway_wait_ends(struct os_giveway *g);
/* How long a stopper yields at most: a send or a fork takes far less once it runs, and a
 * stop put off this long still comes. */
#define OS_GIVEWAY_NS 20000000ull
/* The stopper's side: yields while someone waits, OS_GIVEWAY_NS at most. */
void os_giveway_yield(struct os_giveway *g);
/* A fork child: the parent's other threads, and their waits, are not there. */
void os_giveway_fork_child(struct os_giveway *g);
#endif
