/* roots: see roots.h. /proc/self/maps parsing lives here too (maps.h).
 *
 * Which mappings are roots: readable and writable private ones (anonymous memory, [heap],
 * [stack], the data and bss of every loaded object, thread stacks, TLS blocks), and shared
 * anonymous memory (/dev/zero). Not roots: shared file mappings (the canonical heap's memfd
 * among them), [vvar], [vsyscall], device mappings, and liboscar.so's own data and bss (Oscar's
 * metadata: free lists and caches point at free objects, which must not keep them). The
 * caller's exclude ranges (Oscar's other metadata, the protect heap) are cut out.
 *
 * Kinds: ROOT_GLOBAL for a loaded object's writable file mapping and the anonymous bss right
 * after it (name: the object's path); ROOT_STACK for [stack] and each mapping that holds a
 * parked thread's stack pointer, from that pointer (less the red zone) up; ROOT_REGISTERS for
 * each parked thread's signal frame (its registers, vector ones included); ROOT_ALTSTACK for
 * alternate signal stacks; ROOT_MAPPING for everything else. The caller's own stack is
 * reported from its current stack pointer, with its callee-saved registers spilled below it.
 * Static TLS lies in the thread stack mappings (glibc) or in an anonymous mapping (the main
 * thread's): they are scanned as such, so ROOT_TLS is never reported on its own.
 *
 * Only pages that may hold a pointer are reported: private pages present or swapped out
 * (/proc/self/pagemap), shared pages in the page cache (mincore); a page never touched holds
 * none. */
#define _GNU_SOURCE
#include "scan/roots.h"
#include "scan/kroots.h"
#include "scan/maps.h"
#include "scan/world.h"
#include "heap/sample.h"
#include "os/os.h"
#include "os/wtrack.h"
#include "report/fault.h"

#include <errno.h>
#include <setjmp.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* ---- /proc/self/maps */

static uint64_t hex(const char **p) {
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uint64_t)(c - 'a' + 10);
        else
            return v;
    }
}

static uint64_t dec(const char **p) {
    uint64_t v = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++)
        v = v * 10 + (uint64_t)(**p - '0');
    return v;
}

/* line: NUL-terminated, without its newline. */
static bool parse_line(char *line, struct maps_line *m) {
    const char *p = line;
    m->lo = hex(&p);
    if (*p++ != '-')
        return false;
    m->hi = hex(&p);
    if (*p++ != ' ')
        return false;
    for (int i = 0; i < 4; i++)
        m->perms[i] = *p ? *p++ : '-';
    m->perms[4] = 0;
    while (*p == ' ')
        p++;
    m->offset = hex(&p);
    while (*p == ' ')
        p++;
    m->dev_major = (unsigned)hex(&p);
    if (*p == ':')
        p++;
    m->dev_minor = (unsigned)hex(&p);
    while (*p == ' ')
        p++;
    m->inode = dec(&p);
    while (*p == ' ')
        p++;
    m->path = p;
    return m->hi > m->lo;
}

int proc_lines(const char *path, char *buf, int (*fn)(char *line, void *arg), void *arg) {
    long fd = os_open_read_stopped(path);
    if (fd < 0)
        return (int)fd;
    size_t have = 0;
    int stop = 0;
    bool eof = false;
    while (!stop && !eof) {
        long n = os_read((int)fd, buf + have, MAPS_BUF - 1 - have);
        if (n < 0) {
            os_close((int)fd);
            return (int)n;
        }
        eof = n == 0;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while (!stop && ((nl = memchr(line, '\n', have - (size_t)(line - buf))) || eof)) {
            if (!nl) {
                if (line == buf + have)
                    break;
                nl = buf + have; /* last line without a newline */
            }
            *nl = 0;
            stop = fn(line, arg);
            line = nl + 1;
            if (line > buf + have)
                line = buf + have;
        }
        /* Keep the partial last line for the next read. (A line longer than the buffer, a
         * path of ~64 KiB, is dropped.) */
        size_t rest = have - (size_t)(line - buf);
        if (rest == MAPS_BUF - 1)
            rest = 0;
        memmove(buf, line, rest);
        have = rest;
    }
    os_close((int)fd);
    return 0;
}

struct maps_fn {
    int (*fn)(const struct maps_line *m, void *arg);
    void *arg;
};

static int maps_line_fn(char *line, void *arg) {
    struct maps_fn *f = arg;
    struct maps_line m;
    return parse_line(line, &m) ? f->fn(&m, f->arg) : 0;
}

int maps_each(char *buf, int (*fn)(const struct maps_line *m, void *arg), void *arg) {
    struct maps_fn f = {fn, arg};
    return proc_lines("/proc/self/maps", buf, maps_line_fn, &f);
}

