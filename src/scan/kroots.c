/* kroots: see kroots.h. */
#define _GNU_SOURCE
#include "scan/kroots.h"
#include "base/fmt.h"
#include "scan/maps.h"
#include "scan/mqlog.h"
#include "scan/world.h"
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/msg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define KROOTS_EPOLL_MAX 1024 /* epoll instances noted at once */
#define KROOTS_EVENTFD_MAX 1024 /* eventfds noted at once */
#define KROOTS_MSGQ_MAX 256     /* System V message queues noted at once */
#define MSGQ_TEXT_MAX 65536     /* a message's text read at once (msgmax is 8 KiB by default) */
#define KROOTS_BATCH 512      /* user data values handed to the walk at a time */
#define KROOTS_SIGNALS_MAX 256 /* queued signals' values noted at once */
#define KROOTS_RINGS_MAX 64    /* io_uring descriptors read at once */
#define KROOTS_STREAMS_MAX 1024 /* pipes and socket pairs noted at once */
#define STREAM_CHUNK 4096       /* a stream's bytes turned into values at a time */
#define DGRAM_PEEKS_MAX 65536   /* datagrams peeked on one socket in one walk, at most */

/* What a noted descriptor is: a pipe or stream socket (bytes), a sequenced-packet socket
 * (records: the kernel counts every byte pending), a datagram socket (the kernel counts the
 * first datagram's bytes only). */
enum { KIND_STREAM, KIND_SEQPACKET, KIND_DGRAM };

static struct {
    /* fd + 1 of each noted epoll instance, 0 for a free slot: taken by compare-and-swap from
     * 0 (kroots_note_epoll, any thread), cleared by kroots_for_each when the descriptor is
     * closed (the marking thread). */
    atomic_int epfd[KROOTS_EPOLL_MAX];
    /* fd + 1 of each noted eventfd, the same way (kroots_note_eventfd) */
    atomic_int efd[KROOTS_EVENTFD_MAX];
    /* id + 1 of each System V message queue the program sent to, the same way */
    atomic_int msqid[KROOTS_MSGQ_MAX];
    atomic_bool overflow; /* a note found no free slot: set by any thread, never cleared */
    bool searched; /* the first walk looked for instances made before (the marking thread) */
    atomic_bool timers; /* the program made a timer that signals: set by any thread, once */
    /* Signals queued to the process: signo[i] 0 for a free slot, taken by compare-and-swap
     * to -1 (kroots_note_signal, any thread), then the value stored and signo set; cleared
     * by kroots_for_each once no such signal is pending (the marking thread). A note that
     * found no slot sets sig_overflow, cleared once no signal at all is pending. */
    atomic_int signo[KROOTS_SIGNALS_MAX];
    _Atomic uintptr_t sigval[KROOTS_SIGNALS_MAX];
    atomic_bool sig_overflow;
    /* io_uring rings (the marking thread's): the digest of the rings mapped at the latest
     * walk of the mappings, the one the descriptors below were found for, and those. */
    uint64_t rings, rings_found;
    int ring_fd[KROOTS_RINGS_MAX];
    unsigned nrings;
    bool rings_overflow; /* more ring descriptors than ring_fd holds */
    /* The read ends of the pipes and the ends of the socket pairs the program made: sfd[i]
     * fd + 1, 0 for a free slot, taken by compare-and-swap to -1 (kroots_note_stream, any
     * thread), then its inode and kind (KIND_*) stored and sfd set; cleared by
     * kroots_for_each once the descriptor is closed or is another file's. */
    atomic_int sfd[KROOTS_STREAMS_MAX];
    _Atomic uint64_t sino[KROOTS_STREAMS_MAX];
    _Atomic uint8_t skind[KROOTS_STREAMS_MAX];
    atomic_bool stream_overflow; /* a note found no free slot: never cleared (every_stream) */
    /* The walk's (the marking thread's, world stopped; in liboscar.so's own data, so not a
     * root itself): the fdinfo file's lines, and the values read from it. */
    char buf[MAPS_BUF];
    uintptr_t values[KROOTS_BATCH];
    size_t n;
    char name[64]; /* "user data of epoll descriptor N" (OSCAR_DANGLING=report names it) */
    /* A stream's bytes (stream_bytes): the last 7 of the chunk before, then a chunk; and
     * /proc/self/fd's entries (each_fd: buf may hold a stream's bytes meanwhile). */
    unsigned char carry[7];
    size_t ncarry;
    unsigned char joined[7 + STREAM_CHUNK];
    char dents[4096];
    /* A message copied from a queue (message_queues): its type, then its text. */
    unsigned char message[sizeof(long) + MSGQ_TEXT_MAX];
    roots_fn fn;
    void *arg;
} kroots_state;

/* A table of noted descriptors (fd + 1 each, 0 for a free slot). */
static bool noted_in(atomic_int *slots, unsigned max, int fd) {
    for (unsigned i = 0; i < max; i++)
        if (atomic_load_explicit(&slots[i], memory_order_acquire) == fd + 1)
            return true;
    return false;
}

