/* os: system calls. See os.h. Nothing here allocates; everything is signal-safe except
 * where the kernel call itself is not. */
#define _GNU_SOURCE
#include "os/os.h"
#include "os/filters.h"
#include "os/procroot.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

_Atomic uint64_t os_calls[OS_CALL_KINDS];

/* The os layer's state, in two structs: an object with any non-zero initialiser goes whole
 * into .data (the file), so the zero-initialised table stays apart, in .bss. Everything here
 * is atomic and lock-free: system calls may come from any thread, a fork child or a signal
 * handler. */
static struct {
    /* Where the os_alloc_meta mappings lie, for the mark to leave them out of the roots:
     * Oscar's bookkeeping holds addresses of freed objects (the thread registry records
     * where an altstack ends, which may be where a freed block starts) that are no pointers
     * of the program's. They lie among the program's anonymous mappings and may merge with
     * them in /proc/self/maps, so they are told apart by address. A mapping that touches a
     * recorded one (the kernel places them top-down, one below the other) widens it. Written
     * by os_alloc_meta (meta_record), lock-free: a new entry publishes hi, then lo; a reader
     * skips an entry whose lo is still 0. A full table leaves a mapping unrecorded: it is
     * then scanned, which keeps objects longer but loses none. */
    struct {
        _Atomic uintptr_t lo, hi;
    } meta_ranges[OS_META_RANGES_MAX];
    _Atomic size_t meta_used; /* entries claimed in meta_ranges (fetch-add by meta_record) */
} meta_state;
static struct {
    /* cleared once by the first MADV_POPULATE_WRITE the kernel refuses */
    atomic_int populate_write_works;
    atomic_int guards_usable; /* cleared once by os_guards_disable (guard markers refused) */
    /* The inodes of Oscar's memfds (os_memfd: a new entry claimed by fetch-add, then its
     * inode stored; a reader skips a 0): the mark leaves them out of the roots by inode, not
     * by name (a program's memfd named "oscar-x" was left out too, and the objects only it
     * held were handed out again). A full table leaves one unrecorded: it is then read, which
     * keeps objects longer but loses none. */
    _Atomic uint64_t memfd_inos[OS_MEMFDS_MAX];
    _Atomic unsigned memfds;
} os_state = {.populate_write_works = 1, .guards_usable = 1};

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* Raw syscalls: the libc wrappers for mmap/munmap are fine, but these keep errno of the
 * user's program untouched, which free() must guarantee. */
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
    /* The program's seccomp filters (os/filters.h): a call one would kill for is not made. */
    if (__builtin_expect(atomic_load_explicit(&os_filters_on, memory_order_relaxed), 0)) {
        const long args[6] = {a, b, c, d, e, f};
        if (!os_filters_allow(n, args))
            return -EPERM;
    }
    long r;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "0"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return r;
}
static inline int err_of(long r) { return (r < 0 && r > -4096) ? (int)-r : 0; }

static void *mmap_raw(void *addr, size_t len, int prot, int flags, int fd, uint64_t off,
                      int *err) {
    os_count(OS_CALL_MMAP);
    long r = sys6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
    *err = err_of(r);
    return *err ? NULL : (void *)r;
}

/* Core dumps (issue 20, item 8): the kernel dumps a shared memfd mapping and a written private
 * one whole, holes included, so the canonical window (the whole heap's size) and the large
 * metadata tables made a 10 MiB program's core 100 GiB. Those are marked MADV_DONTDUMP; what
 * the program's pointers reach stays dumpable: a mapping made with mmap (MAP_FIXED shadows,
 * large objects, protect mode's pages) is dumpable anyway, and a shadow aliased from the
 * window (mremap) inherits the flag of the window's part it comes from, which canon.c makes
 * dumpable (os_dump) as the heap grows into it. Reservations (PROT_NONE, never written) are
 * not dumped by the kernel at all, and marking them would cost a system call per revocation:
 * a PROT_NONE mmap over a marked reservation would no longer merge with it. Errors are
 * ignored (the dump is only larger or smaller). */
static int advise_dump(void *addr, size_t len, bool dump) {
    os_count(OS_CALL_MADVISE);
    return err_of(sys6(SYS_madvise, (long)addr, (long)len, dump ? MADV_DODUMP : MADV_DONTDUMP,
                       0, 0, 0));
}

int os_dump(void *addr, size_t len, bool dump) { return advise_dump(addr, len, dump); }
/* Metadata mappings from this size up are left out of core dumps; smaller ones (a report's
 * own stack, a thread's registry entry) stay, for a debugger of Oscar itself. */
#define META_NO_DUMP_MIN (1UL << 20)

void *os_reserve(size_t len, int *err) {
    return mmap_raw(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0,
                    err);
}

static void meta_record(uintptr_t lo, uintptr_t hi) {
    size_t n = os_meta_count();
    for (size_t i = 0; i < n; i++) {
        uintptr_t l = atomic_load_explicit(&meta_state.meta_ranges[i].lo, memory_order_acquire);
        uintptr_t h = atomic_load_explicit(&meta_state.meta_ranges[i].hi, memory_order_acquire);
        if (l && l == hi && atomic_compare_exchange_strong(&meta_state.meta_ranges[i].lo, &l, lo))
            return;
        if (l && h == lo && atomic_compare_exchange_strong(&meta_state.meta_ranges[i].hi, &h, hi))
            return;
    }
    /* An entry meta_forget emptied first (both bounds 0), else a new one. */
    for (size_t i = 0; i < n; i++) {
        uintptr_t zero = 0;
        if (!atomic_load_explicit(&meta_state.meta_ranges[i].lo, memory_order_acquire) &&
            atomic_compare_exchange_strong(&meta_state.meta_ranges[i].hi, &zero, hi)) {
            atomic_store_explicit(&meta_state.meta_ranges[i].lo, lo, memory_order_release);
            return;
        }
    }
    size_t i = atomic_fetch_add(&meta_state.meta_used, 1);
    if (i >= OS_META_RANGES_MAX)
        return;
    atomic_store_explicit(&meta_state.meta_ranges[i].hi, hi, memory_order_release);
    atomic_store_explicit(&meta_state.meta_ranges[i].lo, lo, memory_order_release);
}

