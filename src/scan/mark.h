/* mark: protect mode's conservative mark. Stops the world (scan/world.h), visits every
 * aligned word of every root (scan/roots.h) and of every live heap object, and keeps every
 * quarantined object some word points into (interior and one-past-the-end count); then
 * resumes the world and releases every other quarantined object to its page.
 *
 * A mark that cannot stop the world (a thread did not answer, no world module) releases
 * nothing: a quarantined object is handed out again only after a complete mark. */
#ifndef OSCAR_SCAN_MARK_H
#define OSCAR_SCAN_MARK_H
#include "base/core.h"

/* Run one mark (a try: returns at once if another thread is marking). With concurrent marks
 * (OSCAR_MARK, Linux 6.7+) the marking thread of Oscar's own is asked for one and this
 * returns at once, unless the quarantine is far past its trigger (then it waits for the
 * round). Otherwise the mark runs here: the caller's stack from its own frame up, and its
 * registers, are roots. */
void mark_run(void);
/* Run a whole mark before returning (malloc_trim): with concurrent marks, ask the marking
 * thread for one and wait for it (at most ~10 s). */
void mark_wait(void);
/* Reads the mark's settings. */
void mark_init(void);
/* The program needs a process of one thread (unshare(CLONE_NEWUSER), setns into a user
 * namespace): Oscar's own threads (the marker, the team's helpers) leave, and this returns
 * once they are gone; marks after it start them again. false: one was still there after
 * ~1 s. */
bool mark_threads_quit(void);
/* fork. prepare: false when the forking thread is the marking thread (a signal handler
 * interrupted the mark): then the caller must take no lock (parked threads may hold them).
 * A mark in progress on another thread is not waited for: child undoes it in the child. */
bool mark_fork_prepare(void);
void mark_fork_parent(void);
void mark_fork_child(void);
/* The program made memory that child processes do not get as it is (MADV_DONTFORK: not at
 * all; MADV_WIPEONFORK: zeroed): a snapshot mark, which reads a child's copy, would miss a
 * pointer kept there, so there are none from now on. Any thread, lock-free. */
void mark_note_not_copied(void);
#endif