/* roots' buffers and flags (the walk itself is walk_state, below; guard is per thread). */
static struct {
    char roots_buf[MAPS_BUF];      /* roots_for_each: the marking thread, one walk at a time */
    /* The shared memory the last walk of it reported (the marker; roots_reread_shared) */
    struct root_range shared[ROOTS_SHARED_MAX];
    size_t nshared;
    bool shared_overflow;
    bool reporting_shared; /* the range fn is called for is shared memory */
    /* touched_pages, during a walk (as roots_buf): one byte per page (bit 0), and
     * /proc/self/pagemap's words */
    unsigned char mincore_vec[4096];
    uint64_t pagemap_vec[512];
    /* hidden_run, during a walk: memory the program cannot read now, read through
     * /proc/self/mem; and PAGEMAP_SCAN's runs of its present pages */
    uintptr_t hidden_buf[8192];
    struct wtrack_run present[64];
    atomic_bool hook_set;          /* the fault hook is registered: atomic, set once */
    atomic_bool switches_context;  /* roots_note_context_switch: set once, any thread */
    /* roots_note_user_stack's ranges: an entry claimed by fetch-add, hi stored, then lo (a
     * reader skips lo 0); past ROOTS_USER_STACKS, user_stacks_lost: no such mapping cut. */
    struct {
        _Atomic uintptr_t lo, hi;
    } user_stacks[ROOTS_USER_STACKS];
    _Atomic unsigned n_user_stacks;
    atomic_bool user_stacks_lost;
    atomic_bool seals;             /* roots_note_sealed: set once, any thread */
} roots_state;

/* ---- Roots */

struct walk {
    roots_fn fn;
    void *arg;
    const struct root_range *exclude;
    size_t nexclude;
    uintptr_t self_sp;           /* the caller's stack pointer */
    uintptr_t self_tp;           /* ... and its thread pointer */
    bool self_main;              /* ... the caller is the main thread */
    long main_tid;               /* the main thread's number (the process's) */
    uintptr_t below_hi;          /* the end of the line before, and was it a guard (---)? */
    bool below_guard;
    uintptr_t own_lo;            /* a static of liboscar.so: its mappings are not roots */
    uintptr_t own_end;           /* the end of liboscar.so's data, bss included (page) */
    char own_path[256];          /* liboscar.so's path once seen */
    char last_path[256];         /* the file of the previous mapping, if it ended at last_end */
    uintptr_t last_end;
    bool last_own;
    bool shared;    /* the mapping being reported is shared memory */
    int pagemap_fd; /* /proc/self/pagemap, or -1 */
    bool hidden;    /* ... memory the program cannot read now (PROT_NONE) */
    bool copied_only; /* ... a file's, sealed: only the program's copies of its pages */
    int prot;       /* ... its protection (PROT_*), as /proc/self/maps says */
    int mem_fd;     /* /proc/self/mem once such memory had pages (-1: not yet; -2: refused) */
    int err;        /* a hidden mapping's pages could not be read: -errno */
    unsigned which; /* ROOTS_*: the kinds of memory reported */
    uint64_t rings; /* the io_uring rings mapped: a digest of their inodes (kroots_rings) */
    char name[64];
    /* Cursors into order_state's lists: the entries before them lie below every line to
     * come. */
    size_t sp_at, regs_at, alt_at;
};

/* The parked threads (world_thread_at's indices) in address order, for the walk (the
 * world is stopped: one walk at a time): by stack pointer, by saved registers, by alternate
 * stack (only those that have one). The lines come in address order, so each line looks
 * only at the threads whose addresses it holds: with every thread looked at for every line,
 * 400 threads (800 lines of stacks and guards) cost a mark ~1 ms. */
static struct {
    uint32_t by_sp[WORLD_MAX], by_regs[WORLD_MAX], by_alt[WORLD_MAX]; /* order_threads */
    size_t n, nalt; /* entries of by_sp and by_regs, and of by_alt */
} order_state;

/* Which pages of a mapping touched_pages reports. */
enum touch {
    TOUCH_PRIVATE, /* present or swapped out */
    TOUCH_SHARED,  /* in the page cache */
    TOUCH_COPIED,  /* ... of a private file mapping: only the program's own copies (written) */
};

/* Which pages of [first, first + pages * 4 KiB) may hold a pointer, one byte each in
 * mincore_vec (bit 0). Private memory: pages present or swapped out (/proc/self/pagemap at
 * pagemap_fd): a page never touched holds nothing, but a swapped-out page may hold the only
 * pointer, and mincore would call it absent; a page with a guard marker (bit 58, Linux 6.15+:
 * a sampled object's freed page, heap/sample.h) holds nothing and would fault. Copied: the
 * same, less the file's own pages (bit 61), which hold what the file holds. Shared memory
 * (or no pagemap_fd, -1): pages in the page cache (mincore), where a page written through
 * another mapping or by write() lies. 0, or -errno. */
static int touched_pages(int pagemap_fd, enum touch touch, uintptr_t first, size_t pages) {
    if (touch == TOUCH_SHARED || pagemap_fd < 0)
        return os_mincore((void *)first, pages << OSCAR_PAGE_SHIFT, roots_state.mincore_vec);
    for (size_t done = 0; done < pages;) {
        size_t n = pages - done < 512 ? pages - done : 512;
        uint64_t off = ((first >> OSCAR_PAGE_SHIFT) + done) * sizeof(uint64_t);
        long got = os_pread(pagemap_fd, roots_state.pagemap_vec, n * sizeof(uint64_t), off);
        if (got < (long)(n * sizeof(uint64_t)))
            return os_mincore((void *)first, pages << OSCAR_PAGE_SHIFT,
                              roots_state.mincore_vec);
        uint64_t file_page = touch == TOUCH_COPIED ? 1ULL << 61 : 0;
        for (size_t i = 0; i < n; i++) /* (a guard marker, bit 58, looks swapped out) */
            roots_state.mincore_vec[done + i] =
                (unsigned char)((roots_state.pagemap_vec[i] >> 62) & 3 &&
                                !((roots_state.pagemap_vec[i] >> 58) & 1) &&
                                !(roots_state.pagemap_vec[i] & file_page));
        done += n;
    }
    return 0;
}