/* [lo, hi) is unmapped: no entry may cover it any more, or a mapping the program later gets
 * there (the kernel hands out such a hole first) would be no root of a mark, and the objects
 * only it points to would be handed out again (a region given back when RLIMIT_AS is
 * lowered, dwarf's inflated sections, failure paths). An entry is cut at its bottom or top,
 * split in two around a hole in its middle, or emptied. */
static void meta_forget(uintptr_t lo, uintptr_t hi) {
    size_t n = os_meta_count();
    for (size_t i = 0; i < n; i++) {
        _Atomic uintptr_t *el = &meta_state.meta_ranges[i].lo, *eh = &meta_state.meta_ranges[i].hi;
        uintptr_t l = atomic_load_explicit(el, memory_order_acquire);
        uintptr_t h = atomic_load_explicit(eh, memory_order_acquire);
        if (!l || hi <= l || lo >= h)
            continue;
        if (lo <= l && hi >= h) {
            atomic_store_explicit(el, 0, memory_order_release);
            atomic_store_explicit(eh, 0, memory_order_release);
        } else if (lo <= l) {
            atomic_store_explicit(el, hi, memory_order_release);
        } else {
            atomic_store_explicit(eh, lo, memory_order_release);
            if (hi < h)
                meta_record(hi, h);
        }
    }
}

size_t os_meta_count(void) {
    size_t n = atomic_load_explicit(&meta_state.meta_used, memory_order_acquire);
    return n < OS_META_RANGES_MAX ? n : OS_META_RANGES_MAX;
}

bool os_meta_range(size_t i, uintptr_t *lo, uintptr_t *hi) {
    *lo = atomic_load_explicit(&meta_state.meta_ranges[i].lo, memory_order_acquire);
    *hi = atomic_load_explicit(&meta_state.meta_ranges[i].hi, memory_order_acquire);
    return *lo != 0;
}

/* The os_alloc_meta mappings of an initialisation that may fail as a whole (os_meta_log).
 * Written by the initialising thread alone, under its init lock. */
#define META_LOG_MAX 64
static struct {
    bool on;    /* os_meta_log(true) was called, and not os_meta_log(false) since */
    unsigned n; /* entries in e (past META_LOG_MAX, a mapping is not noted: it stays) */
    /* The mappings, in the order made. */
    struct {
        void *p;    /* a mapping os_alloc_meta made */
        size_t len; /* its length */
    } e[META_LOG_MAX];
} meta_log_state;

void os_meta_log(bool on) {
    meta_log_state.on = on;
    meta_log_state.n = 0;
}

void os_meta_log_release(void) {
    for (unsigned i = 0; i < meta_log_state.n; i++)
        os_unmap(meta_log_state.e[i].p, meta_log_state.e[i].len);
    os_meta_log(false);
}

void *os_alloc_meta(size_t len, int *err) {
    void *p = mmap_raw(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, err);
    if (p && meta_log_state.on && meta_log_state.n < META_LOG_MAX) {
        meta_log_state.e[meta_log_state.n].p = p;
        meta_log_state.e[meta_log_state.n++].len = len;
    }
    if (p) {
        meta_record((uintptr_t)p, (uintptr_t)p + len);
        if (len >= META_NO_DUMP_MIN)
            advise_dump(p, len, false);
    }
    return p;
}

int os_map_shadow(void *addr, size_t len, int fd, uint64_t off, int want_populate) {
    int err;
    int populate =
        want_populate && atomic_load_explicit(&os_state.populate_write_works, memory_order_relaxed);
    /* MAP_FIXED is safe here: addr is always inside our own reservation. */
    void *p = mmap_raw(addr, len, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_FIXED | (want_populate && !populate ? MAP_POPULATE : 0), fd, off, &err);
    if (!p)
        return err;
    if (populate) {
        /* MAP_POPULATE on a shared mapping maps pages read-only, and the first write then
         * takes a fault each; MADV_POPULATE_WRITE maps them writable in one call. */
        os_count(OS_CALL_OTHER);
        long r = sys6(SYS_madvise, (long)addr, (long)len, MADV_POPULATE_WRITE, 0, 0, 0);
        if (err_of(r) == EINVAL)
            atomic_store(&os_state.populate_write_works, 0);
        /* Any failure here is harmless: pages are then faulted in on first touch. */
    }
    return 0;
}

int os_revoke(void *addr, size_t len) {
    int err;
    void *p = mmap_raw(addr, len, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0, &err);
    return p ? 0 : err;
}

#define PIDFD_SELF_THREAD (-10000) /* include/uapi/linux/pidfd.h, Linux 6.13+ */

/* *done: the bytes of the ranges advised, in order (the kernel stops at the first range it
 * refuses, and returns what it did before it, if anything, as a count). */
