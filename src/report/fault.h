#ifndef OSCAR_FAULT_H
#define OSCAR_FAULT_H
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
/* Install the SIGSEGV/SIGBUS handler that reports use-after-free (see fault.c). */
void fault_init(void);
/* OSCAR_STATS_SIGNAL: emit the statistics whenever sig arrives. Fault signals (and those
 * that cannot be caught, or are Oscar's or glibc's own) are refused with one warning line. */
void fault_init_stats_signal(int sig);
/* The program's sigaction for SIGSEGV/SIGBUS (export/export_signal.c): records it as the
 * handler after ours. 1 when sig is one of those (and the handler is installed), else 0:
 * the caller then goes to libc. */
int fault_program_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Runs a program's handler from inside ours, with the mask the kernel would have given it
 * (the interrupted code's, its sa_mask, its signal); the held signal (fault_hold) stays
 * blocked if it was, or if there is no room for its frame below. */
void fault_call_handler(const struct sigaction *act, int sig, siginfo_t *si, void *uc);
/* The stop-the-world's park signals (scan/world.c's world_park_mask): blocked by the kernel
 * as the fault handler starts, and while a program's handler that it runs has no room on its
 * alternate signal stack for another signal frame (the park's would not fit there: the
 * kernel kills the process). */
void fault_hold(uint64_t signals);
/* Called first thing on every SIGSEGV/SIGBUS (scan/roots.c's guarded reads): it may jump out
 * of the handler (siglongjmp); when it returns, the fault is handled as usual. */
void fault_set_recover_hook(void (*hook)(void *uc));
/* Faults at addresses outside the region that a higher layer owns (heap/sample.c's pages,
 * protect mode's heap) are reported as the region's are: claims(addr) says which. Returns the
 * hook it replaces (NULL: none), which the new one asks about the addresses it does not own. */
typedef bool (*fault_claim_fn)(uintptr_t addr);
fault_claim_fn fault_set_claim_hook(fault_claim_fn claims);
/* Die by sig with its default action, as a fault Oscar reported does (after a report made
 * outside the fault handler: a system call's buffer, export/export_io.c). */
__attribute__((noreturn)) void fault_die(int sig);
#endif