/* Calls run(a, b, ctx) for each run of pages of [lo, hi) that may hold a pointer
 * (touched_pages), cut to [lo, hi). */
static void touched_runs(int pagemap_fd, enum touch touch, uintptr_t lo, uintptr_t hi,
                         void (*run)(uintptr_t a, uintptr_t b, void *ctx), void *ctx) {
    uintptr_t first = lo & ~(OSCAR_PAGE - 1);
    while (first < hi) {
        size_t pages = (align_up(hi, OSCAR_PAGE) - first) >> OSCAR_PAGE_SHIFT;
        if (pages > sizeof roots_state.mincore_vec)
            pages = sizeof roots_state.mincore_vec;
        uintptr_t end = first + (pages << OSCAR_PAGE_SHIFT);
        if (touched_pages(pagemap_fd, touch, first, pages) != 0) {
            first = end; /* unmapped meanwhile: nothing to read */
            continue;
        }
        for (size_t i = 0; i < pages;) {
            if (!(roots_state.mincore_vec[i] & 1)) {
                i++;
                continue;
            }
            size_t j = i + 1;
            while (j < pages && (roots_state.mincore_vec[j] & 1))
                j++;
            uintptr_t a = first + (i << OSCAR_PAGE_SHIFT), b = first + (j << OSCAR_PAGE_SHIFT);
            if (a < lo)
                a = lo;
            if (b > hi)
                b = hi;
            if (a < b)
                run(a, b, ctx);
            i = j;
        }
        first = end;
    }
}

struct resident_ctx {
    struct walk *w;
    enum root_kind kind;
    const char *name;
};

static void resident_run(uintptr_t a, uintptr_t b, void *ctx) {
    struct resident_ctx *c = ctx;
    roots_state.reporting_shared = c->w->shared;
    c->w->fn(a, b, c->kind, c->name, c->w->arg);
    roots_state.reporting_shared = false;
}

/* Memory the program cannot read now (PROT_NONE: a collector's or a JIT's page, protected
 * while not in use) holds what it held, and the program reads it once it makes it readable
 * again: its pages are read through /proc/self/mem (which reads what the process's own
 * accesses cannot), a buffer of Oscar's at a time, and reported as that buffer. */
static void hidden_run(uintptr_t a, uintptr_t b, void *ctx) {
    struct resident_ctx *c = ctx;
    struct walk *w = c->w;
    if (w->err)
        return;
    if (w->mem_fd == -1) {
        long fd = os_open_read_stopped("/proc/self/mem");
        w->mem_fd = fd >= 0 ? (int)fd : -2; /* (asked once a walk) */
    }
    if (w->mem_fd == -2) {
        /* A process made non-dumpable may not open its own (EACCES): the run is made
         * readable for the read, then given its protection back. The program's threads are
         * stopped (or this is a snapshot's child, a copy), so none sees it. */
        long r = os_syscall(SYS_mprotect, (long)a, (long)(b - a), PROT_READ, 0, 0);
        if (r == 0) {
            w->fn(a, b, c->kind, c->name, w->arg);
            r = os_syscall(SYS_mprotect, (long)a, (long)(b - a), w->prot, 0, 0);
        }
        if (r != 0)
            w->err = (int)r;
        return;
    }
    uintptr_t *buf = roots_state.hidden_buf;
    while (a < b) {
        size_t n = b - a < sizeof roots_state.hidden_buf ? b - a : sizeof roots_state.hidden_buf;
        long got = os_pread(w->mem_fd, buf, n, a);
        if (got <= 0) {
            w->err = got < 0 ? (int)got : -EIO;
            return;
        }
        w->fn((uintptr_t)buf, (uintptr_t)buf + (size_t)got, c->kind, c->name, w->arg);
        a += (uintptr_t)got;
    }
}

/* A hidden mapping over HIDDEN_PAGEMAP_MAX (a reservation, often terabytes) is asked for its
 * present pages with PAGEMAP_SCAN; without it (Linux < 6.7, or no pagemap), it is not read. */
#define HIDDEN_PAGEMAP_MAX (64UL << 20)
#define SMALL_STACK (64UL << 10) /* a stack read without asking pagemap (resident) */

/* Reports through run the pages of [lo, hi) present or swapped out (w->copied_only: only
 * the program's copies) with PAGEMAP_SCAN; returns where it stopped: hi, or where the kernel
 * refused (lo: Linux < 6.7, or no pagemap). */
static uintptr_t scan_present(struct walk *w, uintptr_t lo, uintptr_t hi,
                              void (*run)(uintptr_t a, uintptr_t b, void *ctx),
                              struct resident_ctx *c) {
    if (w->pagemap_fd < 0)
        return lo; /* (a process that may not open its own pagemap) */
    uintptr_t from = lo;
    while (from < hi && !w->err) {
        uintptr_t at = from;
        long n = wtrack_present(w->pagemap_fd, &from, hi, roots_state.present,
                                sizeof roots_state.present / sizeof roots_state.present[0],
                                w->copied_only);
        if (n < 0)
            return at;
        for (long k = 0; k < n; k++)
            run((uintptr_t)roots_state.present[k].lo, (uintptr_t)roots_state.present[k].hi, c);
    }
    return hi;
}

