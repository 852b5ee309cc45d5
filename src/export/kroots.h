/* kroots: what export/export_kroots.c notes of the channels the program makes (the kernel
 * then holds what is written to them: scan/kroots.h), for the other wrappers that reach the
 * same system calls (syscall(SYS_pipe2), syscall(SYS_socketpair): export/export_seccomp.c). */
#ifndef OSCAR_EXPORT_KROOTS_H
#define OSCAR_EXPORT_KROOTS_H

/* A pipe made: its read end noted. */
void export_note_pipe(const int fds[2]);
/* A socket pair made: both ends noted, if local and of a kind a mark reads. */
void export_note_socketpair(int domain, int type, const int fds[2]);
#endif
