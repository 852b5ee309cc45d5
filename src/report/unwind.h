/* unwind: whole stacks through code without frame pointers, from the .eh_frame tables that
 * every gcc/clang-built x86-64 module carries (found through PT_GNU_EH_FRAME, searched with
 * .eh_frame_hdr's sorted table), as libgcc's unwinder does, with no allocation and no lock.
 *
 * The module table: the loaded ELF modules (range, load bias, .eh_frame_hdr, path), filled by
 * dl_iterate_phdr outside signal handlers only: a capture whose rule cache misses first asks the
 * loader whether a module was loaded or unloaded since (its adds/subs counts) and rebuilds the
 * table then (emptying the rule cache after an unload). Append-only, so the SIGSEGV handler
 * reads it without the loader's lock. A pc in no module (JIT code) is walked by its frame
 * pointer.
 *
 * The rule cache: what the CFA program says for a pc (CFA = rsp or rbp + N, where rbp and the
 * return address were saved), 4096 entries keyed by pc, each checked by a hash of its words so
 * that racing writers never mix two rules; a tight malloc/free loop finds every frame's rule
 * there and pays a hash lookup per frame (figures: docs/reports.md). */
#ifndef OSCAR_UNWIND_H
#define OSCAR_UNWIND_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MODULE_PATH_MAX 256

struct module {
    uintptr_t lo, hi;      /* its mapped image */
    uintptr_t bias;        /* runtime address - ELF virtual address */
    const uint8_t *eh_hdr; /* .eh_frame_hdr in memory; NULL: none */
    char path[MODULE_PATH_MAX]; /* "" for the vdso */
};

/* The module that contains pc, or NULL. Signal-safe (never refreshes). */
const struct module *module_of(uintptr_t pc);
/* Rebuild the table from dl_iterate_phdr (takes the loader's lock: never from a signal
 * handler). Rate-limited unless force. */
void module_refresh(bool force);
/* A pc of no module in the table, in a signal handler: find its module in /proc/self/maps (raw
 * reads, a static buffer; the ELF headers read in memory) and add it. NULL when it is no ELF
 * module's. */
const struct module *module_from_maps(uintptr_t pc);
/* The fork child: a refresh another thread was running at fork never ends there. */
void unwind_after_fork(void);
/* dl_iterate_phdr(fn, arg) in a stretch no stop parks in (os/nopark.h): it holds the loader's
 * lock throughout, and glibc's fork does not reset that lock in the child; a thread parked
 * inside one by a fork's stop left it held in the child, whose next walk (a stack capture)
 * waited for ever (reclaim_threads: about 1 run in 100). Oscar's every walk goes through it. */
struct dl_phdr_info;
void unwind_iterate_modules(int (*fn)(struct dl_phdr_info *, size_t, void *), void *arg);

struct unwind_regs {
    uintptr_t pc, sp, fp;
    bool exact; /* pc is the interrupted instruction itself (frame 0 of a fault, or the frame
                 * under a signal handler), not a return address */
};

/* One step: from the registers of a frame to its caller's. The stack is read only inside
 * [lo, hi). Returns false at the end of the stack or when the frame cannot be unwound.
 * may_refresh: the module table may be refreshed (never in a signal handler). */
bool unwind_step(struct unwind_regs *regs, uintptr_t lo, uintptr_t hi, bool may_refresh);
/* Frames from regs up, appended to out[n..max) (pcs inside [skip_lo, skip_hi) are walked
 * through but not recorded: Oscar's own); returns the new count. */
int unwind_walk(struct unwind_regs *regs, uintptr_t lo, uintptr_t hi, bool may_refresh,
                uintptr_t skip_lo, uintptr_t skip_hi, uintptr_t *out, int n, int max);
#endif
