/* os: the only module that issues system calls. Every function returns 0 or an errno value
 * (or a value plus an error out-parameter); callers decide what an error means. Each call is
 * counted by kind in os_calls (base/stats.c reports them). */
#ifndef OSCAR_OS_H
#define OSCAR_OS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <stdatomic.h>

#define OS_PAGE 4096UL

/* System calls made, by kind: this layer counts them, base/stats.c reports them. Relaxed
 * atomics: only counted on slow paths. */
enum os_call_kind { OS_CALL_MMAP, OS_CALL_MUNMAP, OS_CALL_MREMAP, OS_CALL_FALLOCATE,
                    OS_CALL_MADVISE, OS_CALL_OTHER, OS_CALL_KINDS };
extern _Atomic uint64_t os_calls[OS_CALL_KINDS]; /* written by os.c, relaxed atomics */
static inline void os_count(enum os_call_kind kind) {
    atomic_fetch_add_explicit(&os_calls[kind], 1, memory_order_relaxed);
}

/* Kernel-placed PROT_NONE, MAP_NORESERVE reservation (the shadow region). */
void *os_reserve(size_t len, int *err);
/* Kernel-placed read-write private anonymous memory for metadata (NORESERVE). */
void *os_alloc_meta(size_t len, int *err);
/* An initialisation that may fail as a whole (strict and fast modes' reservations): with
 * os_meta_log(true), the os_alloc_meta mappings made are noted, and os_meta_log_release
 * unmaps them (a private writable mapping counts whole against the commit limit under
 * vm.overcommit_memory=2, NORESERVE or not: the 9 GiB a failed start left made the program's
 * fork fail, and every other process's allocations); os_meta_log(false) forgets them. One
 * thread, under its init lock. */
void os_meta_log(bool on);
void os_meta_log_release(void);
/* Where those mappings lie (they are no roots of a mark): entries [0, os_meta_count());
 * os_meta_range says false for an entry still being written. */
#define OS_META_RANGES_MAX 128
size_t os_meta_count(void);
bool os_meta_range(size_t i, uintptr_t *lo, uintptr_t *hi);
/* Replace [addr, addr+len) inside OUR reservation with a shared mapping of fd at off,
 * pre-populated for writing when asked (one VMA when the file pages are consecutive). */
int os_map_shadow(void *addr, size_t len, int fd, uint64_t off, int populate);
/* Replace [addr, addr+len) inside our reservation with PROT_NONE (revocation). The pages
 * merge back with neighbouring PROT_NONE reservation into one VMA. */
int os_revoke(void *addr, size_t len);
/* Install guard markers on [addr, addr+len) (MADV_GUARD_INSTALL): every access faults,
 * the pages' memory is dropped from this mapping, and the kernel mapping is NOT split.
 * Returns EINVAL (and remembers it) on kernels without guards for such a mapping. */
int os_guard(void *addr, size_t len);
/* Guard markers on, or the memory of (MADV_REMOVE, shared mappings), n ranges in one system
 * call (process_madvise on ourselves, Linux 6.13+): 0 when every range was done, else an
 * errno (ranges before the failing one may be done). */
int os_guard_ranges(const struct iovec *ranges, unsigned n);
int os_remove_ranges(const struct iovec *ranges, unsigned n);
/* Fault the shared pages of the ranges in, writable (MADV_POPULATE_WRITE). */
int os_populate_ranges(const struct iovec *ranges, unsigned n);
/* Append [a, a + len) to ranges[0..n), extending the last range when it ends at a;
 * returns the new count. */
static inline unsigned os_ranges_add(struct iovec *ranges, unsigned n, uintptr_t a, size_t len) {
    if (n && (uintptr_t)ranges[n - 1].iov_base + ranges[n - 1].iov_len == a) {
        ranges[n - 1].iov_len += len;
        return n;
    }
    ranges[n] = (struct iovec){(void *)a, len};
    return n + 1;
}
static inline unsigned os_ranges_add_page(struct iovec *ranges, unsigned n, uintptr_t page) {
    return os_ranges_add(ranges, n, page, OS_PAGE);
}
/* op (os_guard_ranges, os_populate_ranges...) on the pages page0 + k pages, k < n, for which
 * want(k, arg), as ranges, OS_RANGES_BATCH at a time: 1 KiB of the caller's stack, which may
 * be a thread's of 16 KiB (small_thread_stacks: a range per page of a run, 16 KiB, overran
 * it). 0, or op's first error (the batches before it were done). */