static void note_in(atomic_int *slots, unsigned max, int fd) {
    if (fd < 0 || noted_in(slots, max, fd))
        return;
    for (unsigned i = 0; i < max; i++) {
        int empty = 0;
        if (atomic_compare_exchange_strong(&slots[i], &empty, fd + 1))
            return;
    }
    atomic_store(&kroots_state.overflow, true);
}

bool kroots_is_epoll(int fd) { return noted_in(kroots_state.epfd, KROOTS_EPOLL_MAX, fd); }
void kroots_note_epoll(int fd) { note_in(kroots_state.epfd, KROOTS_EPOLL_MAX, fd); }
bool kroots_is_eventfd(int fd) { return noted_in(kroots_state.efd, KROOTS_EVENTFD_MAX, fd); }
void kroots_note_eventfd(int fd) { note_in(kroots_state.efd, KROOTS_EVENTFD_MAX, fd); }
void kroots_note_msgq(int id) { note_in(kroots_state.msqid, KROOTS_MSGQ_MAX, id); }

void kroots_note_timer(void) {
    if (!atomic_load_explicit(&kroots_state.timers, memory_order_relaxed))
        atomic_store(&kroots_state.timers, true);
}

void kroots_note_signal(int sig, uintptr_t value) {
    for (unsigned i = 0; i < KROOTS_SIGNALS_MAX; i++) {
        int empty = 0;
        if (atomic_compare_exchange_strong(&kroots_state.signo[i], &empty, -1)) {
            atomic_store_explicit(&kroots_state.sigval[i], value, memory_order_relaxed);
            atomic_store_explicit(&kroots_state.signo[i], sig, memory_order_release);
            return;
        }
    }
    atomic_store(&kroots_state.sig_overflow, true);
}

/* The slot noting fd, or -1. */
static int stream_slot_of(int fd) {
    for (unsigned i = 0; i < KROOTS_STREAMS_MAX; i++)
        if (atomic_load_explicit(&kroots_state.sfd[i], memory_order_acquire) == fd + 1)
            return (int)i;
    return -1;
}

bool kroots_is_stream(int fd) { return stream_slot_of(fd) >= 0; }

/* Takes slot i from `expected` (0: free; or a stale note) for fd, its inode ino. */
static bool take_stream_slot(unsigned i, int expected, int fd, uint64_t ino, int kind) {
    if (!atomic_compare_exchange_strong(&kroots_state.sfd[i], &expected, -1))
        return false;
    atomic_store_explicit(&kroots_state.sino[i], ino, memory_order_relaxed);
    atomic_store_explicit(&kroots_state.skind[i], (uint8_t)kind, memory_order_relaxed);
    atomic_store_explicit(&kroots_state.sfd[i], fd + 1, memory_order_release);
    return true;
}

/* fd's KIND_* (a pipe, or not a socket: KIND_STREAM). */
static int kind_of(int fd) {
    int type = 0;
    socklen_t len = sizeof type;
    if (os_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, (long)&type, (long)&len) < 0)
        return KIND_STREAM;
    return type == SOCK_DGRAM ? KIND_DGRAM : type == SOCK_SEQPACKET ? KIND_SEQPACKET : KIND_STREAM;
}

void kroots_note_stream(int fd) {
    uint64_t dev, ino;
    if (fd < 0 || os_fd_id(fd, &dev, &ino) != 0)
        return;
    int kind = kind_of(fd), noted = stream_slot_of(fd);
    if (noted >= 0) {
        /* (a number closed and given to this stream since: its inode is this one's) */
        atomic_store_explicit(&kroots_state.sino[noted], ino, memory_order_relaxed);
        atomic_store_explicit(&kroots_state.skind[noted], (uint8_t)kind, memory_order_relaxed);
        return;
    }
    for (unsigned i = 0; i < KROOTS_STREAMS_MAX; i++)
        if (take_stream_slot(i, 0, fd, ino, kind))
            return;
    /* Full: a note of a descriptor closed (or another file's) since is taken over. */
    for (unsigned i = 0; i < KROOTS_STREAMS_MAX; i++) {
        int v = atomic_load_explicit(&kroots_state.sfd[i], memory_order_acquire);
        uint64_t d, n;
        if (v > 0 &&
            (os_fd_id(v - 1, &d, &n) != 0 ||
             n != atomic_load_explicit(&kroots_state.sino[i], memory_order_relaxed)) &&
            take_stream_slot(i, v, fd, ino, kind))
            return;
    }
    atomic_store(&kroots_state.stream_overflow, true);
}

void kroots_note_local_socket(int fd, bool bound) {
    if (bound) {
        if (kind_of(fd) == KIND_DGRAM)
            kroots_note_stream(fd);
        return;
    }
    struct ucred c;
    socklen_t len = sizeof c;
    if (os_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, (long)&c, (long)&len) == 0 &&
        c.pid == os_getpid())
        kroots_note_stream(fd);
}

static void flush(void) {
    if (kroots_state.n)
        kroots_state.fn((uintptr_t)kroots_state.values,
                        (uintptr_t)(kroots_state.values + kroots_state.n), ROOT_KERNEL,
                        kroots_state.name, kroots_state.arg);
    kroots_state.n = 0;
}