static int madvise_ranges_done(const struct iovec *ranges, unsigned n, int advice, size_t *done) {
    os_count(OS_CALL_MADVISE);
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += ranges[i].iov_len;
    long r;
    do
        r = sys6(SYS_process_madvise, PIDFD_SELF_THREAD, (long)ranges, n, advice, 0, 0);
    while (r == -EINTR);
    *done = r > 0 ? (size_t)r : 0;
    if (r < 0)
        return err_of(r);
    return (size_t)r == total ? 0 : EAGAIN;
}

static int madvise_ranges(const struct iovec *ranges, unsigned n, int advice) {
    size_t done;
    return madvise_ranges_done(ranges, n, advice, &done);
}

int os_remove_ranges(const struct iovec *ranges, unsigned n) {
    return madvise_ranges(ranges, n, MADV_REMOVE);
}

int os_populate_ranges(const struct iovec *ranges, unsigned n) {
    if (!atomic_load_explicit(&os_state.populate_write_works, memory_order_relaxed))
        return EINVAL;
    return madvise_ranges(ranges, n, MADV_POPULATE_WRITE);
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

bool os_guards_usable(void) { return atomic_load_explicit(&os_state.guards_usable, memory_order_relaxed); }
void os_guards_disable(void) { atomic_store(&os_state.guards_usable, 0); }

int os_guard_ranges(const struct iovec *ranges, unsigned n) {
    int err = madvise_ranges(ranges, n, MADV_GUARD_INSTALL);
    /* As os_guard: refused for such a mapping (locked ones: the program's mlockall), so
     * refused again each time. Fast mode's reuse spans need guards, and kept asking: every
     * mapping of reused pages was refused, a new span taken instead, and under mlockall the
     * canonical heap was used up (mlockall_free 64 rounds: malloc returned NULL). */
    if (err == EINVAL)
        os_guards_disable();
    return err;
}

int os_guard(void *addr, size_t len) {
    os_count(OS_CALL_MADVISE);
    int err;
    do
        err = err_of(sys6(SYS_madvise, (long)addr, (long)len, MADV_GUARD_INSTALL, 0, 0, 0));
    while (err == EINTR || err == EAGAIN);
    if (err == EINVAL || err == ENOSYS || err == EPERM)
        os_guards_disable();
    return err;
}

int os_drop(void *addr, size_t len) {
    os_count(OS_CALL_MADVISE);
    int err = err_of(sys6(SYS_madvise, (long)addr, (long)len, MADV_DONTNEED, 0, 0, 0));
    /* Locked pages (the program called mlockall with MCL_FUTURE: Oscar's new mappings are
     * locked too) refuse MADV_DONTNEED; MADV_DONTNEED_LOCKED (Linux 5.18) drops them, and
     * without it strict mode's freed pages stayed, its region filled (mlockall_heap). */
    if (err == EINVAL)
        err = err_of(sys6(SYS_madvise, (long)addr, (long)len, 24 /* MADV_DONTNEED_LOCKED */,
                          0, 0, 0));
    return err;
}

int os_drop_ranges(const struct iovec *ranges, unsigned n) {
    size_t done;
    int err = madvise_ranges_done(ranges, n, MADV_DONTNEED, &done);
    /* The rest one range at a time, through os_drop: kernels before 6.13 (no PIDFD_SELF:
     * EBADF, or no process_madvise: ENOSYS), and locked ranges (the program's mlockall:
     * EINVAL, or a count short of the total when the refused range came after others),
     * which only MADV_DONTNEED_LOCKED drops. (The loop once started with that error still
     * set and did nothing: under mlockall no dead chunk's metadata was ever dropped and no
     * window of old addresses ever handed out, so a region used up stayed full and malloc
     * returned NULL: mlockall_heap under OSCAR_VA_GIB=1.) */
    if (err != EAGAIN && err != ENOSYS && err != EINVAL && err != EBADF && err != EPERM)
        return err;
    err = 0;
    for (unsigned i = 0; i < n && !err; i++) {
        size_t len = ranges[i].iov_len;
        if (done >= len) {
            done -= len; /* (dropped by the call above) */
            continue;
        }
        err = os_drop((char *)ranges[i].iov_base + done, len - done);
        done = 0;
    }
    return err;
}

int os_map_private(void *addr, size_t len, bool populate) {
    int err;
    void *p = mmap_raw(addr, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | (populate ? MAP_POPULATE : 0),
                       -1, 0, &err);
    return p ? 0 : err;
}

int os_advise_huge(void *addr, size_t len) {
    os_count(OS_CALL_MADVISE);
    return err_of(sys6(SYS_madvise, (long)addr, (long)len, MADV_HUGEPAGE, 0, 0, 0));
}

int os_move_pages(void *from, void *to, size_t len) {
    os_count(OS_CALL_MREMAP);
    long r = sys6(SYS_mremap, (long)from, (long)len, (long)len,
                  MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, (long)to, 0);
    return err_of(r);
}

int os_unmap(void *addr, size_t len) {
    os_count(OS_CALL_MUNMAP);
    int err = err_of(sys6(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0));
    uintptr_t lo = (uintptr_t)addr, hi = (lo + len + OS_PAGE - 1) & ~(OS_PAGE - 1);
    if (!err)
        meta_forget(lo, hi);
    return err;
}

int os_memfd(const char *name, int *fd) {
    os_count(OS_CALL_OTHER);
    long r = sys6(SYS_memfd_create, (long)name, MFD_CLOEXEC, 0, 0, 0, 0);
    if (err_of(r))
        return err_of(r);
    *fd = os_fd_out_of_way((int)r); /* (every memfd of Oscar's is kept) */
    uint64_t dev, ino;
    unsigned i;
    if (os_fd_id(*fd, &dev, &ino) == 0 &&
        (i = atomic_fetch_add(&os_state.memfds, 1)) < OS_MEMFDS_MAX)
        atomic_store(&os_state.memfd_inos[i], ino);
    return 0;
}

bool os_memfd_ours(uint64_t ino) {
    unsigned n = atomic_load_explicit(&os_state.memfds, memory_order_acquire);
    for (unsigned i = 0; i < n && i < OS_MEMFDS_MAX; i++)
        if (ino && atomic_load_explicit(&os_state.memfd_inos[i], memory_order_relaxed) == ino)
            return true;
    return false;
}

int os_ftruncate(int fd, uint64_t len) {
    os_count(OS_CALL_OTHER);
    return err_of(sys6(SYS_ftruncate, fd, (long)len, 0, 0, 0, 0));
}

int os_punch_hole(int fd, uint64_t off, uint64_t len) {
    os_count(OS_CALL_FALLOCATE);
    return err_of(sys6(SYS_fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                       (long)off, (long)len, 0, 0));
}

int os_copy_file(int src, int dst, uint64_t len) {
    uint64_t pos = 0;
    while (pos < len) {
        os_count(OS_CALL_OTHER);
        long data = sys6(SYS_lseek, src, (long)pos, SEEK_DATA, 0, 0, 0);
        if (data == -ENXIO)
            return 0; /* only holes remain */
        if (err_of(data))
            return err_of(data);
        os_count(OS_CALL_OTHER);
        long hole = sys6(SYS_lseek, src, data, SEEK_HOLE, 0, 0, 0);
        if (err_of(hole))
            return err_of(hole);
        if ((uint64_t)hole > len)
            hole = (long)len;
        loff_t in = data, out = data;
        long left = hole - data;
        while (left > 0) {
            os_count(OS_CALL_OTHER);
            long n = sys6(SYS_copy_file_range, src, (long)&in, dst, (long)&out, left, 0);
            if (n == -EINTR)
                continue;
            if (err_of(n))
                return err_of(n);
            if (n == 0)
                return EIO;
            left -= n;
        }
        pos = (uint64_t)hole;
    }
    return 0;
}

int os_close(int fd) {
    os_count(OS_CALL_OTHER);
    return err_of(sys6(SYS_close, fd, 0, 0, 0, 0, 0));
}

int os_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        long n = sys6(SYS_write, fd, (long)p, (long)len, 0, 0, 0);
        if (n == -EINTR)
            continue;
        if (err_of(n))
            return err_of(n);
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A system call on a path, *at(dirfd, path, a, b, c), from the working directory; a path
 * under /proc/ that is not there (a program shut in a directory without it), again from
 * /proc's own descriptor (os/procroot.h). */
static long path_call(long nr, const char *path, long a, long b, long c) {
    long r = sys6(nr, AT_FDCWD, (long)path, a, b, c, 0);
    int dir;
    if (r < 0 && (dir = os_proc_root_retry(&path, r)) >= 0)
        r = sys6(nr, dir, (long)path, a, b, c, 0);
    return r;
}

static long open_at(const char *path, int flags, int mode) {
    return path_call(SYS_openat, path, flags, mode, 0);
}

static int os_open_flags(const char *path, int flags, int *fd) {
    long r = open_at(path, flags, 0644);
    if (err_of(r))
        return err_of(r);
    *fd = (int)r;
    return 0;
}

int os_open_write(const char *path, int *fd) {
    return os_open_flags(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fd);
}

int os_open_append(const char *path, int *fd) {
    return os_open_flags(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, fd);
}

static int open_read(const char *path, int *fd) {
    os_count(OS_CALL_OTHER);
    long r = open_at(path, O_RDONLY | O_CLOEXEC, 0);
    if (err_of(r))
        return err_of(r);
    *fd = (int)r;
    return 0;
}

int os_read_long(const char *path, long *value) {
    int fd, err = open_read(path, &fd);
    if (err)
        return err;
    char buf[64];
    os_count(OS_CALL_OTHER);
    long n = sys6(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0, 0);
    os_close(fd);
    if (n <= 0)
        return n == 0 ? EINVAL : err_of(n);
    long v = 0;
    int digits = 0;
    for (long i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++, digits++)
        v = v * 10 + (buf[i] - '0');
    if (!digits)
        return EINVAL;
    *value = v;
    return 0;
}

void *os_map_file(const char *path, size_t *len, int *err) {
    int fd;
    if ((*err = open_read(path, &fd)) != 0)
        return NULL;
    struct stat st;
    long r = sys6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0);
    void *p = NULL;
    if ((*err = err_of(r)) == 0 && st.st_size > 0) {
        p = mmap_raw(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0, err);
        *len = (size_t)st.st_size;
    } else if (!*err) {
        *err = ENOEXEC;
    }
    os_close(fd);
    return p;
}