#define OS_RANGES_BATCH 64
int os_pages_apply(uintptr_t page0, unsigned n, bool (*want)(unsigned k, const void *arg),
                   const void *arg, int (*op)(const struct iovec *ranges, unsigned n));
/* False once the kernel refused a guard, or when OSCAR_GUARDS=0 turned them off. */
bool os_guards_usable(void);
void os_guards_disable(void);
/* Give the memory of private pages back (MADV_DONTNEED); the mapping stays. */
int os_drop(void *addr, size_t len);
/* The same for n ranges in one call (one madvise each where process_madvise is missing);
 * on PROT_NONE ranges the kernel frees page tables left empty. */
int os_drop_ranges(const struct iovec *ranges, unsigned n);
/* Replace [addr, addr+len) inside our reservation with fresh private read-write pages,
 * prefaulted in the same call if populate. */
int os_map_private(void *addr, size_t len, bool populate);
/* Ask for transparent huge pages on [addr, addr + len) (MADV_HUGEPAGE). */
int os_advise_huge(void *addr, size_t len);
/* Move the pages of [from, from+len) to [to, to+len) without copying, leaving `from`
 * mapped (then revoked by the caller) so no hole ever opens in our region. */
int os_move_pages(void *from, void *to, size_t len);
/* Only for undoing our own failed initialisation: never on a heap address. */
int os_unmap(void *addr, size_t len);
/* A close-on-exec memfd, moved out of the program's way (os_fd_out_of_way). */
int os_memfd(const char *name, int *fd);
/* Is ino one of the memfds os_memfd made (recorded: the first OS_MEMFDS_MAX)? */
#define OS_MEMFDS_MAX 256
bool os_memfd_ours(uint64_t ino);
int os_ftruncate(int fd, uint64_t len);
/* Give the memory of [off, off+len) of fd back to the kernel (reads return zeros). */
int os_punch_hole(int fd, uint64_t off, uint64_t len);
/* Copy [0, len) of src to dst in the kernel, skipping holes. */
int os_copy_file(int src, int dst, uint64_t len);
int os_close(int fd);
/* write() the whole buffer, retrying on EINTR / short writes. Signal-safe. */
int os_write_all(int fd, const void *buf, size_t len);
/* Open for writing (create/truncate). */
int os_open_write(const char *path, int *fd);
/* The same, appending (reports: several in one process must all stay). */
int os_open_append(const char *path, int *fd);
/* Read a small decimal number from a file such as /proc/sys/vm/max_map_count. */
int os_read_long(const char *path, long *value);
/* Map a whole file read-only (for reading symbol tables in reports); os_unmap it after. */
void *os_map_file(const char *path, size_t *len, int *err);
/* readlink into buf (NUL-terminated, truncated to fit); length or -errno. */
long os_readlink(const char *path, char *buf, size_t cap);
/* A path's type and permissions (stat's st_mode). 0 or an errno. */
int os_stat_mode(const char *path, uint32_t *mode);
/* A path's link count (stat: no descriptor). 0 or an errno. */
int os_stat_nlink(const char *path, uint64_t *nlink);
/* Page faults of the process so far (getrusage). */
int os_page_faults(uint64_t *minor, uint64_t *major);
/* A "Name:   N kB" field of /proc/self/status, in bytes. */
int os_status_bytes(const char *field, uint64_t *bytes);
/* The same, from another file of such lines ("Field:   N kB"), as /proc/self/smaps_rollup. */
int os_proc_bytes(const char *path, const char *field, uint64_t *bytes);
/* The number on a field's line, as it is (no unit): "Seccomp:\t2" gives 2. */
int os_proc_value(const char *path, const char *field, uint64_t *value);
/* Bytes of a file actually backed by memory (st_blocks): sparse holes count nothing. */
int os_file_resident(int fd, uint64_t *bytes);
long os_gettid(void);
/* The calling thread's thread pointer: its TCB, which glibc places at the top of the stack
 * block it made for the thread (x86-64 ABI: %fs:0 holds its own address). */
static inline uintptr_t os_thread_pointer(void) {
    uintptr_t tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}