static enum touch touch_of(const struct walk *w) {
    return w->shared ? TOUCH_SHARED : w->copied_only ? TOUCH_COPIED : TOUCH_PRIVATE;
}

static void hidden(struct walk *w, uintptr_t lo, uintptr_t hi, struct resident_ctx *c) {
    if (hi - lo > HIDDEN_PAGEMAP_MAX && !w->shared)
        lo = scan_present(w, lo, hi, hidden_run, c);
    /* Without PAGEMAP_SCAN a big reservation is not read (README, Limitations); the
     * program's copies of a file's pages are, a pagemap word a page. */
    if (lo < hi && (hi - lo <= HIDDEN_PAGEMAP_MAX || w->shared || w->copied_only))
        touched_runs(w->pagemap_fd, touch_of(w), lo, hi, hidden_run, c); /* (no pagemap: mincore) */
}

/* Reports the pages of [lo, hi) that may hold a pointer, in runs. */
static void resident(struct walk *w, uintptr_t lo, uintptr_t hi, enum root_kind kind,
                     const char *name) {
    struct resident_ctx c = {w, kind, name};
    if (w->shared) { /* (reported only when the walk reports shared memory) */
        if (roots_state.nshared < ROOTS_SHARED_MAX && !w->hidden)
            roots_state.shared[roots_state.nshared++] = (struct root_range){lo, hi};
        else
            roots_state.shared_overflow = true;
    }
    if (w->hidden) {
        hidden(w, lo, hi, &c);
        return;
    }
    /* A parked thread's stack from its stack pointer up, or its saved registers, a few KiB:
     * every page of it was touched, and asking pagemap cost a system call a thread (with 400
     * threads waiting, ~0.5 ms a mark). (The reader guards its reads all the same.) */
    if ((kind == ROOT_STACK || kind == ROOT_REGISTERS) && hi - lo <= SMALL_STACK &&
        !w->copied_only && !w->shared) {
        resident_run(lo, hi, &c);
        return;
    }
    /* (A big file mapped read-only: its copied pages found in one call, not a word a page.) */
    if (w->copied_only && hi - lo > HIDDEN_PAGEMAP_MAX)
        lo = scan_present(w, lo, hi, resident_run, &c);
    if (lo < hi)
        touched_runs(w->pagemap_fd, touch_of(w), lo, hi, resident_run, &c);
}

struct private_ctx {
    void (*fn)(uintptr_t lo, uintptr_t hi, void *arg);
    void *arg;
};

static void private_run(uintptr_t a, uintptr_t b, void *ctx) {
    struct private_ctx *c = ctx;
    roots_read_guarded(c->fn, a, b, c->arg);
}

int roots_pagemap_open(void) {
    long fd = os_open_read_stopped("/proc/self/pagemap");
    return fd >= 0 ? (int)fd : -1;
}

void roots_read_private(int pagemap_fd, void (*fn)(uintptr_t lo, uintptr_t hi, void *arg),
                        uintptr_t lo, uintptr_t hi, void *arg) {
    if (pagemap_fd < 0) { /* (mincore would miss swapped-out pages: read them all) */
        roots_read_guarded(fn, lo, hi, arg);
        return;
    }
    struct private_ctx c = {fn, arg};
    touched_runs(pagemap_fd, TOUCH_PRIVATE, lo, hi, private_run, &c);
}

/* Cuts the exclude ranges out of [lo, hi), then reports what is left. */
static void emit(struct walk *w, uintptr_t lo, uintptr_t hi, enum root_kind kind,
                 const char *name) {
    for (size_t i = 0; i < w->nexclude && lo < hi; i++) {
        uintptr_t xl = w->exclude[i].lo, xh = w->exclude[i].hi;
        if (xh <= lo || xl >= hi)
            continue;
        if (xl > lo)
            emit(w, lo, xl, kind, name); /* (the ranges before i were already cut from it) */
        lo = xh;
    }
    if (lo < hi)
        resident(w, lo, hi, kind, name);
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void copy_path(char *dst, const char *src) {
    size_t n = strlen(src);
    if (n > 255)
        n = 255;
    memcpy(dst, src, n);
    dst[n] = 0;
}

static int root_line_of(const struct maps_line *m, struct walk *w);

enum thread_key { KEY_SP, KEY_REGS, KEY_ALT };

static uintptr_t key_of(uint32_t i, enum thread_key k) {
    const struct world_thread *t = world_thread_at(i);
    return k == KEY_SP ? t->sp : k == KEY_REGS ? t->regs_lo : t->altstack_lo;
}

static void sift(uint32_t *a, size_t root, size_t n, enum thread_key k) {
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && key_of(a[child + 1], k) > key_of(a[child], k))
            child++;
        if (key_of(a[root], k) >= key_of(a[child], k))
            return;
        uint32_t x = a[root];
        a[root] = a[child];
        a[child] = x;
    }
}