long os_readlink(const char *path, char *buf, size_t cap) {
    long n = path_call(SYS_readlinkat, path, (long)buf, (long)cap - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

int os_stat_mode(const char *path, uint32_t *mode) {
    struct stat st;
    int err = err_of(path_call(SYS_newfstatat, path, (long)&st, 0, 0));
    if (!err)
        *mode = st.st_mode;
    return err;
}

int os_stat_nlink(const char *path, uint64_t *nlink) {
    struct stat st;
    int err = err_of(path_call(SYS_newfstatat, path, (long)&st, 0, 0));
    if (!err)
        *nlink = (uint64_t)st.st_nlink;
    return err;
}

int os_page_faults(uint64_t *minor, uint64_t *major) {
    struct rusage ru;
    int err = err_of(sys6(SYS_getrusage, RUSAGE_SELF, (long)&ru, 0, 0, 0, 0));
    if (!err) {
        *minor = (uint64_t)ru.ru_minflt;
        *major = (uint64_t)ru.ru_majflt;
    }
    return err;
}

int os_status_bytes(const char *field, uint64_t *bytes) {
    return os_proc_bytes("/proc/self/status", field, bytes);
}

int os_proc_bytes(const char *path, const char *field, uint64_t *bytes) {
    uint64_t kib;
    int err = os_proc_value(path, field, &kib);
    if (!err)
        *bytes = kib << 10;
    return err;
}

/* The digits of a "Field:  123 kB" line's value. */
static uint64_t line_value(const char *p, const char *end) {
    uint64_t v = 0;
    for (; p < end && *p != '\n'; p++)
        if (*p >= '0' && *p <= '9')
            v = v * 10 + (uint64_t)(*p - '0');
    return v;
}

int os_proc_value(const char *path, const char *field, uint64_t *value) {
    int fd, err = open_read(path, &fd);
    if (err)
        return err;
    /* Read a kilobyte at a time, whole lines kept: this runs on the program's threads (a
     * fork looks at VmSize), whose stacks may be small (a small RLIMIT_STACK). A line longer
     * than the buffer (a long list of groups) is skipped. */
    char buf[1024];
    size_t flen = strlen(field), have = 0;
    bool skipping = false, any = false;
    err = ENOENT;
    for (;;) {
        long n = sys6(SYS_read, fd, (long)(buf + have), (long)(sizeof buf - have), 0, 0, 0);
        if (n == -EINTR)
            continue;
        if (n <= 0) {
            if (!any)
                err = EIO;
            break;
        }
        any = true;
        have += (size_t)n;
        char *line = buf, *end = buf + have, *nl;
        while ((nl = memchr(line, '\n', (size_t)(end - line)))) {
            if (!skipping && (size_t)(nl - line) >= flen && strncmp(line, field, flen) == 0) {
                *value = line_value(line + flen, nl);
                os_close(fd);
                return 0;
            }
            skipping = false;
            line = nl + 1;
        }
        have = (size_t)(end - line);
        if (have == sizeof buf) {
            have = 0, skipping = true; /* (the rest of this line comes next) */
        } else {
            memmove(buf, line, have);
        }
    }
    os_close(fd);
    return err;
}

int os_file_resident(int fd, uint64_t *bytes) {
    struct stat st;
    int err = err_of(sys6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0));
    if (!err)
        *bytes = (uint64_t)st.st_blocks * 512;
    return err;
}

long os_gettid(void) { return sys6(SYS_gettid, 0, 0, 0, 0, 0, 0); }
int os_getpid(void) { return (int)sys6(SYS_getpid, 0, 0, 0, 0, 0, 0); }
long os_getuid(void) { return sys6(SYS_getuid, 0, 0, 0, 0, 0, 0); }

unsigned os_cpu_count(void) {
    uint64_t mask[16]; /* (1024 CPUs: glibc's cpu_set_t) */
    long n = sys6(SYS_sched_getaffinity, 0, sizeof mask, (long)mask, 0, 0, 0);
    unsigned cpus = 0;
    for (long i = 0; i < n / 8; i++)
        cpus += (unsigned)__builtin_popcountll(mask[i]);
    return cpus ? cpus : 1;
}

/* ---- Threads, signals and /proc (scan/world.c, scan/roots.c, export/export_signal.c).
 * Signal-safe: the park handler and the fault handler call some of these. */

long os_open_dir(const char *path) {
    return open_at(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

long os_open_read(const char *path) { return open_at(path, O_RDONLY | O_CLOEXEC, 0); }

/* A call that makes a descriptor: once as it is, and if the program uses every descriptor
 * its soft RLIMIT_NOFILE lets it (-EMFILE), again with that limit raised (up to 1024 more,
 * as the hard limit allows) and put back at once: the new descriptor stays valid above it.
 * Only while the program's threads are stopped: one of them that opened meanwhile would get
 * a descriptor it could not get otherwise. */
struct opening {
    const char *path;
    int flags;
    int *fds; /* a pipe's, when path is NULL */
};

static long open_once(const struct opening *o) {
    if (!o->path)
        return sys6(SYS_pipe2, (long)o->fds, o->flags, 0, 0, 0, 0);
    return open_at(o->path, o->flags, 0);
}

static long open_with_room(const struct opening *o) {
    long r = open_once(o);
    if (r != -EMFILE)
        return r;
    struct rlimit64 lim, more;
    if (sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&lim, 0, 0) != 0 ||
        lim.rlim_cur >= lim.rlim_max)
        return r;
    more = lim;
    more.rlim_cur = lim.rlim_max - lim.rlim_cur > 1024 ? lim.rlim_cur + 1024 : lim.rlim_max;
    if (sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&more, 0, 0, 0) != 0)
        return r;
    r = open_once(o);
    sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&lim, 0, 0, 0);
    return r;
}

