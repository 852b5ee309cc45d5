/* cowchild: a copy-on-write child of the process, for protect mode's snapshot mark
 * (scan/mark.c): clone() without CLONE_VM gives the child the process's memory as it was at
 * that instant, whatever the program writes afterwards, at the price of a page-table copy
 * (~15 ms for 400 MiB resident here) and of a copy of each page the program first writes
 * while the child lives. The child reads that memory and sends its findings back.
 *
 * What the program could notice, and why it does not: the child's exit signal is 0, so no
 * SIGCHLD, and wait() and waitpid() do not see it (only __WALL or __WCLONE would); every
 * signal but the synchronous faults stays blocked in it (the program's handlers never run
 * there); it dies with the thread that made it (PR_SET_PDEATHSIG) and leaves by exit_group,
 * no exit handler; it is the first the kernel kills when memory runs out (oom_score_adj
 * 1000). Its answers come through a shared mapping of a few pages made for the
 * round, not a descriptor (a program that closes every descriptor, as daemons do, could
 * otherwise have its own read by us under the same number). It counts toward RLIMIT_NPROC
 * while it lives. */
#ifndef OSCAR_OS_COWCHILD_H
#define OSCAR_OS_COWCHILD_H
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COW_WORDS 4096 /* words per batch */

/* Batches from the child to the parent, one at a time (the futex words are shared). */
struct cow_chan {
    _Atomic uint32_t sent;  /* batches the child published */
    _Atomic uint32_t taken; /* batches the parent took */
    uint32_t n, last;       /* the batch's words; it is the last */
    _Atomic uint32_t closed; /* futex: the child closed its copies of the descriptors */
    uint64_t words[COW_WORDS];
};

struct cow_child {
    int pid;              /* the parent's view: the child's pid */
    struct cow_chan *ch;  /* shared by both */
};

/* Start the child. Call it from a thread that blocks every signal. 1 in the parent, 0 in the
 * child (which runs on, from here, as a single thread), or a negative errno (no child:
 * EAGAIN at RLIMIT_NPROC, ENOMEM...). */
int cow_child_start(struct cow_child *c, const char *name);
/* The child: send n words (n <= COW_WORDS), the last batch if last. Waits until the parent
 * took the batch before (it dies with the parent). */
void cow_child_send(struct cow_child *c, const uint64_t *words, unsigned n, bool last);
/* The child: leave, at once (no exit handler, nothing flushed). */
__attribute__((noreturn)) void cow_child_exit(int code);
/* The parent: the next batch into words (COW_WORDS of room): its length, *last set on the
 * last; -ECHILD when the child ended without it, -ETIMEDOUT after timeout_ns without one. */
long cow_child_take(struct cow_child *c, uint64_t *words, bool *last, uint64_t timeout_ns);
/* The parent: kill the child if asked, reap it, unmap the channel. true: it exited with 0. */
bool cow_child_end(struct cow_child *c, bool kill);
/* A fork child of the parent (the program's, not the cow child): unmap the channel it
 * inherited from a round in progress. */
void cow_child_forget(struct cow_chan *ch);
#endif
