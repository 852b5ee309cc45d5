/* ownthread: a thread of Oscar's own (protect mode's marking thread), started through libc so
 * that libc knows it (TLS, thread list, fork). Its stack is given by the caller (Oscar's
 * metadata: never a root of a mark), and it starts with every signal blocked except those in
 * `open` (a process-directed signal of the program's must go to the program's threads). */
#ifndef OSCAR_OS_OWNTHREAD_H
#define OSCAR_OS_OWNTHREAD_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0 or an errno value. Calls libc's pthread_create, which allocates (its thread descriptor's
 * DTV): never call it while holding one of Oscar's locks. */
int os_thread_start(void *(*fn)(void *), void *arg, void *stack, size_t size,
                    const sigset_t *open, const char *name);
/* Oscar's threads alive in this process (started by os_thread_start); each calls
 * os_thread_leaving just before it returns; a fork's child has none. */
unsigned os_threads_own(void);
void os_thread_leaving(void);
void os_threads_fork_child(void);
/* Wait until thread tid of this process is gone (released by the kernel: no longer counted
 * among the process's threads), at most timeout_ns. false on timeout. */
bool os_thread_gone(long tid, uint64_t timeout_ns);
#endif