/* Heap sort: no allocation, no recursion, O(n log n) however the threads lie. */
static void sort_threads(uint32_t *a, size_t n, enum thread_key k) {
    for (size_t i = n / 2; i-- > 0;)
        sift(a, i, n, k);
    for (size_t end = n; end-- > 1;) {
        uint32_t x = a[0];
        a[0] = a[end];
        a[end] = x;
        sift(a, 0, end, k);
    }
}

/* Moves *at past the entries of a (sorted by k) whose key lies below lo; returns it. */
static size_t skip_below(const uint32_t *a, size_t n, size_t *at, enum thread_key k,
                         uintptr_t lo) {
    while (*at < n && key_of(a[*at], k) < lo)
        (*at)++;
    return *at;
}

static void order_threads(void) {
    size_t n = world_count();
    order_state.n = order_state.nalt = 0;
    for (size_t i = 0; i < n && i < WORLD_MAX; i++) {
        const struct world_thread *t = world_thread_at(i);
        order_state.by_sp[order_state.n] = order_state.by_regs[order_state.n] = (uint32_t)i;
        order_state.n++;
        if (t->altstack_hi > t->altstack_lo)
            order_state.by_alt[order_state.nalt++] = (uint32_t)i;
    }
    sort_threads(order_state.by_sp, order_state.n, KEY_SP);
    sort_threads(order_state.by_regs, order_state.n, KEY_REGS);
    sort_threads(order_state.by_alt, order_state.nalt, KEY_ALT);
}

/* The anonymous memory after liboscar.so's file is its bss up to own_end only: past it lies
 * the program's memory that the kernel merged into the bss's line or put right after it (a
 * fresh mmap that fell into a hole there), a root like any anonymous mapping. */
static int root_line(const struct maps_line *m, void *argv) {
    struct walk *w = argv;
    int r;
    if (m->path[0] == 0 && w->last_own && m->lo == w->last_end && m->hi > w->own_end) {
        struct maps_line rest = *m;
        rest.lo = m->lo > w->own_end ? m->lo : w->own_end;
        w->last_path[0] = 0;
        w->last_own = false;
        r = root_line_of(&rest, w);
    } else {
        r = root_line_of(m, w);
    }
    w->below_hi = m->hi;
    w->below_guard = m->perms[0] == '-' && m->perms[1] == '-' && m->perms[2] == '-';
    return r;
}

/* A flag set once for good, from a wrapper on the program's path: stored only the first
 * time (no cache line written back and forth on every call). */
static void set_once(atomic_bool *flag) {
    if (!atomic_load_explicit(flag, memory_order_relaxed))
        atomic_store(flag, true);
}

void roots_note_sealed(void) { set_once(&roots_state.seals); }

void roots_note_context_switch(void) { set_once(&roots_state.switches_context); }

void roots_note_user_stack(uintptr_t lo, uintptr_t hi) {
    unsigned n = atomic_load_explicit(&roots_state.n_user_stacks, memory_order_acquire);
    for (unsigned i = 0; i < n && i < ROOTS_USER_STACKS; i++) /* (an attr used again) */
        if (atomic_load_explicit(&roots_state.user_stacks[i].lo, memory_order_relaxed) == lo &&
            atomic_load_explicit(&roots_state.user_stacks[i].hi, memory_order_relaxed) == hi)
            return;
    unsigned i = atomic_fetch_add(&roots_state.n_user_stacks, 1);
    if (i >= ROOTS_USER_STACKS) {
        set_once(&roots_state.user_stacks_lost);
        return;
    }
    atomic_store(&roots_state.user_stacks[i].hi, hi);
    atomic_store(&roots_state.user_stacks[i].lo, lo ? lo : 1);
}

/* Does [lo, hi) hold a stack the program gave a thread (or might: some were not noted)? */
static bool holds_user_stack(uintptr_t lo, uintptr_t hi) {
    if (atomic_load_explicit(&roots_state.user_stacks_lost, memory_order_relaxed))
        return true;
    unsigned n = atomic_load_explicit(&roots_state.n_user_stacks, memory_order_acquire);
    for (unsigned i = 0; i < n && i < ROOTS_USER_STACKS; i++) {
        uintptr_t l = atomic_load_explicit(&roots_state.user_stacks[i].lo, memory_order_acquire),
                  h = atomic_load_explicit(&roots_state.user_stacks[i].hi, memory_order_relaxed);
        if (l && l < hi && h > lo)
            return true;
    }
    return false;
}

/* May a thread's stack pointer in m cut the dead stack below it? Only where m is that
 * thread's stack and nothing else: the main [stack], or a stack glibc made for a thread (a
 * guard right below it, the thread's TCB at its top: tp inside), and only in a program that
 * never switched contexts. Elsewhere memory below the stack pointer may be live: another
 * coroutine's stack carved from the same mapping, a mapping of the program's the kernel
 * merged with the stack, or the frames of a context suspended below a coroutine's stack
 * that is an array of the thread's (protect_shape_coroutine, onstack). */
static bool stack_of(const struct maps_line *m, const struct walk *w, uintptr_t tp, bool main) {
    if (atomic_load_explicit(&roots_state.switches_context, memory_order_relaxed))
        return false; /* (below a coroutine's stack pointer may lie live frames) */
    /* The main [stack] is cut by the main thread only: another thread's stack may be an
     * array in a frame of main's, with main's live frames below it (main meanwhile on its
     * alternate stack: shapes_stack_cut "inmain"). */
    if (starts_with(m->path, "[stack"))
        return main;
    return w->below_guard && w->below_hi == m->lo && tp >= m->lo && tp < m->hi &&
           !holds_user_stack(m->lo, m->hi);
}

