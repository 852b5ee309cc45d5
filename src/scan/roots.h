/* roots: every range of memory where the program may keep a pointer that the heap does not
 * hold itself: data and bss of every loaded object, TLS, thread stacks (also the parts of
 * parked threads' stacks and their saved registers), alternate signal stacks, and the
 * program's own writable private mappings, from /proc/self/maps, read into a static buffer
 * (no allocation), and the pointers only the kernel holds (scan/kroots.h). Ranges the
 * caller excludes (Oscar's metadata, the protect heap, whose live objects it walks itself)
 * are cut out. Pages never touched are skipped (mincore).
 *
 * Reading a root may fault (a mapping unmapped meanwhile, a file mapping past its end):
 * roots_read_guarded() turns such a fault into "skip this range" (report/fault.c hook). */
#ifndef OSCAR_SCAN_ROOTS_H
#define OSCAR_SCAN_ROOTS_H
#include "base/core.h"

enum root_kind { ROOT_GLOBAL, ROOT_STACK, ROOT_REGISTERS, ROOT_ALTSTACK, ROOT_TLS,
                 ROOT_MAPPING, ROOT_KERNEL /* values the kernel holds: scan/kroots.h */ };
struct root_range { uintptr_t lo, hi; };

typedef void (*roots_fn)(uintptr_t lo, uintptr_t hi, enum root_kind kind, const char *name,
                         void *arg);
/* Calls fn for each root range, in pieces of resident pages. 0, or -errno (maps unreadable).
 * The caller's own stack is a root from stack_from up (where the caller saved the registers
 * that may hold the program's pointers; its own frames below are not roots), or, with 0, from
 * this call's frame, its callee-saved registers spilled there. */
int roots_for_each(roots_fn fn, void *arg, const struct root_range *exclude, size_t nexclude,
                   uintptr_t stack_from);
/* The program switches stacks with ucontext (export/export_context.c): from now on a stack
 * pointer no longer cuts the dead stack below it, since that may be the live frames of a
 * suspended context (a coroutine whose stack is an array in a frame of the thread's own). */
void roots_note_context_switch(void);
/* The program gave a thread a stack of its own, [lo, hi) (pthread_attr_setstack,
 * pthread_attr_setstackaddr: export/export_context.c): a mapping that holds one is not cut
 * below a stack pointer, since the program's data may lie beside the stack in it (one
 * mapping with a guard page, a buffer, then the stack: shapes_stack_cut "guarded"). */
#define ROOTS_USER_STACKS 64
void roots_note_user_stack(uintptr_t lo, uintptr_t hi);
/* The program took write access away from memory (mprotect, pkey_mprotect; the wrappers in
 * export/export_mprotect.c): from now on the pages it wrote in a private file mapping made
 * read-only or inaccessible are roots. Before, the only such copies are the loader's
 * relocations, which point at no heap object (and cost a tiny heap's mark a third more). */
void roots_note_sealed(void);
/* Which roots roots_for_each_of reports: a snapshot mark (scan/snapshot.h) reads private
 * memory in a copy-on-write child of the process, and shared memory and what the kernel
 * holds (which a child would see live, not as they were) in the parent, while it is stopped. */
enum { ROOTS_PRIVATE = 1, ROOTS_SHARED = 2, ROOTS_KERNEL = 4, ROOTS_ALL = 7 };
int roots_for_each_of(unsigned which, roots_fn fn, void *arg, const struct root_range *exclude,
                      size_t nexclude, uintptr_t stack_from);
/* Reads again the shared memory (perhaps shared with other processes) that the last walk
 * reporting shared memory reported: its ranges as they were then, without reading
 * /proc/self/maps. 0, or -ENOSPC: more than ROOTS_SHARED_MAX ranges, or shared memory the
 * program cannot read now (walk again). Same rules as roots_for_each (one caller at a time,
 * the world stopped). */
#define ROOTS_SHARED_MAX 64
/* Inside fn: is the range reported shared memory? */
bool roots_reporting_shared(void);
int roots_reread_shared(roots_fn fn, void *arg);
/* Runs fn(lo, hi, arg) so that a fault while reading [lo, hi) returns -EFAULT instead of
 * killing the program. */
int roots_read_guarded(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), uintptr_t lo,
                       uintptr_t hi, void *arg);
/* For a caller that reads live objects of private memory itself (scan/recycle.c): calls
 * fn(lo, hi, arg), guarded, on each run of pages of [lo, hi) that may hold a pointer by the
 * rule the walk uses for private memory: present or swapped out (/proc/self/pagemap, open at
 * pagemap_fd), never a page never touched. Without pagemap (-1), [lo, hi) is read whole (an
 * untouched private page reads as the zero page; mincore would miss swapped-out pages). Uses
 * the walk's buffers: with the world stopped, one caller at a time, as roots_for_each. */
int roots_pagemap_open(void); /* /proc/self/pagemap, or -1; the caller closes it */
void roots_read_private(int pagemap_fd, void (*fn)(uintptr_t lo, uintptr_t hi, void *arg),
                        uintptr_t lo, uintptr_t hi, void *arg);
#endif
