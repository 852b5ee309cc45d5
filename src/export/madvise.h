/* madvise: what export/export_madvise.c notes of the program's calls, for the other wrappers
 * that reach the same system call (syscall(SYS_madvise): export/export_seccomp.c). */
#ifndef OSCAR_EXPORT_MADVISE_H
#define OSCAR_EXPORT_MADVISE_H
#include <stddef.h>
#include <stdint.h>

/* A madvise that succeeded: memory a child process does not get as it is (MADV_DONTFORK,
 * MADV_WIPEONFORK) stops snapshot marks for good (scan/mark.h). */
void export_note_madvise(int advice);

/* Before a call that may make heap pages fault when the mark reads them (MADV_GUARD_INSTALL
 * over [addr, addr + len): heap/protect_heap.h, ph_note_foreign). */
void export_note_advice_before(uintptr_t addr, size_t len, int advice);

/* Before an mmap with MAP_FIXED at [addr, addr + len): over the heap, its pages are foreign;
 * a shared mapping there is read live by a snapshot's child (no copy of it as of the stop),
 * so snapshot marks stop for good (heap_shared_overlay). */
void export_note_map_fixed(uintptr_t addr, size_t len, int flags);

/* Before mprotect or pkey_mprotect (export_mprotect.c): a page of the heap left unreadable,
 * or given a protection key (which may deny reads), is foreign. */
void export_note_protect(uintptr_t addr, size_t len, int prot, int pkey);
#endif