/* A device's memory mapped (a character or block device under /dev/). Regular files there
 * are memory like any other (hugetlbfs at /dev/hugepages; a file of the program's in /dev):
 * all of /dev was left out, and an object only such a file held was handed out again. A
 * deleted file is read; a path that does not resolve otherwise is taken for a device. */
static bool device_memory(const struct maps_line *m) {
    uint32_t mode;
    if (!starts_with(m->path, "/dev/") || starts_with(m->path, "/dev/zero") ||
        starts_with(m->path, "/dev/shm/"))
        return false;
    if (os_stat_mode(m->path, &mode) != 0) { /* (gone, or out of reach: a chroot) */
        size_t n = strlen(m->path);
        return n < 10 || strcmp(m->path + n - 10, " (deleted)") != 0;
    }
    return S_ISCHR(mode) || S_ISBLK(mode);
}

static int root_line_of(const struct maps_line *m, struct walk *w) {
    /* A file mapping that may be a loaded object's (whose bss may follow it): private. A
     * shared one is memory of the program's (/dev/zero for MAP_SHARED | MAP_ANONYMOUS, a
     * memfd, /dev/shm): what follows it is no object's bss, nor are its read-only pages. */
    bool file = m->path[0] == '/' && m->inode != 0 && m->perms[3] == 'p' &&
                !starts_with(m->path, "/dev/zero");
    bool follows_file = m->lo == w->last_end && m->path[0] == 0 && w->last_path[0];
    bool own = (m->lo <= w->own_lo && w->own_lo < m->hi) ||
               (file && w->own_path[0] && strcmp(m->path, w->own_path) == 0) ||
               (follows_file && w->last_own);
    if (own && file && !w->own_path[0])
        copy_path(w->own_path, m->path);
    /* Remember the object this mapping belongs to, for the anonymous bss after it. */
    if (file) {
        copy_path(w->last_path, m->path);
        w->last_end = m->hi;
        w->last_own = own;
    } else if (follows_file) {
        w->last_end = m->hi; /* (a second anonymous piece of the same bss) */
    } else {
        w->last_path[0] = 0;
        w->last_own = false;
    }
    if (own)
        return 0;
    if (strcmp(m->path, "anon_inode:[io_uring]") == 0)
        w->rings = w->rings * 1000003 + m->inode + 1;
    /* Not readable (PROT_NONE) or read-only: the program may have sealed a pointer there
     * and read it back once it makes the memory readable again. But the sample pool's
     * address space holds nothing (a freed sampled object's page is revoked, its contents
     * the program's no more). Of a private file mapping (a loaded object's text, constants
     * and gaps, or a file of the program's) only the pages the program wrote, its own copies,
     * can hold a pointer (protect_shape_readonly file): the file's own pages hold what the
     * file holds; and only once the program has sealed memory itself (roots_note_sealed:
     * before, they are the loader's relocations). Of a shared one, sealed, nothing is read
     * unless it is memory rather than a file on disk (a memfd, POSIX or System V shared
     * memory, shared anonymous memory, memfd_secret's): a file's content is the file's
     * (README, Limitations). Anonymous memory is read wherever it lies, after an object's
     * bss too (protect_shape_after_bss libc none). */
    w->hidden = m->perms[0] != 'r';
    w->prot = (m->perms[1] == 'w' ? PROT_WRITE : 0) | (m->perms[2] == 'x' ? PROT_EXEC : 0);
    bool sealed = w->hidden || m->perms[1] != 'w';
    if (w->hidden && m->lo >= sample_reserved_lo && m->hi <= sample_reserved_hi)
        return 0;
    w->copied_only = sealed && file;
    if (w->copied_only && !atomic_load_explicit(&roots_state.seals, memory_order_relaxed))
        return 0;
    if (sealed && !file && m->path[0] == '/' && !starts_with(m->path, "/memfd:") &&
        !starts_with(m->path, "/dev/shm/") && !starts_with(m->path, "/SYSV") &&
        !starts_with(m->path, "/dev/zero") && !starts_with(m->path, "/secretmem"))
        return 0;
    /* Shared memory of the program's own is a root (a memfd, POSIX shm in /dev/shm,
     * MAP_SHARED | MAP_ANONYMOUS as /dev/zero); Oscar's own memfds (the canonical heap, the
     * arenas) are not. Reading past a file's end faults: the reads are guarded. */
    if (starts_with(m->path, "/memfd:oscar-") && os_memfd_ours(m->inode))
        return 0;
    if (m->path[0] == '[' && !starts_with(m->path, "[heap]") && !starts_with(m->path, "[stack") &&
        !starts_with(m->path, "[anon"))
        return 0; /* [vvar], [vsyscall], [vdso], [uprobes]... */
    if (device_memory(m))
        return 0; /* reading it may have effects */

    w->shared = m->perms[3] == 's';
    if (!(w->which & (w->shared ? ROOTS_SHARED : ROOTS_PRIVATE)))
        return 0;
    /* A parked thread's stack is read from its sp (less the red zone) up, its signal frame
     * apart; below lies dead stack. Only a mapping that is nothing but a stack is cut so: the
     * main [stack], or an anonymous mapping that is not a loaded object's bss. A stack pointer
     * inside an alternate signal stack cuts only that altstack, and a stack the program placed
     * among its globals (an altstack or a thread stack in bss) is read whole: the globals
     * around it are roots too. (An altstack inside a larger mapping is reported twice.) */
    bool plain_stack = starts_with(m->path, "[stack") ||
                       (!file && !follows_file && m->path[0] != '/');
    bool stack = starts_with(m->path, "[stack");
    uintptr_t from = m->lo;
    bool cut = false; /* from is a stack pointer's (less the red zone) */
    const uint32_t *by_regs = order_state.by_regs, *by_alt = order_state.by_alt,
                   *by_sp = order_state.by_sp;
    size_t n = order_state.n, nalt = order_state.nalt;
    /* The threads whose saved registers lie in this line. */
    for (size_t k = skip_below(by_regs, n, &w->regs_at, KEY_REGS, m->lo); k < n; k++) {
        const struct world_thread *t = world_thread_at(by_regs[k]);
        if (t->regs_lo >= m->hi)
            break;
        emit(w, t->regs_lo, t->regs_hi < m->hi ? t->regs_hi : m->hi, ROOT_REGISTERS,
             "registers");
    }
    /* Those whose alternate stack meets it (one may span several lines: the cursor passes
     * only those that end below this one). */
    while (w->alt_at < nalt && world_thread_at(by_alt[w->alt_at])->altstack_hi <= m->lo)
        w->alt_at++;
    for (size_t k = w->alt_at; k < nalt; k++) {
        const struct world_thread *t = world_thread_at(by_alt[k]);
        if (t->altstack_lo >= m->hi)
            break;
        if (t->altstack_hi <= m->lo)
            continue;
        bool on_alt = t->sp >= t->altstack_lo && t->sp < t->altstack_hi;
        uintptr_t lo = t->altstack_lo > m->lo ? t->altstack_lo : m->lo;
        uintptr_t hi = t->altstack_hi < m->hi ? t->altstack_hi : m->hi;
        if (on_alt && t->sp - 128 > lo)
            lo = t->sp - 128 < hi ? t->sp - 128 : hi;
        emit(w, lo, hi, ROOT_ALTSTACK, "altstack");
    }
    /* Those whose stack pointer lies in it (where two would cut it, the lower one does). */
    for (size_t k = skip_below(by_sp, n, &w->sp_at, KEY_SP, m->lo); k < n; k++) {
        const struct world_thread *t = world_thread_at(by_sp[k]);
        if (t->sp >= m->hi)
            break;
        bool on_alt = t->sp >= t->altstack_lo && t->sp < t->altstack_hi;
        if (!on_alt && plain_stack && stack_of(m, w, t->tp, t->tid == w->main_tid)) {
            uintptr_t at = t->sp - 128 > m->lo ? t->sp - 128 : m->lo;
            from = cut && from < at ? from : at;
            stack = cut = true;
        }
    }
    if (w->self_sp >= m->lo && w->self_sp < m->hi && plain_stack &&
        stack_of(m, w, w->self_tp, w->self_main)) {
        from = cut && from < w->self_sp ? from : w->self_sp;
        stack = cut = true;
    }
    if (stack) {
        emit(w, from, m->hi, ROOT_STACK, m->path[0] ? m->path : "thread stack");
        return 0;
    }
    if (file)
        emit(w, m->lo, m->hi, ROOT_GLOBAL, m->path);
    else if (follows_file)
        emit(w, m->lo, m->hi, ROOT_GLOBAL, w->last_path);
    else
        emit(w, m->lo, m->hi, ROOT_MAPPING, m->path[0] ? m->path : "anonymous");
    return 0;
}

