/* team: threads of Oscar's own that share the reading of a stopped mark (scan/mark.c). While
 * the world is stopped the program's threads wait and their CPUs are idle: the helpers take
 * chunks of the heap's pages from a shared counter beside the marking thread, so a stop lasts
 * about 1/N as long on N CPUs (OSCAR_MARK_THREADS).
 *
 * A helper is started once per process (a fork child starts its own) by team_start, holds no
 * lock and no pointer of the program's, its stack is Oscar's metadata (never a root), and
 * stops of the world leave it running (scan/world.h, world_exempt_self). Between jobs it
 * sleeps on a futex, waking every 250 ms to leave if the program's threads are all gone
 * (world_only_own_threads: glibc ends the process when its last pthread exits). Nothing here
 * allocates.
 *
 * Locks: none. A job runs with the world stopped, and the stopper holds the world lock. */
#ifndef OSCAR_SCAN_TEAM_H
#define OSCAR_SCAN_TEAM_H
#include "base/core.h"

/* One chunk of a job: items [first, last) of it (the heap's pages). */
typedef void (*team_job)(size_t first, size_t last);

/* threads: how many share a job, the caller included (1: no helper). Set once at init. */
void team_init(unsigned threads);
/* Starts the helpers if they are not running (pthread_create: the caller holds no lock of
 * Oscar's or libc's). How many helpers run. */
unsigned team_start(void);
/* Helpers running now (0 before team_start, or when none could start), and how many
 * OSCAR_MARK_THREADS asks for. */
unsigned team_helpers(void);
unsigned team_wanted(void);
/* Did the user set OSCAR_MARK_THREADS (then every mark worth sharing is shared; with 0, the
 * auto setting, a small heap's marks share it only where a trial found it pays: scan/mark.c)? */
bool team_asked(void);
/* Hands items [0, n) out in chunks of `chunk` to the helpers (they start at once); the caller
 * may do other work, then joins with team_finish, which takes chunks too and returns once
 * every chunk is done. Without helpers, team_finish does the whole job. One job at a time. */
void team_begin(team_job job, size_t n, size_t chunk);
void team_finish(void);
/* Make the helpers leave and wait until they are gone (the program asks for a process of one
 * thread: unshare(CLONE_NEWUSER)); a later team_start starts them again. No job may be in
 * progress (the caller holds the mark). false: one was still there after ~1 s per helper. */
bool team_quit(void);
/* A fork child: no helper of the parent's exists here. */
void team_fork_child(void);
#endif