long os_open_read_stopped(const char *path) {
    struct opening o = {path, O_RDONLY | O_CLOEXEC, NULL};
    return open_with_room(&o);
}

long os_open_dir_stopped(const char *path) {
    struct opening o = {path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, NULL};
    return open_with_room(&o);
}

int os_pipe_stopped(int fds[2]) {
    struct opening o = {NULL, O_CLOEXEC | O_NONBLOCK, fds};
    return (int)open_with_room(&o);
}

long os_read(int fd, void *buf, size_t len) {
    long r;
    do
        r = sys6(SYS_read, fd, (long)buf, (long)len, 0, 0, 0);
    while (r == -EINTR);
    return r;
}

long os_pread(int fd, void *buf, size_t len, uint64_t off) {
    long r;
    do
        r = sys6(SYS_pread64, fd, (long)buf, (long)len, (long)off, 0, 0);
    while (r == -EINTR);
    return r;
}

long os_getdents(int fd, void *buf, size_t len) {
    return sys6(SYS_getdents64, fd, (long)buf, (long)len, 0, 0, 0);
}

long os_lseek_start(int fd) { return sys6(SYS_lseek, fd, 0, SEEK_SET, 0, 0, 0); }

int os_tgkill(int pid, long tid, int sig) {
    return err_of(sys6(SYS_tgkill, pid, tid, sig, 0, 0, 0));
}