/* A value to scan, handed to the walk a batch at a time. */
static void add_value(uintptr_t v) {
    kroots_state.values[kroots_state.n++] = v;
    if (kroots_state.n == KROOTS_BATCH)
        flush();
}

/* path[64]: /proc/self/fdinfo/<fd>; the roots read from it are named `before` fd `after`
 * (OSCAR_DANGLING=report). */
static void fdinfo_of(int fd, char path[64], const char *before, const char *after) {
    struct fmt f = {path, 0, 64};
    fmt_str(&f, "/proc/self/fdinfo/");
    fmt_u64(&f, (uint64_t)fd);
    fmt_char(&f, 0);
    struct fmt g = FMT_INIT(kroots_state.name);
    fmt_str(&g, before);
    fmt_u64(&g, (uint64_t)fd);
    fmt_str(&g, after);
    fmt_char(&g, 0);
}

/* The hexadecimal number p begins with (lower case, as /proc writes it). */
static uint64_t hex_value(const char *p) {
    uint64_t v = 0;
    for (;; p++) {
        unsigned d = *p >= '0' && *p <= '9'   ? (unsigned)(*p - '0')
                     : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10)
                                              : 16u;
        if (d == 16)
            return v;
        v = v << 4 | d;
    }
}

/* In a line that begins with `prefix`, the hexadecimal value right after `key` (leading
 * spaces skipped) is a root. */
static void value_after(const char *line, const char *prefix, const char *key) {
    if (strncmp(line, prefix, strlen(prefix)) != 0)
        return;
    const char *p = strstr(line, key);
    if (!p)
        return;
    for (p += strlen(key); *p == ' '; p++)
        ;
    add_value(hex_value(p));
}

/* /proc/self/fdinfo/N of an epoll instance:
 * "tfd:        5 events:       19 data:   7f0123456789  pos:0 ino:..." */
static int registration(char *line, void *arg) {
    (void)arg;
    value_after(line, "tfd:", " data:");
    return 0;
}

/* /proc/self/fdinfo/N of an eventfd: "eventfd-count:       7f0123456789" (the counter, a
 * value a write added and no read took yet). *arg: the line was there (the descriptor is
 * still an eventfd's). */
static int counter_line(char *line, void *arg) {
    if (strncmp(line, "eventfd-count:", 14) != 0)
        return 0;
    *(bool *)arg = true;
    value_after(line, "eventfd-count:", ":");
    return 0;
}

/* /proc/self/timers: "signal: 34/00007f0123456789" (the signal, then sigev_value). */
static int timer_line(char *line, void *arg) {
    (void)arg;
    value_after(line, "signal:", "/");
    return 0;
}

/* "ShdPnd:\t0000000000000200" or "SigPnd:..." (a hexadecimal mask, bit sig - 1): or'ed into
 * *arg. */
static int pending_line(char *line, void *arg) {
    if (strncmp(line, "ShdPnd:", 7) != 0 && strncmp(line, "SigPnd:", 7) != 0)
        return 0;
    const char *p = line + 7;
    while (*p == ' ' || *p == '\t')
        p++;
    *(uint64_t *)arg |= hex_value(p);
    return 0;
}

/* The signals pending for the process or any of its threads; 0 or -errno. The world is
 * stopped: the program's threads are this one (its status has the process's ShdPnd too) and
 * the parked ones. */
static int pending_signals(uint64_t *mask) {
    *mask = 0;
    int err = proc_lines("/proc/thread-self/status", kroots_state.buf, pending_line, mask);
    for (size_t i = 0, n = world_count(); !err && i < n; i++) {
        char path[64];
        struct fmt f = FMT_INIT(path);
        fmt_str(&f, "/proc/self/task/");
        fmt_u64(&f, (uint64_t)world_thread_at(i)->proc_tid);
        fmt_str(&f, "/status");
        fmt_char(&f, 0);
        err = proc_lines(path, kroots_state.buf, pending_line, mask);
    }
    return err;
}

/* The values of queued signals still pending; notes of signals no longer pending forgotten. */
static int queued_signals(void) {
    bool any = atomic_load(&kroots_state.sig_overflow);
    for (unsigned i = 0; i < KROOTS_SIGNALS_MAX && !any; i++)
        any = atomic_load_explicit(&kroots_state.signo[i], memory_order_acquire) > 0;
    if (!any)
        return 0;
    uint64_t pending;
    int err = pending_signals(&pending);
    if (err)
        return err;
    struct fmt g = FMT_INIT(kroots_state.name);
    fmt_str(&g, "value of a queued signal");
    fmt_char(&g, 0);
    kroots_state.n = 0;
    for (unsigned i = 0; i < KROOTS_SIGNALS_MAX; i++) {
        int sig = atomic_load_explicit(&kroots_state.signo[i], memory_order_acquire);
        if (sig <= 0)
            continue;
        if (sig <= 64 && (pending >> (sig - 1)) & 1)
            add_value(atomic_load_explicit(&kroots_state.sigval[i], memory_order_relaxed));
        else /* (delivered: the handler's si_value is the thread's, read as its) */
            atomic_compare_exchange_strong(&kroots_state.signo[i], &sig, 0);
    }
    flush();
    if (!pending)
        atomic_store(&kroots_state.sig_overflow, false);
    return atomic_load(&kroots_state.sig_overflow) ? -ENOSPC : 0;
}