/* The calling thread's FS and GS base registers, which a signal frame does not save:
 * rdfsbase / rdgsbase where the kernel allows them (AT_HWCAP2's FSGSBASE, Linux 5.9+), else
 * arch_prctl. Signal-safe. */
void os_segment_bases(uintptr_t *fs, uintptr_t *gs);
int os_getpid(void);
long os_getuid(void);
/* The CPUs this thread may run on (sched_getaffinity; 1 if it cannot say). */
unsigned os_cpu_count(void);
/* Threads, signals and /proc (scan/, export/export_signal.c); signal-safe, no counting
 * (rare calls, not the heap's). Those returning long give a count/descriptor or -errno. */
long os_open_dir(const char *path);
long os_open_read(const char *path);
/* The same, and a non-blocking pipe (0 or -errno), for a caller that has stopped the
 * program's threads (a mark): where the program uses every descriptor its soft RLIMIT_NOFILE
 * allows, the limit is raised for the call alone (as the hard one allows), so that a program
 * at its limit still has its memory marked and reused. */
long os_open_dir_stopped(const char *path);
long os_open_read_stopped(const char *path);
int os_pipe_stopped(int fds[2]);
long os_read(int fd, void *buf, size_t len);   /* retried on EINTR */
long os_getdents(int fd, void *buf, size_t len); /* getdents64 */
/* One entry of os_getdents' buffer (the kernel's struct linux_dirent64); the next is reclen
 * bytes further. */
struct os_dirent {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};
long os_pread(int fd, void *buf, size_t len, uint64_t off); /* retried on EINTR */
long os_lseek_start(int fd);
int os_tgkill(int pid, long tid, int sig);
/* Send sig to thread tid of process pid (this one) as a request of Oscar's: siginfo's si_code
 * SI_QUEUE, si_value `cookie` (rt_tgsigqueueinfo), which no send of the program's carries:
 * os_is_request tells them apart in the handler. 0 or an errno (ESRCH: gone). */
int os_send_request(int pid, long tid, int sig, uint64_t cookie);
static inline bool os_is_request(const siginfo_t *si, uint64_t cookie) {
    return si->si_code == SI_QUEUE && (uint64_t)(uintptr_t)si->si_value.sival_ptr == cookie;
}
/* Wait while *word == expected, at most timeout_ns (0: forever): 0, ETIMEDOUT, EAGAIN, EINTR. */
int os_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void os_futex_wake(_Atomic uint32_t *word, int n);
uint64_t os_monotonic_ns(void);
/* A socket's SO_SNDTIMEO (send) or SO_RCVTIMEO in nanoseconds: 0 for none, or where fd is no
 * socket. Its domain (AF_UNIX...), -1 where it is none. */
uint64_t os_socket_timeout_ns(int fd, bool send);
int os_socket_domain(int fd);
/* Testing: busy-wait ns nanoseconds (signal-safe), to widen a window a test aims at. */
void os_spin_ns(uint64_t ns);
void os_yield(void);
int os_sigaltstack_get(stack_t *ss);
/* Room below the caller for one more signal frame (the kernel's, AT_MINSIGSTKSZ, and a
 * handler's OS_SIGNAL_HANDLER_ROOM)? Always where the thread is not on its alternate signal
 * stack; there, the room left below the caller's frame. Signal-safe (one system call). */
#define OS_SIGNAL_HANDLER_ROOM 2048
bool os_room_for_a_signal(void);
/* Does action a run a handler (neither the default action nor ignored)? */
static inline bool os_is_handler(const struct sigaction *a) {
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction != NULL
                                      : a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}
/* rt_sigprocmask as is: no signal removed from set (the caller does that). */
int os_sigprocmask(int how, const sigset_t *set, sigset_t *old);
/* Unblock signals (bit n - 1 for signal n) for the calling thread, in one system call (8 bytes
 * of stack: for handlers on small alternate stacks). */
void os_unblock_signals(uint64_t signals);
int os_mincore(void *addr, size_t len, unsigned char *vec);
/* The signals pending for this thread or the process, as the kernel's 64-bit set. */
int os_sigpending(uint64_t *set);
/* Take signal sig if it is pending for this thread (or the process), blocked or not, without
 * running a handler (rt_sigtimedwait, no wait): sig with its siginfo, or 0 when none is. */
int os_sigtake(int sig, siginfo_t *si);
/* The kernel's struct sigaction (rt_sigaction), for the signals glibc keeps to itself (its
 * sigaction refuses them): handler, flags, restorer, mask. */