int os_ksigaction(int sig, const struct os_ksigaction *act, struct os_ksigaction *old) {
    return (int)sys6(SYS_rt_sigaction, sig, (long)act, (long)old, 8, 0, 0);
}

int os_sigtake(int sig, siginfo_t *si) {
    uint64_t set = 1ull << (sig - 1);
    struct timespec none = {0, 0};
    long r = sys6(SYS_rt_sigtimedwait, (long)&set, (long)si, (long)&none, 8, 0, 0);
    return r == sig ? sig : 0;
}

int os_send_request(int pid, long tid, int sig, uint64_t cookie) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = SI_QUEUE; /* (the kernel lets a process queue any code to itself) */
    si.si_pid = pid; /* (no si_uid: only our handler reads a request, by its cookie) */
    si.si_value.sival_ptr = (void *)(uintptr_t)cookie;
    return err_of(sys6(SYS_rt_tgsigqueueinfo, pid, tid, sig, (long)&si, 0, 0));
}

/* FUTEX_WAIT (op 0) or FUTEX_WAIT_PRIVATE (op 128), at most timeout_ns (0: forever). */
static int futex_wait(_Atomic uint32_t *word, int op, uint32_t expected, uint64_t timeout_ns) {
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    return err_of(sys6(SYS_futex, (long)word, op, expected, timeout_ns ? (long)&ts : 0, 0, 0));
}

int os_futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns) {
    return futex_wait(word, 128 /* FUTEX_WAIT_PRIVATE */, expected, timeout_ns);
}

void os_futex_wake(_Atomic uint32_t *word, int n) {
    sys6(SYS_futex, (long)word, 129 /* FUTEX_WAKE_PRIVATE */, n, 0, 0, 0);
}

/* The system call, not libc's vDSO (29 ns against 409 ns here): a program may move or unmap
 * the vDSO pages (CRIU's restore does; protect_shape_after_bss), and libc's clock_gettime then
 * jumps into nothing. */
uint64_t os_monotonic_ns(void) {
    struct timespec ts;
    sys6(SYS_clock_gettime, 1 /* CLOCK_MONOTONIC */, (long)&ts, 0, 0, 0, 0);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t os_socket_timeout_ns(int fd, bool send) {
    struct timeval tv;
    socklen_t len = sizeof tv;
    if (sys6(SYS_getsockopt, fd, SOL_SOCKET, send ? SO_SNDTIMEO : SO_RCVTIMEO, (long)&tv,
             (long)&len, 0) < 0 ||
        len != sizeof tv || tv.tv_sec < 0 || tv.tv_usec < 0)
        return 0;
    return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

int os_socket_domain(int fd) {
    int domain = -1;
    socklen_t len = sizeof domain;
    if (sys6(SYS_getsockopt, fd, SOL_SOCKET, SO_DOMAIN, (long)&domain, (long)&len, 0) < 0)
        return -1;
    return domain;
}

void os_spin_ns(uint64_t ns) {
    uint64_t end = os_monotonic_ns() + ns;
    while (os_monotonic_ns() < end)
        __builtin_ia32_pause();
}

void os_yield(void) { sys6(SYS_sched_yield, 0, 0, 0, 0, 0, 0); }

int os_sigaltstack_get(stack_t *ss) {
    return err_of(sys6(SYS_sigaltstack, 0, (long)ss, 0, 0, 0, 0));
}

__attribute__((noinline)) bool os_room_for_a_signal(void) {
    stack_t ss;
    if (os_sigaltstack_get(&ss) != 0 || !(ss.ss_flags & SS_ONSTACK))
        return true;
    size_t frame = (size_t)getauxval(AT_MINSIGSTKSZ);
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return sp - (uintptr_t)ss.ss_sp >= (frame ? frame : 4096) + OS_SIGNAL_HANDLER_ROOM;
}

int os_sigpending(uint64_t *set) { return err_of(sys6(SYS_rt_sigpending, (long)set, 8, 0, 0, 0, 0)); }

int os_read_own(void *dst, uintptr_t addr, size_t n) {
    struct iovec local = {dst, n}, remote = {(void *)addr, n};
    long r = sys6(SYS_process_vm_readv, sys6(SYS_getpid, 0, 0, 0, 0, 0, 0), (long)&local, 1,
                  (long)&remote, 1, 0);
    return r < 0 ? err_of(r) : (size_t)r == n ? 0 : EFAULT;
}

/* The kernel's sigset is 64 bits (NSIG/8 bytes), not glibc's 1024-bit sigset_t. */
int os_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    return err_of(sys6(SYS_rt_sigprocmask, how, (long)set, (long)old, 8, 0, 0));
}

void os_unblock_signals(uint64_t signals) {
    sys6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&signals, 0, 8, 0, 0);
}