/* The decimal number p begins with. */
static uint64_t dec_value(const char *p) {
    uint64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return v;
}

/* fn(fd, arg) for each descriptor of the process (from /proc/self/fd, its own descriptor
 * left out), until fn returns nonzero. 0, fn's result, or -errno. */
static int each_fd(int (*fn)(int fd, void *arg), void *arg) {
    long dir = os_open_dir_stopped("/proc/self/fd");
    if (dir < 0)
        return (int)dir;
    long n;
    int err = 0;
    while (!err && (n = os_getdents((int)dir, kroots_state.dents, sizeof kroots_state.dents)) > 0)
        for (long off = 0; off < n && !err;) {
            struct os_dirent *d = (void *)(kroots_state.dents + off);
            off += d->reclen;
            int fd = (int)dec_value(d->name);
            if (d->name[0] >= '0' && d->name[0] <= '9' && fd != (int)dir)
                err = fn(fd, arg);
        }
    os_close((int)dir);
    return err ? err : n < 0 ? (int)n : 0;
}

struct fd_link {
    const char *wanted;
    void (*fn)(int fd);
};

/* arg: fd_link pairs, the last with no link: fn(fd) of each whose link is fd's. */
static int fd_with_link(int fd, void *arg) {
    char path[64], link[64];
    struct fmt f = FMT_INIT(path);
    fmt_str(&f, "/proc/self/fd/");
    fmt_u64(&f, (uint64_t)fd);
    fmt_char(&f, 0);
    if (os_readlink(path, link, sizeof link) <= 0)
        return 0;
    for (const struct fd_link *l = arg; l->wanted; l++)
        if (strcmp(link, l->wanted) == 0)
            l->fn(fd);
    return 0;
}

/* Each descriptor of the process whose /proc/self/fd link is link_wanted: fn(fd). 0 or
 * -errno. */
static int each_fd_to(const char *link_wanted, void (*fn)(int fd)) {
    struct fd_link l[] = {{link_wanted, fn}, {NULL, NULL}};
    return each_fd(fd_with_link, l);
}

/* Epoll instances and eventfds the wrappers did not see: inherited across exec, or made
 * before Oscar was loaded. Once, at the first walk, in one pass over /proc/self/fd. */
static void note_existing(void) {
    static const struct fd_link kinds[] = {{"anon_inode:[eventpoll]", kroots_note_epoll},
                                           {"anon_inode:[eventfd]", kroots_note_eventfd},
                                           {NULL, NULL}};
    each_fd(fd_with_link, (void *)kinds);
}

/* The fdinfo of every descriptor noted in slots (fd + 1 each), its roots found by `line`
 * (whose arg, a bool, it sets once its kind of line is there) and named `before` fd. One that
 * is closed is forgotten (unless noted again meanwhile); so is one whose fdinfo lacks that
 * line, when forget_unless_found (its number is another file's now). 0 or -errno. */
static int noted_fdinfo(atomic_int *slots, unsigned max, const char *before,
                        int (*line)(char *line, void *found), bool forget_unless_found) {
    for (unsigned i = 0; i < max; i++) {
        int v = atomic_load_explicit(&slots[i], memory_order_acquire);
        if (!v)
            continue;
        char path[64];
        bool found = false;
        fdinfo_of(v - 1, path, before, "");
        int err = proc_lines(path, kroots_state.buf, line, &found);
        flush(); /* (before the next one's name) */
        if (err == -ENOENT || err == -EBADF || (!err && !found && forget_unless_found))
            atomic_compare_exchange_strong(&slots[i], &v, 0);
        else if (err)
            return err;
    }
    return 0;
}

void kroots_rings(uint64_t digest) { kroots_state.rings = digest; }

static void note_ring(int fd) {
    if (kroots_state.nrings < KROOTS_RINGS_MAX)
        kroots_state.ring_fd[kroots_state.nrings++] = fd;
    else
        kroots_state.rings_overflow = true;
}

/* What a reading of an io_uring's listing found of its buffers. */
struct ring_listing {
    long bufs;      /* "UserBufs:" says how many (-1: no such line) */
    long bufs_seen; /* buffer lines read */
};

/* /proc/self/fdinfo/N of an io_uring. Below "UserBufs:", a line per buffer registered with
 * the ring, "    0: 0x7f0123456000/4096": the kernel keeps its address and may read or write
 * there until it is unregistered, so its first and last bytes are roots. Below
 * "CqOverflowList:", a line per completion the full ring could not take,
 * "  user_data=140123456789, res=0, flags=0" (decimal). (The ring's own completions,
 * "    0: user_data:...", are read from its mapping.) */