struct os_ksigaction {
    void (*handler)(int, siginfo_t *, void *);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};
/* rt_sigaction(sig, act, old) by the raw system call: 0 or -errno. */
int os_ksigaction(int sig, const struct os_ksigaction *act, struct os_ksigaction *old);
/* Copy n bytes at addr of this process into dst, a fault there being EFAULT rather than a
 * signal (process_vm_readv): for memory that may be unreadable (execute-only code). 0 or
 * an errno (EFAULT; EPERM or ENOSYS where a filter or the kernel refuses the call). */
int os_read_own(void *dst, uintptr_t addr, size_t n);
/* The same futex calls on memory shared between processes. */
int os_futex_wait_shared(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void os_futex_wake_shared(_Atomic uint32_t *word, int n);
/* A shared anonymous mapping (seen by the children forked after it). */
void *os_map_shared_anon(size_t len, int *err);
/* A system call, errno untouched: its result, or -errno (counted as OS_CALL_OTHER). */
long os_syscall(long n, long a, long b, long c, long d, long e);
/* Has child pid exited (a zombie, or reaped)? The child is not reaped. Any kind of child:
 * forked, or cloned with another exit signal or none. */
bool os_child_gone(int pid);
/* Descriptors, limits and the canonical heap's window (issue 18). */
/* The soft limit of an RLIMIT_* resource; UINT64_MAX when unlimited. */
int os_rlimit(int resource, uint64_t *soft);
/* Device and inode of what descriptor fd refers to (is it still ours?). */
int os_fd_id(int fd, uint64_t *dev, uint64_t *ino);
/* Move fd out of the program's way, close-on-exec: to the lowest free descriptor from the
 * soft RLIMIT_NOFILE up (past every number the program may get), or where the hard limit
 * leaves no room there, from near the soft limit (at most 1000) up; returns the new one (or
 * fd itself when it is there already or none is free there). */
int os_fd_out_of_way(int fd);
/* Opens path (flags; under /proc/ as os/procroot.h says), notes what it is (os_fd_id) and
 * moves it out of the way (os_fd_out_of_way): the descriptor, or -errno. */
long os_open_out_of_way(const char *path, int flags, uint64_t *dev, uint64_t *ino);
/* Kernel-placed shared read-write NORESERVE mapping of [0, len) of fd; fd < 0: of a new
 * anonymous shared object (no descriptor, no file size limit). */
void *os_map_window(size_t len, int fd, int *err);
/* Core dumps: include [addr, addr+len) (MADV_DODUMP) or leave it out (MADV_DONTDUMP). The
 * window is mapped left out; os_alloc_meta leaves out mappings of 1 MiB and more. */
int os_dump(void *addr, size_t len, bool dump);
/* Map the pages of the shared mapping at [src, src + len) a second time at dst, replacing
 * what is there (inside our reservation), prefaulted for writing when asked. */
int os_alias(void *src, size_t len, void *dst, int populate);
/* Move the mapping [from, from + len) to `to`, replacing what is there. */
int os_move_mapping(void *from, size_t len, void *to);
/* Give the memory of a shared writable range back (MADV_REMOVE: a hole in its file). EINVAL
 * where the range is locked (the program's mlockall): the kernel refuses MADV_REMOVE on a
 * VM_LOCKED mapping, as it does MADV_DONTNEED, and has no _LOCKED variant of it. */
int os_remove(void *addr, size_t len);
/* os_remove on a locked range: unlocked (munlock) for the call, then locked again as
 * mlockall(MCL_ONFAULT) locked it (mlock2(MLOCK_ONFAULT): the hole is not faulted back in).
 * The mapping is split in three meanwhile, and merged again. */
int os_remove_locked(void *addr, size_t len);
/* pread the whole range, retrying on EINTR / short reads. */
int os_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* The next data range [*data, *hole) of fd at or after `from` (SEEK_DATA / SEEK_HOLE); ENXIO
 * when only holes remain. */
int os_next_data(int fd, uint64_t from, uint64_t *data, uint64_t *hole);
/* 64 random bits (getrandom; AT_RANDOM and the clock when it has no entropy yet). */
uint64_t os_random(void);
/* Is this a secure-execution process (setuid, setgid, file capabilities: AT_SECURE)? */
bool os_secure(void);
#endif