int os_mincore(void *addr, size_t len, unsigned char *vec) {
    return err_of(sys6(SYS_mincore, (long)addr, (long)len, (long)vec, 0, 0, 0));
}

/* Futexes on memory shared between processes (fork.c's handshake with the child). */
int os_futex_wait_shared(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns) {
    return futex_wait(word, 0 /* FUTEX_WAIT */, expected, timeout_ns);
}

void os_futex_wake_shared(_Atomic uint32_t *word, int n) {
    sys6(SYS_futex, (long)word, 1 /* FUTEX_WAKE */, n, 0, 0, 0);
}

void *os_map_shared_anon(size_t len, int *err) {
    return mmap_raw(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0, err);
}

long os_syscall(long n, long a, long b, long c, long d, long e) {
    os_count(OS_CALL_OTHER);
    return sys6(n, a, b, c, d, e, 0);
}

bool os_child_gone(int pid) {
    if (sys6(SYS_kill, pid, 0, 0, 0, 0, 0) == -ESRCH)
        return true; /* reaped (or SIGCHLD ignored) */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    /* waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT | __WALL): __WALL, so that a
     * child whose exit signal is not SIGCHLD (clone's, os/cowchild.c's) is seen too */
    long r = sys6(SYS_waitid, 1, pid, (long)&info, 4 | 1 | 0x01000000 | 0x40000000, 0, 0);
    return r == 0 && info.si_pid == pid; /* a zombie: exited, not reaped yet */
}


/* ---- Descriptors, limits and the canonical heap's window (mem/canon.c, mem/region.c,
 * base/options.c; issue 18). */

int os_rlimit(int resource, uint64_t *soft) {
    struct rlimit rl;
    int err = err_of(sys6(SYS_getrlimit, resource, (long)&rl, 0, 0, 0, 0));
    if (!err)
        *soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    return err;
}

int os_fd_id(int fd, uint64_t *dev, uint64_t *ino) {
    struct stat st;
    int err = err_of(sys6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0));
    if (!err) {
        *dev = (uint64_t)st.st_dev;
        *ino = (uint64_t)st.st_ino;
    }
    return err;
}

/* Above the soft limit while the limit is at most this: the kernel's table of descriptors
 * grows to the highest number in use (memory, and fork copies it). */
#define ABOVE_LIMIT_MAX 65536
#define ABOVE_LIMIT_ROOM 32 /* how far above it ours may go (they are a handful) */

/* Descriptor fd moved to number `min` or above, though that is past the soft limit: the
 * limit is raised for the dup and put back at once (the kernel checks it only when it hands
 * a number out; one at or above it stays valid). A program thread that opens a descriptor
 * in between, with all of its own in use, may get one past its limit: that instant is at
 * our init or a fork's, rare and short. -1 if the hard limit leaves no room (and may not
 * be raised). */
static int dup_above_limit(int fd, uint64_t soft, uint64_t hard) {
    if (soft > ABOVE_LIMIT_MAX)
        return -1;
    /* (Raising the hard limit too, where it leaves no room, takes CAP_SYS_RESOURCE.) */
    struct rlimit raised = {soft + ABOVE_LIMIT_ROOM < hard ? soft + ABOVE_LIMIT_ROOM : hard, hard};
    if (soft >= hard)
        raised.rlim_cur = raised.rlim_max = soft + 1;
    struct rlimit old;
    os_count(OS_CALL_OTHER);
    if (err_of(sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&raised, (long)&old, 0, 0)))
        return -1;
    long r = sys6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, (long)soft, 0, 0, 0);
    sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, (long)&old, 0, 0, 0);
    return err_of(r) ? -1 : (int)r;
}

int os_pages_apply(uintptr_t page0, unsigned n, bool (*want)(unsigned k, const void *arg),
                   const void *arg, int (*op)(const struct iovec *ranges, unsigned n)) {
    struct iovec iov[OS_RANGES_BATCH];
    unsigned ranges = 0;
    for (unsigned k = 0; k < n; k++) {
        if (!want(k, arg))
            continue;
        uintptr_t page = page0 + (uintptr_t)k * OS_PAGE;
        const struct iovec *last = &iov[ranges ? ranges - 1 : 0];
        if (ranges == OS_RANGES_BATCH && (uintptr_t)last->iov_base + last->iov_len != page) {
            int err = op(iov, ranges);
            if (err)
                return err;
            ranges = 0;
        }
        ranges = os_ranges_add_page(iov, ranges, page);
    }
    return ranges ? op(iov, ranges) : 0;
}

long os_open_out_of_way(const char *path, int flags, uint64_t *dev, uint64_t *ino) {
    long fd = open_at(path, flags, 0);
    if (fd < 0)
        return fd;
    int err = os_fd_id((int)fd, dev, ino);
    if (err) {
        os_close((int)fd);
        return -err;
    }
    return os_fd_out_of_way((int)fd);
}