static int ring_line(char *line, void *arg) {
    struct ring_listing *l = arg;
    if (strncmp(line, "UserBufs:", 9) == 0) {
        const char *c = line + 9;
        while (*c == ' ' || *c == '\t')
            c++;
        l->bufs = (long)dec_value(c);
        return 0;
    }
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "user_data=", 10) == 0) {
        add_value(dec_value(p + 10));
        return 0;
    }
    const char *q = p;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q == p || strncmp(q, ": 0x", 4) != 0)
        return 0;
    uintptr_t addr = hex_value(q + 4);
    for (q += 4; (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'); q++)
        ;
    uint64_t len = *q == '/' ? dec_value(q + 1) : 0;
    add_value(addr);
    if (len > 1)
        add_value(addr + len - 1);
    /* What it holds too: the kernel writes into it through pages it pinned, past the page
     * tables, so a concurrent mark's write tracking never lists them written: a pointer a
     * READ_FIXED put there while the mark ran, its other copy gone, was handed out again
     * (protect_ring_held "fixed"). Read at every mark (guarded: the program may have
     * unmapped it). */
    if (len && addr + len > addr) {
        flush();
        kroots_state.fn(addr, addr + len, ROOT_KERNEL, kroots_state.name, kroots_state.arg);
    }
    l->bufs_seen++;
    return 0;
}

/* One ring's listing, whole: the kernel lists a ring's buffers only if it can take the ring's
 * lock at once (newer kernels list nothing of the ring then, not even "UserBufs:"); the
 * overflow list, where the kernel has it, comes with them or under a lock it waits for. A
 * listing whose buffers are missing is read again, a few times, then given up (-EBUSY: the
 * round is skipped). Values of an incomplete reading are scanned too (more roots than
 * needed: harmless). */
static int ring_listing(const char *path) {
    for (int tries = 0;; tries++) {
        struct ring_listing l = {-1, 0};
        int err = proc_lines(path, kroots_state.buf, ring_line, &l);
        flush();
        if (err)
            return err;
        if (l.bufs >= 0 && l.bufs_seen >= l.bufs)
            return 0;
        if (tries == 3)
            return -EBUSY;
        os_yield();
    }
}

/* The overflowed completions and registered buffers of every io_uring of the process. Its
 * descriptors are looked for again whenever the rings mapped changed (none: nothing to
 * read). A ring whose descriptor was closed once it was mapped lists nothing: README. */
static int io_uring_roots(void) {
    if (kroots_state.rings != kroots_state.rings_found) {
        kroots_state.nrings = 0;
        kroots_state.rings_overflow = false;
        if (kroots_state.rings) {
            int err = each_fd_to("anon_inode:[io_uring]", note_ring);
            if (err)
                return err;
        }
        kroots_state.rings_found = kroots_state.rings;
    }
    for (unsigned i = 0; i < kroots_state.nrings; i++) {
        int fd = kroots_state.ring_fd[i];
        char path[64];
        fdinfo_of(fd, path, "io_uring descriptor ", " (overflow, buffers)");
        int err = ring_listing(path);
        if (err == -ENOENT || err == -EBADF)
            kroots_state.rings_found = 0; /* (closed: look again at the next walk) */
        else if (err)
            return err;
    }
    return kroots_state.rings_overflow ? -ENOSPC : 0;
}

/* Bytes of a stream, read a chunk at a time: the words at every byte offset are roots (the
 * stream's alignment is the writer's: what was read before may be any length). The last 7
 * bytes of a chunk are kept in front of the next, for the words across the two. */
static void stream_bytes(const unsigned char *p, size_t n) {
    unsigned char *joined = kroots_state.joined;
    while (n) {
        size_t take = n < STREAM_CHUNK ? n : STREAM_CHUNK;
        memcpy(joined, kroots_state.carry, kroots_state.ncarry);
        memcpy(joined + kroots_state.ncarry, p, take);
        size_t len = kroots_state.ncarry + take;
        for (size_t at = 0; at + sizeof(uintptr_t) <= len; at++) {
            uintptr_t v;
            memcpy(&v, joined + at, sizeof v);
            add_value(v);
        }
        kroots_state.ncarry = len < 7 ? len : 7;
        memcpy(kroots_state.carry, joined + len - kroots_state.ncarry, kroots_state.ncarry);
        p += take;
        n -= take;
    }
}

/* What a pipe holds, through a pipe of our own that tee(2) fills without taking anything
 * from the program's (made and closed while the world is stopped: no thread of the program
 * can open a descriptor meanwhile). 0 or -errno (-EMSGSIZE: not all of it could be read). */
static int pipe_pending(int fd, long pending) {
    int t[2];
    int r = os_pipe_stopped(t); /* (at the program's descriptor limit too) */
    if (r < 0)
        return r;
    long size = os_syscall(SYS_fcntl, fd, F_GETPIPE_SZ, 0, 0, 0);
    if (size > 0)
        os_syscall(SYS_fcntl, t[1], F_SETPIPE_SZ, size, 0, 0);
    long got = os_syscall(SYS_tee, fd, t[1], pending, SPLICE_F_NONBLOCK, 0);
    long read_total = 0;
    while (got > 0 && read_total < got) {
        long n = os_read(t[0], kroots_state.buf, sizeof kroots_state.buf);
        if (n <= 0)
            break;
        stream_bytes((const unsigned char *)kroots_state.buf, (size_t)n);
        read_total += n;
    }
    os_close(t[0]);
    os_close(t[1]);
    if (got < 0)
        return got == -EAGAIN ? 0 : (int)got; /* (EAGAIN: taken meanwhile by another process) */
    if (read_total < got)
        return -EMSGSIZE;
    /* Less than was pending: our pipe was too small, or another process sharing the pipe
     * read from it meanwhile (what it took is no longer ours to keep). */
    int now = 0;
    if (got < pending && (os_syscall(SYS_ioctl, fd, FIONREAD, (long)&now, 0, 0) < 0 || now > got))
        return -EMSGSIZE;
    return 0;
}

/* fd's poll events (of POLLIN, POLLERR, POLLRDHUP), now; 0 where poll fails. */
static short poll_now(int fd) {
    struct pollfd p = {fd, POLLIN | POLLRDHUP, 0};
    return os_syscall(SYS_poll, (long)&p, 1, 0, 0, 0) == 1 ? p.revents : 0;
}

/* What a socket holds, peeked (MSG_PEEK) from its start to its end with the peek offset
 * (SO_PEEK_OFF), which is put back as it was. A stream socket is never read past its end:
 * a read that finds nothing left takes the socket's pending error, which is the program's.
 * A datagram or sequenced-packet socket's read takes that error before anything else: one
 * with an error pending (POLLERR, which takes nothing) is not read, and the walk has no
 * proof. A record's read gives 0 for an empty record (which it marks peeked: the next read
 * at the same offset goes past it), a stream's for its end. A datagram socket's pending
 * count is its first datagram's: it is read until no datagram is left (EAGAIN), or, shut
 * down for reading, until a read finds none (0). */
static int socket_pending(int fd, long pending, int kind) {
    short ev = kind == KIND_STREAM ? 0 : poll_now(fd);
    if (ev & POLLERR)
        return -EMSGSIZE;
    int old = -1, zero = 0;
    socklen_t len = sizeof old;
    if (os_syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, (long)&old, (long)&len) < 0)
        return -EMSGSIZE;
    if (os_syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, (long)&zero, sizeof zero) < 0)
        return -EMSGSIZE;
    long total = 0;
    int err = 0;
    for (unsigned peeks = 0; kind == KIND_DGRAM || total < pending; peeks++) {
        struct iovec iov = {kroots_state.buf, sizeof kroots_state.buf};
        if (kind != KIND_DGRAM && (long)iov.iov_len > pending - total)
            iov.iov_len = (size_t)(pending - total);
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        long n = peeks < DGRAM_PEEKS_MAX
                     ? os_syscall(SYS_recvmsg, fd, (long)&msg, MSG_PEEK | MSG_DONTWAIT, 0, 0)
                     : -EMSGSIZE;
        if (kind == KIND_DGRAM && (n == -EAGAIN || (n == 0 && (ev & POLLRDHUP))))
            break; /* (every datagram read) */
        if (n < 0 || (n == 0 && kind == KIND_STREAM)) {
            err = n < 0 && n != -EAGAIN ? (int)n : -EMSGSIZE;
            break;
        }
        stream_bytes((const unsigned char *)kroots_state.buf, (size_t)n);
        total += n;
    }
    os_syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, (long)&old, sizeof old);
    return err;
}

