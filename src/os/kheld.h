/* kheld: addresses the kernel keeps for a thread and goes on using, writing through some of
 * them: where it clears the thread's id at its exit (set_tid_address, clone's
 * CLONE_CHILD_CLEARTID), the head of its robust futex list (set_robust_list: walked at its
 * exit), its rseq area (written at every return to the thread, and its rseq_cs read), and its
 * syscall user dispatch selector (prctl PR_SET_SYSCALL_USER_DISPATCH: read at every system
 * call). A program may put any of them in a heap object and keep no other pointer to it; a
 * mark that handed the object out again would let the kernel write into, or read, the next
 * owner's bytes (a zeroed word, a crash in rseq, SIGSYS). The stop of the world asks each
 * thread for them (scan/world.c's park, scan/mark.c's stopper) and scans them as roots.
 *
 * The first two the kernel tells (prctl PR_GET_TID_ADDRESS, get_robust_list), however they
 * were set; the other two it does not, so the wrappers of prctl and syscall note them
 * (export/export_seccomp.c): an rseq area or a selector set by the program's own syscall
 * instruction is not seen (README, Limitations). Per thread, lock-free, signal-safe. */
#ifndef OSCAR_OS_KHELD_H
#define OSCAR_OS_KHELD_H
#include <stdint.h>

#define OS_KHELD 4 /* addresses per thread */

struct os_kheld {
    uintptr_t rseq; /* the area the thread registered with rseq(2) (0: none; glibc's own is
                     * in its thread control block, never in the heap) */
    uintptr_t sud;  /* its syscall user dispatch selector (0: dispatch off) */
};
extern __thread struct os_kheld os_kheld_tls __attribute__((tls_model("initial-exec")));

/* The calling thread registered rseq area `area`, or unregistered it (0). */
void os_kheld_note_rseq(uintptr_t area);
/* The calling thread turned syscall user dispatch on with this selector, or off (0). */
void os_kheld_note_sud(uintptr_t selector);
/* The calling thread's: out[0] its clear-child-tid address, out[1] its robust list head,
 * out[2] its rseq area, out[3] its selector (0 where none or the kernel does not say). Two
 * system calls; from a signal handler too. */
void os_kheld_get(uintptr_t out[OS_KHELD]);
#endif
