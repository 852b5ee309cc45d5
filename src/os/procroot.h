/* procroot: /proc, reached through a descriptor taken at start. Oscar reads /proc/self
 * (protect mode's marks: the threads, the mappings, the pages, the descriptors; the mapping
 * count; reports' module list) while the program runs, and a program may shut itself in a
 * directory where /proc is not (chroot: sshd's privilege-separated child, vsftpd, bind), or
 * see another process's /proc there. A path under /proc/ that fails as missing (ENOENT,
 * ENOTDIR, EACCES, ELOOP) is then tried again relative to the descriptor (os/os.c): "self"
 * and "thread-self" name whoever looks, so one descriptor serves a fork's children too.
 *
 * The descriptor (O_PATH, close-on-exec) is kept past the soft RLIMIT_NOFILE
 * (os_fd_out_of_way); a program that closes it (closefrom, close_range) loses it: chroot(3)
 * takes it again first (export/export_ns.c), and a number reused by the program's own file
 * is told apart by device and inode, then neither used nor closed. A program exec'd inside
 * such a directory has none (its Oscar starts there). */
#ifndef OSCAR_PROCROOT_H
#define OSCAR_PROCROOT_H

/* Takes the descriptor, unless the one held is still /proc. At init (one thread). 0 or an
 * errno. */
int os_proc_root_take(void);
/* The same where it was taken before (Oscar is on): chroot(3), before the real call. */
int os_proc_root_check(void);
/* A path under "/proc/" that failed with -err: the descriptor to try it again from, with
 * *path made relative to it; -1 when there is none (another error, another path, the
 * descriptor is gone). Signal-safe. */
int os_proc_root_retry(const char **path, long err);
#endif