/* The `pending` bytes of descriptor fd (a pipe's read end, or a stream socket), as roots
 * named after it. 0 or -errno. */
static int read_stream(int fd, bool pipe, long pending, int kind) {
    struct fmt g = FMT_INIT(kroots_state.name);
    fmt_str(&g, pipe ? "data pending in pipe descriptor " : "data pending in socket descriptor ");
    fmt_u64(&g, (uint64_t)fd);
    fmt_char(&g, 0);
    kroots_state.n = 0;
    kroots_state.ncarry = 0;
    int err = pipe ? pipe_pending(fd, pending) : socket_pending(fd, pending, kind);
    flush();
    return err;
}

/* Does fd hold something unread? pending: the kernel's count (FIONREAD). A datagram socket
 * counts its first datagram's bytes: 0 for an empty one, and a pointer may lie in the next. */
static bool unread(int fd, int pending, int kind) {
    return pending > 0 || (kind == KIND_DGRAM && (poll_now(fd) & POLLIN));
}

/* What noted stream fd (its inode ino, its KIND_*) holds unread. 0, -ESTALE (closed, or
 * another file's now: forget it) or -errno. */
static int stream_pending(int fd, uint64_t ino, int kind) {
    int pending = 0;
    long r = os_syscall(SYS_ioctl, fd, FIONREAD, (long)&pending, 0, 0);
    if (r < 0)
        return r == -EBADF || r == -ENOTTY || r == -EINVAL ? -ESTALE : (int)r;
    if (!unread(fd, pending, kind))
        return 0;
    struct stat st;
    if (os_syscall(SYS_fstat, fd, (long)&st, 0, 0, 0) < 0 || (uint64_t)st.st_ino != ino ||
        !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return -ESTALE;
    return read_stream(fd, S_ISFIFO(st.st_mode), pending, kind);
}

/* every_stream's look at one descriptor: a pipe's read end, or a local socket's, with bytes
 * pending, is read. */
static int any_stream(int fd, void *arg) {
    (void)arg;
    int pending = 0;
    struct stat st;
    if (os_syscall(SYS_fstat, fd, (long)&st, 0, 0, 0) < 0 ||
        !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) ||
        os_syscall(SYS_ioctl, fd, FIONREAD, (long)&pending, 0, 0) < 0)
        return 0;
    int kind = S_ISSOCK(st.st_mode) ? kind_of(fd) : KIND_STREAM;
    if (!unread(fd, pending, kind))
        return 0;
    if (S_ISFIFO(st.st_mode) &&
        (os_syscall(SYS_fcntl, fd, F_GETFL, 0, 0, 0) & O_ACCMODE) == O_WRONLY)
        return 0;
    if (S_ISSOCK(st.st_mode) && os_socket_domain(fd) != AF_UNIX)
        return 0;
    return read_stream(fd, S_ISFIFO(st.st_mode), pending, kind);
}