/* In liboscar.so's .data (initialised): finds our own writable mappings. */
static volatile uintptr_t own_marker = 1;
/* The linker's end of liboscar.so's data and bss (its own, bound inside the library). */
extern char oscar_data_end[] __asm__("_end") __attribute__((visibility("hidden")));
static struct walk walk_state; /* (the world is stopped: one walk at a time) */

__attribute__((noinline)) int roots_for_each_of(unsigned which, roots_fn fn, void *arg,
                                                const struct root_range *exclude,
                                                size_t nexclude, uintptr_t stack_from) {
    /* Spill the callee-saved registers into this frame, below the caller's: they may hold
     * the only copy of a pointer, and the caller's stack is reported from here up. */
    __builtin_unwind_init();
    jmp_buf regs;
    setjmp(regs);
    struct walk *w = &walk_state;
    memset(w, 0, sizeof *w);
    w->fn = fn;
    w->arg = arg;
    w->exclude = exclude;
    w->nexclude = nexclude;
    w->which = which;
    w->self_sp = stack_from ? stack_from : (uintptr_t)&regs;
    w->self_tp = os_thread_pointer();
    w->main_tid = os_getpid();
    w->self_main = os_gettid() == w->main_tid;
    w->own_lo = (uintptr_t)&own_marker;
    w->own_end = align_up((uintptr_t)oscar_data_end, (uintptr_t)1 << OSCAR_PAGE_SHIFT);
    int err = 0;
    if (which & ROOTS_SHARED) {
        roots_state.nshared = 0;
        roots_state.shared_overflow = false;
    }
    if (which & (ROOTS_PRIVATE | ROOTS_SHARED)) {
        order_threads();
        w->pagemap_fd = roots_pagemap_open();
        w->mem_fd = -1;
        err = maps_each(roots_state.roots_buf, root_line, w);
        if (!err)
            err = w->err;
        if (!err)
            kroots_rings(w->rings);
        if (w->pagemap_fd >= 0)
            os_close(w->pagemap_fd);
        if (w->mem_fd >= 0)
            os_close(w->mem_fd);
    }
    if (!err && (which & ROOTS_KERNEL)) {
        err = kroots_for_each(fn, arg);
        /* The kernel keeps each parked thread's alternate stack's base: a block the program
         * freed while it is still registered gets the next signal's frame, ours among them
         * (protect_shape_freed_altstack). Read from the thread's record itself: a thread
         * parked on that altstack has its saved registers in the block, no root. */
        for (size_t i = 0, n = world_count(); !err && i < n; i++) {
            const struct world_thread *t = world_thread_at(i);
            if (t->altstack_lo)
                fn((uintptr_t)&t->altstack_lo, (uintptr_t)&t->altstack_lo + sizeof(uintptr_t),
                   ROOT_ALTSTACK, "altstack", arg);
            fn((uintptr_t)t->kheld, (uintptr_t)(t->kheld + OS_KHELD), ROOT_KERNEL,
               "kept by the kernel for a thread", arg);
        }
        /* The kernel keeps addresses for each thread and writes through them later (its id
         * cleared at exit, its robust futex list, its rseq area; os/kheld.h): the parked
         * threads' were read as they parked, the calling thread's (a stopped mark's, or
         * strict mode's proof) are read here. */
        uintptr_t own[OS_KHELD];
        os_kheld_get(own);
        if (!err)
            fn((uintptr_t)own, (uintptr_t)(own + OS_KHELD), ROOT_KERNEL,
               "kept by the kernel for this thread", arg);
    }
    __asm__ volatile("" : : "r"(&regs) : "memory");
    return err;
}