int os_fd_out_of_way(int fd) {
    /* Past the soft limit, where the program's descriptors never are: it keeps every number
     * below its limit, as under glibc (memcached counts on all 1024 of them). Where the hard
     * limit leaves no room, near the soft limit, at most 1000. */
    struct rlimit rl;
    if (err_of(sys6(SYS_getrlimit, RLIMIT_NOFILE, (long)&rl, 0, 0, 0, 0)))
        return fd;
    uint64_t soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    uint64_t hard = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_max;
    if ((uint64_t)fd >= soft)
        return fd;
    long r = dup_above_limit(fd, soft, hard);
    if (r < 0) {
        int min = soft < 1024 ? (soft > 64 ? (int)soft - 24 : (int)soft / 2) : 1000;
        if (fd >= min)
            return fd;
        os_count(OS_CALL_OTHER);
        r = sys6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, min, 0, 0, 0);
        if (err_of(r))
            return fd;
    }
    sys6(SYS_close, fd, 0, 0, 0, 0, 0);
    return (int)r;
}

void *os_map_window(size_t len, int fd, int *err) {
    void *p = mmap_raw(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_NORESERVE | (fd < 0 ? MAP_ANONYMOUS : 0), fd, 0, err);
    if (p)
        advise_dump(p, len, false); /* (canon.c makes its used part dumpable) */
    return p;
}

int os_alias(void *src, size_t len, void *dst, int want_populate) {
    os_count(OS_CALL_MREMAP);
    /* old_size 0 on a shared mapping: a second mapping of the same pages. MREMAP_FIXED is
     * safe: dst is always inside our own reservation. */
    long r = sys6(SYS_mremap, (long)src, 0, (long)len, MREMAP_MAYMOVE | MREMAP_FIXED, (long)dst, 0);
    if (err_of(r))
        return err_of(r);
    if (want_populate && atomic_load_explicit(&os_state.populate_write_works, memory_order_relaxed)) {
        os_count(OS_CALL_OTHER);
        long p = sys6(SYS_madvise, (long)dst, (long)len, MADV_POPULATE_WRITE, 0, 0, 0);
        if (err_of(p) == EINVAL)
            atomic_store(&os_state.populate_write_works, 0);
    }
    return 0;
}

int os_move_mapping(void *from, size_t len, void *to) {
    os_count(OS_CALL_MREMAP);
    return err_of(sys6(SYS_mremap, (long)from, (long)len, (long)len,
                       MREMAP_MAYMOVE | MREMAP_FIXED, (long)to, 0));
}

int os_remove(void *addr, size_t len) {
    os_count(OS_CALL_MADVISE);
    return err_of(sys6(SYS_madvise, (long)addr, (long)len, MADV_REMOVE, 0, 0, 0));
}

int os_remove_locked(void *addr, size_t len) {
    os_count(OS_CALL_OTHER);
    int err = err_of(sys6(SYS_munlock, (long)addr, (long)len, 0, 0, 0, 0));
    if (err)
        return err;
    err = os_remove(addr, len);
    os_count(OS_CALL_OTHER);
    int relock = err_of(sys6(SYS_mlock2, (long)addr, (long)len, 1 /* MLOCK_ONFAULT */, 0, 0, 0));
    return err ? err : relock;
}

int os_pread_all(int fd, void *buf, size_t len, uint64_t off) {
    char *p = buf;
    while (len > 0) {
        os_count(OS_CALL_OTHER);
        long n = sys6(SYS_pread64, fd, (long)p, (long)len, (long)off, 0, 0);
        if (n == -EINTR)
            continue;
        if (err_of(n))
            return err_of(n);
        if (n == 0)
            return EIO;
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

int os_next_data(int fd, uint64_t from, uint64_t *data, uint64_t *hole) {
    os_count(OS_CALL_OTHER);
    long d = sys6(SYS_lseek, fd, (long)from, SEEK_DATA, 0, 0, 0);
    if (err_of(d))
        return err_of(d);
    os_count(OS_CALL_OTHER);
    long h = sys6(SYS_lseek, fd, d, SEEK_HOLE, 0, 0, 0);
    if (err_of(h))
        return err_of(h);
    *data = (uint64_t)d;
    *hole = (uint64_t)h;
    return 0;
}

uint64_t os_random(void) {
    uint64_t v = 0;
    if (sys6(SYS_getrandom, (long)&v, sizeof v, 1 /* GRND_NONBLOCK */, 0, 0, 0) != sizeof v) {
        /* No entropy yet (early boot): the kernel's AT_RANDOM bytes, mixed with time. */
        const uint64_t *at = (const uint64_t *)getauxval(AT_RANDOM);
        v = (at ? at[0] ^ at[1] : 0) ^ os_monotonic_ns() * 0x9E3779B97F4A7C15ULL;
    }
    return v;
}

bool os_secure(void) { return getauxval(AT_SECURE) != 0; }

void os_segment_bases(uintptr_t *fs, uintptr_t *gs) {
    if (getauxval(AT_HWCAP2) & 2 /* HWCAP2_FSGSBASE */) {
        __asm__ volatile("rdfsbase %0" : "=r"(*fs));
        __asm__ volatile("rdgsbase %0" : "=r"(*gs));
        return;
    }
    *fs = *gs = 0;
    sys6(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, (long)fs, 0, 0, 0, 0);
    sys6(SYS_arch_prctl, 0x1004 /* ARCH_GET_GS */, (long)gs, 0, 0, 0, 0);
}