/* Once more pipes and socket pairs were made than could be noted: every pipe's read end and
 * every stream socket of the process's with bytes pending, from /proc/self/fd (an fstat and
 * an ioctl each at every mark: slower, never wrong). 0 or -errno. */
static int every_stream(void) { return each_fd(any_stream, NULL); }

#define STALE_MAX 64 /* stale notes looked for in one walk of /proc/self/fd */

/* Notes whose descriptor was closed (or is another file's) this mark: their stream may live
 * on under another number the wrappers did not see made (an open of /proc/self/fd/N, a
 * descriptor received with SCM_RIGHTS, pidfd_getfd), or not at all. The marking thread's,
 * under the walk (its buffers are static). */
static struct {
    unsigned n;               /* stale notes found (stream_roots; moved_streams empties) */
    unsigned slot[STALE_MAX]; /* the notes' slots */
    int v[STALE_MAX];         /* their sfd values when found stale */
    int err;                  /* a read's error, for stream_roots */
} stale_state;

/* moved_streams' look at one descriptor: a pipe or socket whose inode a stale note's is takes
 * over that note, and is read now. */
static int stale_match(int fd, void *arg) {
    (void)arg;
    struct stat st;
    if (os_syscall(SYS_fstat, fd, (long)&st, 0, 0, 0) < 0 ||
        !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return 0;
    if (S_ISFIFO(st.st_mode) &&
        (os_syscall(SYS_fcntl, fd, F_GETFL, 0, 0, 0) & O_ACCMODE) == O_WRONLY)
        return 0; /* (a pipe's write end: nothing to read through it) */
    for (unsigned k = 0; k < stale_state.n; k++) {
        unsigned i = stale_state.slot[k];
        if (atomic_load_explicit(&kroots_state.sino[i], memory_order_relaxed) !=
            (uint64_t)st.st_ino)
            continue;
        int v = stale_state.v[k];
        if (v && atomic_compare_exchange_strong(&kroots_state.sfd[i], &v, fd + 1)) {
            stale_state.v[k] = 0; /* (found: not forgotten) */
            int err = stream_pending(fd, (uint64_t)st.st_ino,
                                     atomic_load_explicit(&kroots_state.skind[i],
                                                          memory_order_relaxed));
            if (err && err != -ESTALE)
                return stale_state.err = err;
        }
    }
    return 0;
}

/* The stale notes' streams under their new numbers, read; the rest forgotten. 0 or -errno.
 * (A walk of /proc/self/fd, an fstat a descriptor: only in a mark after a noted one closed.
 * Before, a pipe's read end opened again through /proc/self/fd, or sent to the process itself
 * and received, the old number closed, held the only pointer unseen: the object was handed
 * out in every run; protect_stream_held "procfd", "scm", "pidfd".) */
static int moved_streams(void) {
    stale_state.err = 0;
    int err = each_fd(stale_match, NULL);
    for (unsigned k = 0; k < stale_state.n; k++)
        if (stale_state.v[k]) {
            int v = stale_state.v[k];
            atomic_compare_exchange_strong(&kroots_state.sfd[stale_state.slot[k]], &v, 0);
        }
    stale_state.n = 0;
    return err;
}

/* Data written to the program's own pipes and stream socket pairs and not read yet: a
 * pointer sent from one thread to another (or to itself) lies only in the kernel meanwhile.
 * A noted descriptor closed (or another file's) is looked for under another number, and
 * forgotten if none. */
static int stream_roots(void) {
    if (atomic_load(&kroots_state.stream_overflow))
        return every_stream();
    stale_state.n = 0;
    for (unsigned i = 0; i < KROOTS_STREAMS_MAX; i++) {
        int v = atomic_load_explicit(&kroots_state.sfd[i], memory_order_acquire);
        if (v <= 0)
            continue;
        int err = stream_pending(
            v - 1, atomic_load_explicit(&kroots_state.sino[i], memory_order_relaxed),
            atomic_load_explicit(&kroots_state.skind[i], memory_order_relaxed));
        if (err == -ESTALE && stale_state.n < STALE_MAX) {
            stale_state.slot[stale_state.n] = i;
            stale_state.v[stale_state.n++] = v;
        } else if (err == -ESTALE) {
            return every_stream(); /* (too many at once to look for: read every stream) */
        } else if (err) {
            return err;
        }
    }
    if (stale_state.n) {
        int err = moved_streams();
        if (err)
            return err;
    }
    /* (a note that found no room meanwhile: its stream was not read) */
    return atomic_load(&kroots_state.stream_overflow) ? every_stream() : 0;
}

#ifndef MSG_COPY
#define MSG_COPY 040000 /* (Linux's, not in every libc's headers) */
#endif

/* The messages waiting in each System V queue the program sent to, copied without taking
 * them (msgrcv's MSG_COPY, by index), their text's bytes at every offset as values (a message
 * is a record of the program's making: a pointer may lie anywhere in it). A queue removed
 * is forgotten; one this process may not read is passed over (no receive of its own could
 * give a pointer back). 0 or -errno: -ENOTSUP without MSG_COPY (a kernel built without
 * CONFIG_CHECKPOINT_RESTORE), -EMSGSIZE for a message longer than MSGQ_TEXT_MAX. */
static int message_queues(void) {
    for (unsigned i = 0; i < KROOTS_MSGQ_MAX; i++) {
        int v = atomic_load_explicit(&kroots_state.msqid[i], memory_order_acquire);
        if (!v)
            continue;
        struct msqid_ds ds;
        long r = os_syscall(SYS_msgctl, v - 1, IPC_STAT, (long)&ds, 0, 0);
        if (r == -EINVAL || r == -EIDRM) { /* removed: forget it, unless noted again since */
            atomic_compare_exchange_strong(&kroots_state.msqid[i], &v, 0);
            continue;
        }
        if (r == -EACCES)
            continue;
        if (r < 0)
            return (int)r;
        struct fmt g = FMT_INIT(kroots_state.name);
        fmt_str(&g, "message waiting in System V queue ");
        fmt_u64(&g, (uint64_t)(v - 1));
        fmt_char(&g, 0);
        for (unsigned long k = 0; k < ds.msg_qnum; k++) {
            long n = os_syscall(SYS_msgrcv, v - 1, (long)kroots_state.message, MSGQ_TEXT_MAX,
                                (long)k, IPC_NOWAIT | MSG_COPY);
            if (n == -ENOMSG || n == -EIDRM || n == -EINVAL)
                break; /* (fewer now: taken by another process meanwhile, or removed) */
            if (n == -E2BIG)
                return -EMSGSIZE;
            if (n == -ENOSYS)
                return -ENOTSUP;
            if (n < 0)
                return (int)n;
            kroots_state.ncarry = 0;
            stream_bytes(kroots_state.message + sizeof(long), (size_t)n);
        }
        flush(); /* (before the next one's name) */
    }
    return 0;
}

/* The name of a root read from POSIX queue descriptor fd (-1: none open). */
static void queue_name(const char *what, int fd) {
    struct fmt g = FMT_INIT(kroots_state.name);
    fmt_str(&g, what);
    if (fd >= 0) {
        fmt_str(&g, ", descriptor ");
        fmt_u64(&g, (uint64_t)fd);
    }
    fmt_char(&g, 0);
}

static void queued_message(int fd, const unsigned char *p, size_t n, void *arg) {
    (void)arg;
    queue_name("message waiting in a POSIX queue", fd);
    kroots_state.ncarry = 0;
    stream_bytes(p, n);
    flush(); /* (before the next one's name) */
}

static void notification(int fd, uintptr_t v, void *arg) {
    (void)arg;
    queue_name("value of a POSIX queue's notification", fd);
    add_value(v);
    flush();
}

int kroots_for_each(roots_fn fn, void *arg) {
    bool first = !kroots_state.searched;
    if (first) {
        kroots_state.searched = true;
        note_existing();
    }
    kroots_state.fn = fn;
    kroots_state.arg = arg;
    kroots_state.n = 0;
    /* (An epoll instance with nothing registered has no such line: kept.) */
    int err = noted_fdinfo(kroots_state.epfd, KROOTS_EPOLL_MAX,
                           "user data of epoll descriptor ", registration, false);
    if (err)
        return err;
    /* (The first walk reads them anyway: timers made before, or by the system call.) */
    if (first || atomic_load_explicit(&kroots_state.timers, memory_order_relaxed)) {
        struct fmt g = FMT_INIT(kroots_state.name);
        fmt_str(&g, "value of a timer's sigevent");
        fmt_char(&g, 0);
        err = proc_lines("/proc/self/timers", kroots_state.buf, timer_line, NULL);
        if (err == -ENOENT && !atomic_load(&kroots_state.timers))
            err = 0; /* (no such file, CONFIG_CHECKPOINT_RESTORE off: fine until a timer) */
        if (err)
            return err == -ENOENT ? -ENOTSUP : err;
        if (kroots_state.n)
            kroots_note_timer();
        flush();
    }
    err = noted_fdinfo(kroots_state.efd, KROOTS_EVENTFD_MAX, "counter of eventfd descriptor ",
                       counter_line, true);
    if (!err)
        err = message_queues();
    if (!err)
        err = mqlog_for_each(queued_message, notification, NULL);
    if (!err)
        err = queued_signals();
    if (!err)
        err = io_uring_roots();
    if (!err)
        err = stream_roots();
    if (err)
        return err;
    return atomic_load(&kroots_state.overflow) ? -ENOSPC : 0;
}
