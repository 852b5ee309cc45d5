/* madvise: what export/export_madvise.c notes of the program's calls, for the other wrappers
 * that reach the same system call (syscall(SYS_madvise): export/export_seccomp.c). */
#ifndef OSCAR_EXPORT_MADVISE_H
#define OSCAR_EXPORT_MADVISE_H

/* A madvise that succeeded: memory a child process does not get as it is (MADV_DONTFORK,
 * MADV_WIPEONFORK) stops snapshot marks for good (scan/mark.h). */
void export_note_madvise(int advice);
#endif