bool roots_reporting_shared(void) { return roots_state.reporting_shared; }

int roots_reread_shared(roots_fn fn, void *arg) {
    if (roots_state.shared_overflow)
        return -ENOSPC;
    struct walk w = {.fn = fn, .arg = arg, .shared = true, .pagemap_fd = -1, .which = ROOTS_SHARED};
    struct resident_ctx c = {&w, ROOT_MAPPING, "shared memory"};
    for (size_t i = 0; i < roots_state.nshared; i++)
        touched_runs(-1, TOUCH_SHARED, roots_state.shared[i].lo, roots_state.shared[i].hi,
                     resident_run, &c);
    return 0;
}

int roots_for_each(roots_fn fn, void *arg, const struct root_range *exclude, size_t nexclude,
                   uintptr_t stack_from) {
    /* (roots_for_each_of spills the callee-saved registers in its own frame, below this.) */
    return roots_for_each_of(ROOTS_ALL, fn, arg, exclude, nexclude, stack_from);
}

/* ---- Guarded reads */

static __thread sigjmp_buf *guard __attribute__((tls_model("initial-exec")));
static __thread uintptr_t guard_fault_at __attribute__((tls_model("initial-exec")));

static void recover(void *uc) {
    sigjmp_buf *jb = guard;
    if (jb) {
        guard = NULL;
        guard_fault_at = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_CR2];
        /* The fault handler holds the park signals back (fault_hold): as they were before. */
        uint64_t open = world_park_mask() & ~((ucontext_t *)uc)->uc_sigmask.__val[0];
        if (open)
            os_unblock_signals(open);
        siglongjmp(*jb, 1);
    }
}

int roots_read_guarded(void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), uintptr_t lo,
                       uintptr_t hi, void *arg) {
    if (!atomic_load_explicit(&roots_state.hook_set, memory_order_acquire)) {
        fault_set_recover_hook(recover);
        atomic_store(&roots_state.hook_set, true);
    }
    sigjmp_buf jb;
    /* A page that faults is left out, and the read goes on after it: a guard marker in a
     * shared mapping (which mincore counts as there), or a page the program's userfaultfd
     * answers with SIGBUS, stopped the whole range there, and a pointer on the next page
     * kept nothing (tests/programs/protect_shape_fault_page.c). (volatile: kept across the
     * jump.) */
    volatile uintptr_t from = lo;
    volatile int err = 0;
    /* No mask saved: the fault handler blocks only the park signal (SA_NODEFER), which
     * recover puts back as it was, so the mask after the jump is the one before the read,
     * without a system call per range. */
    if (sigsetjmp(jb, 0)) {
        uintptr_t at = guard_fault_at, next = (at | (OSCAR_PAGE - 1)) + 1;
        err = -EFAULT;
        if (at < from || at >= hi || next <= from || next >= hi)
            return err; /* (not a page of the range, or its last: nothing more to read) */
        from = next;
    }
    guard = &jb;
    __asm__ volatile("" ::: "memory");
    fn(from, hi, arg);
    __asm__ volatile("" ::: "memory");
    guard = NULL;
    return err;
}
