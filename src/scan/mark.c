/* mark: see mark.h.
 *
 * One pass, no work list: quarantined objects were zeroed when freed, so they hold no
 * pointers and are never scanned; every live object is a root. Pass 1 (world stopped): roots,
 * then every page: LIVE objects are scanned, QUAR ones become CAND (candidates); a word that
 * points into a QUAR or CAND object makes it MARKED. Pass 2 (world running again): CAND
 * objects become FREED and go back to their pages; MARKED ones go back to QUAR ("still
 * referenced"). Objects freed during pass 2 are QUAR, not CAND: they wait for the next mark.
 *
 * Pass 1 takes no lock: a parked thread may hold any of them. It only reads descriptors
 * published with release stores, and writes slot states no other thread writes while the
 * world is stopped. */
#define _GNU_SOURCE
#include "scan/mark.h"
#include "scan/roots.h"
#include "scan/team.h"
#include "scan/world.h"
#include "scan/words.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "base/options.h"
#include "base/stats.h"
#include "heap/protect_heap.h"
#include "report/unwind.h"
#include "os/cowchild.h"
#include "os/giveway.h"
#include "os/os.h"
#include "os/ownthread.h"
#include "os/wtrack.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>

/* The world and roots modules may be missing from a build: then no mark ever releases. */
#pragma weak world_stop
#pragma weak world_resume
#pragma weak roots_for_each
#pragma weak roots_read_guarded
#pragma weak world_park_signal

/* This thread is marking (a signal handler that forks may interrupt it: mark_fork_prepare). */
static __thread int in_mark __attribute__((tls_model("initial-exec")));
/* Bytes this thread read in the current mark, not yet added to mark_state.scanned (each of
 * the threads that share a mark: scan/team.h). */
static __thread uint64_t scanned_here __attribute__((tls_model("initial-exec")));

#define PAUSE_RING 64
/* The mark's state (all zero at start: .bss). The concurrent mark's is cm_state and
 * cm_buf_state, below; in_mark, above, is per thread. */
static struct {
    /* a mark is running: taken by exchange (acquire), released by release_marking (a futex
     * word: wait_for_mark) */
    _Atomic uint32_t marking;
    atomic_int waiters; /* threads waiting for `marking` to be released (wait_for_mark) */
    /* fork against stopping the world (Dekker style, seq_cst): a fork in flight (prepare to
     * parent/child handler) and a stop starting exclude each other, so no child is ever cloned
     * while the world lock is held (the child would inherit it taken). Atomic, lock-free. */
    atomic_int stopping, forking;
    /* Forks waiting for a stop to end (mark_fork_prepare): the next stop lets them go first
     * (os/giveway.h). */
    struct os_giveway forkers;
    /* Written by the marking thread (under marking) only: */
    uint64_t pause_us[PAUSE_RING]; /* the last pauses (a ring) */
    unsigned npauses;
    _Atomic uint64_t scanned; /* bytes read by the current mark (flush_scanned) */
    bool dangling; /* OSCAR_DANGLING=report (set once at init) */
    /* For it: where the word being scanned lies (the marking thread; a mark that reports
     * dangling pointers has no helpers: scan/team.h). */
    uintptr_t where;
    enum root_kind kind;
    const char *name;   /* root name, or NULL: a heap object */
    uintptr_t obj, obj_size; /* the heap object being scanned */
    bool obj_freed;          /* ... a freed one a dangling pointer keeps (held_read) */
    unsigned printed;   /* lines printed by this mark */
    size_t used;        /* the stopped mark's heap pages (set before the team's jobs read it) */
    unsigned threads;   /* threads that read the heap in this round (1: no helper) */
    size_t stopped;     /* the program's threads the round's last stop parked */
    /* Pages that hold a candidate of the mark in progress (a bit per page, set by
     * candidates(), cleared by release_heap(): the marking thread): pass 2 visits only those.
     * NULL (no memory for it): every page. Allocated once by mark_init. Set with an atomic
     * or: the team's threads set bits of the same word. */
    _Atomic uint64_t *cand_pages;
    atomic_int warned; /* warn_once said it: atomic exchange, once */
    atomic_int unanswered; /* stops timed out in a row (stop_world; 0 once one succeeds) */
    /* Not roots: the heap and all of Oscar's metadata (not_roots: whichever thread holds
     * `marking`; static, not on the stack: ph.lo is the address of the heap's first object). */
    struct root_range ex[1 + OS_META_RANGES_MAX];
    void *stack; /* MARK_STACK bytes: a synchronous mark's frames (mark_here), made once */
    size_t shared_bytes; /* of shared memory the walk read (reread_shared) */
} mark_state;

#define MARK_STACK (512UL << 10)

#define DANGLING_MAX_LINES 64 /* per mark */
/* The team (scan/team.h): a chunk of 4 pages is 256 KiB, read in ~0.1 ms (a helper's wake-up
 * is a few microseconds); a heap under 8 pages is read by the marking thread alone. */
#define TEAM_CHUNK_PAGES 4
#define TEAM_MIN_PAGES 8
/* From 64 MiB of heap on the team always reads it: its stop is the shortest (scanstress,
 * 200 MiB live: 51 ms against 96 ms at worst). Below that, whether a helper pays is tried
 * (team_trial_note below): on one machine it did (churn 1.17 against 1.31 s, AMD EPYC), on
 * another it cost a fifth of the run (0.60 against 0.47 s, Intel Xeon, 2 MiB L2 a core):
 * a helper that reads the heap the freeing thread keeps in its own cache takes the lines
 * away from it, and the program's next writes to them wait for the other core. */
#define TEAM_ALWAYS_PAGES ((64UL << 20) >> PH_PAGE_SHIFT)
#define TRIAL_LEG 4      /* stopped marks a leg of a trial: team, alone, team, alone */
#define TRIAL_LEGS 4
#define TRIAL_EVERY 256  /* stopped marks from one trial to the next (the program may change) */

/* team_trial's state (the marking thread, under `marking`): how the last eligible stopped
 * mark read the heap and when it began, the marks counted since the trial began, and each
 * way's time (from the start of one of its marks to the start of the next) and bytes those
 * next marks released: what the program freed meanwhile. */
static struct {
    uint64_t last_t0;     /* 0: the last stopped mark was not one of the trial's */
    bool last_team;       /* ... whether it used the team */
    bool team;            /* the choice between trials */
    unsigned n;           /* eligible stopped marks since the trial began */
    uint64_t ns[2], bytes[2]; /* [0] alone, [1] with the team */
} trial_state = {.team = true};

/* This thread's bytes read go to the mark's count. */
static void flush_scanned(void) {
    atomic_fetch_add_explicit(&mark_state.scanned, scanned_here, memory_order_relaxed);
    scanned_here = 0;
}

static const char *const kind_names[] = {"global", "stack", "registers", "alternate signal stack",
                                         "thread-local storage", "mapping", "kernel"};

/* One line: the freed object [start, start+size) is still pointed to from mark_state.where. */
static void dangling_line(uintptr_t start, size_t size, uintptr_t w) {
    if (mark_state.printed++ >= DANGLING_MAX_LINES)
        return;
    char buf[768];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_DANGLING);
    fmt_u64(&f, size);
    fmt_str(&f, "-byte object [");
    fmt_hex(&f, start);
    fmt_char(&f, ',');
    fmt_hex(&f, start + size);
    fmt_str(&f, ") is still pointed to (");
    fmt_hex(&f, w);
    fmt_str(&f, ") from ");
    fmt_hex(&f, mark_state.where);
    if (mark_state.name) {
        fmt_str(&f, " (");
        fmt_str(&f, kind_names[mark_state.kind]);
        fmt_str(&f, ": ");
        fmt_str(&f, mark_state.name);
        fmt_str(&f, ")\n");
    } else {
        fmt_str(&f, mark_state.obj_freed ? " (freed object [" : " (heap object [");
        fmt_hex(&f, mark_state.obj);
        fmt_char(&f, ',');
        fmt_hex(&f, mark_state.obj + mark_state.obj_size);
        fmt_str(&f, "), offset ");
        fmt_u64(&f, mark_state.where - mark_state.obj);
        fmt_str(&f, ")\n");
    }
    fmt_flush(&f, 2);
}

/* ---------------------------------------------------------------------------------------
 * The filter: two words per 64 granules of 16 bytes (scan/words.h). The first has a bit set
 * for every candidate's granules and for the granule right after the end of a candidate that
 * fills its slot; the second, for those ends only. Dense and small (1/64 of the heap), and a
 * word pointing into a live object, the common case, is tested against one bit of the first
 * (in the vector registers: words.c). */

static inline size_t granule(uintptr_t a) { return (a - ph.lo) >> 4; }
static inline bool cand_bit(size_t g) {
    return (atomic_load_explicit(&ph.cand[g / 64 * 2], memory_order_relaxed) >> (g % 64)) & 1;
}
static inline bool end_bit(size_t g) {
    return (atomic_load_explicit(&ph.cand[g / 64 * 2 + 1], memory_order_relaxed) >> (g % 64)) &
           1;
}
/* The end bit of a candidate [a, a + len) whose object fills it: set or cleared. */
static inline void end_mark(uintptr_t a, size_t len, bool set) {
    size_t g = granule(a + len);
    if (a + len >= ph.hi)
        return;
    /* (Atomic: the next page's words may be another team thread's to fill meanwhile.)
     * Cleared in pass 2 only, when no thread reads the filter: the first word's bit may be
     * the next candidate's own too, and is cleared with it. */
    uint64_t m = 1ULL << (g % 64);
    if (set) {
        atomic_fetch_or_explicit(&ph.cand[g / 64 * 2], m, memory_order_relaxed);
        atomic_fetch_or_explicit(&ph.cand[g / 64 * 2 + 1], m, memory_order_relaxed);
    } else {
        atomic_fetch_and_explicit(&ph.cand[g / 64 * 2], ~m, memory_order_relaxed);
        atomic_fetch_and_explicit(&ph.cand[g / 64 * 2 + 1], ~m, memory_order_relaxed);
    }
}

/* Set (or clear) the bits of [a, a + len), len a multiple of 16. Pass 1 (world stopped) sets
 * and pass 2 clears them. Atomic: the first word may take the end bit of the object before
 * (end_mark) from another team thread meanwhile. */
static void cand_range(uintptr_t a, size_t len, bool set) {
    size_t g = granule(a), n = len >> 4;
    while (n) {
        size_t b = g % 64, k = 64 - b < n ? 64 - b : n;
        uint64_t m = (k == 64 ? ~0ULL : ((1ULL << k) - 1)) << b;
        if (set)
            atomic_fetch_or_explicit(&ph.cand[g / 64 * 2], m, memory_order_relaxed);
        else
            atomic_fetch_and_explicit(&ph.cand[g / 64 * 2], ~m, memory_order_relaxed);
        g += k;
        n -= k;
    }
}

/* A candidate [a, a + len) leaves the filter: its granules and the bit one past its end (a
 * bit no other candidate shares, so it is cleared whether or not it was set). */
static void filter_clear(uintptr_t a, size_t len) {
    cand_range(a, len, false);
    end_mark(a, len, false);
}

static inline void cand_page(size_t i) {
    atomic_fetch_or_explicit(&mark_state.cand_pages[i / 64], 1ULL << (i % 64),
                             memory_order_relaxed);
}

static inline bool page_has_cand(size_t i) {
    return !mark_state.cand_pages || ((mark_state.cand_pages[i / 64] >> (i % 64)) & 1);
}

/* Four slot words at once (s a multiple of 4: 8-byte aligned, see struct ph_meta). A plain
 * 8-byte atomic load: the words may change under it (a free turning LIVE into QUAR while
 * pass 2 runs), each one is read whole, and a mark's own states (CAND, MARKED) change only
 * by the mark. */
static inline uint64_t four_slots(_Atomic uint16_t *slot, unsigned s) {
    return __atomic_load_n((uint64_t *)(void *)&slot[s], __ATOMIC_RELAXED);
}

#define LANES 0x0001000100010001ULL
/* Of the four slot words in v, those whose state is st: bit 3 of each such 16-bit lane.
 * (A lane's state xor st is 0..7; adding 7 carries into bit 3 unless it was 0.) */
static inline uint64_t lanes_in_state(uint64_t v, unsigned st) {
    uint64_t x = (v & (7 * LANES)) ^ (st * LANES);
    return ((x + 7 * LANES) & (8 * LANES)) ^ (8 * LANES);
}
/* The lanes of slots [s, s + 4) that exist in a page of n slots. */
static inline uint64_t lanes_below(unsigned s, unsigned n) {
    return n - s >= 4 ? 8 * LANES : (8 * LANES) & ((1ULL << (16 * (n - s))) - 1);
}

/* Bit 3 of each 16-bit lane of l (as lanes_in_state gives them) as four bits, lane 0 lowest:
 * the multiplier moves bits 0, 16, 32 and 48 to 48..51 (its other products land below 48,
 * each in a bit of its own, so nothing carries into them). */
static inline uint64_t lanes_bits(uint64_t l) {
    return ((((l >> 3) & LANES) * 0x0001000200040008ULL) >> 48) & 0xF;
}

/* Of the slots [64 w, 64 w + 64) of a page of n slots, those in state st (a) and in state st2
 * (b): a bit each, slot 64 w lowest. One 8-byte load per four slots, no branch per slot: a
 * page's slots are visited a word at a time, whatever mix of states they are in. */
static inline void word_states(_Atomic uint16_t *slot, unsigned w, unsigned n, unsigned st,
                               unsigned st2, uint64_t *a, uint64_t *b) {
    uint64_t x = 0, y = 0;
    unsigned s0 = w * 64, end = n - s0 < 64 ? n - s0 : 64;
    for (unsigned j = 0; j < end; j += 4) {
        uint64_t v = four_slots(slot, s0 + j), in = lanes_below(s0 + j, n);
        x |= lanes_bits(lanes_in_state(v, st) & in) << j;
        y |= lanes_bits(lanes_in_state(v, st2) & in) << j;
    }
    *a = x;
    *b = y;
}

/* Of the slots [64 w, 64 w + 64) of a page of n slots, those in state st. */
static inline uint64_t word_in_state(_Atomic uint16_t *slot, unsigned w, unsigned n,
                                     unsigned st) {
    uint64_t a, same;
    word_states(slot, w, n, st, st, &a, &same); /* (inlined: the second mask folds away) */
    return a;
}

/* The first run of set bits of m (not 0): *from, its length returned. */
static inline unsigned first_run(uint64_t m, unsigned *from) {
    unsigned b = (unsigned)__builtin_ctzll(m);
    uint64_t rest = ~(m >> b);
    *from = b;
    return rest ? (unsigned)__builtin_ctzll(rest) : 64 - b;
}

/* Bits [from, from + count) of a page's local filter words. */
static inline void bits_set(uint64_t *w, size_t from, size_t count) {
    while (count) {
        size_t b = from % 64, k = 64 - b < count ? 64 - b : count;
        w[from / 64] |= (k == 64 ? ~0ULL : ((1ULL << k) - 1)) << b;
        from += k;
        count -= k;
    }
}

/* A small page's geometry is whole (the callers read it with the world stopped, or in a
 * snapshot's child: candidates() and scan_heap(), which may run beside the program, check
 * the copies they go on to use instead). */
static inline bool small_geometry(const struct ph_page *pg) {
    return pg->slot_size && (size_t)pg->nslots * pg->slot_size <= PH_PAGE &&
           pg->nwords <= PH_MAX_WORDS;
}

/* The bytes of large object i to read, kept inside its run and pages [i, end); *run its
 * pages (at least 1). */
static inline size_t large_extent(size_t i, const struct ph_page *pg, size_t end, size_t *run) {
    size_t r = pg->run ? pg->run : 1, len = align_up(pg->large_size, OSCAR_PAGE);
    if (r > end - i)
        r = end - i;
    *run = r;
    return len < r << PH_PAGE_SHIFT ? len : r << PH_PAGE_SHIFT;
}

/* ---------------------------------------------------------------------------------------
 * Pass 1: marking. */

/* Freed objects found still pointed to are roots too: they were zeroed when freed, so what
 * they hold now a use after free wrote, and the program can read it back through the
 * dangling pointer that keeps them (a chain of such objects as well). Each object the mark
 * turns MARKED is noted here; held_read() reads them once the rest is read. Past HELD_MAX
 * notes, it reads every MARKED object again until a reading marks nothing new. Written by
 * whoever marks (the team's threads: an atomic count), read by the marking thread alone. */
#define HELD_MAX 65536
/* A marked object's name, in a note or a snapshot child's record: page << 16 | slot, the slot
 * NOTE_LARGE for a large object. */
#define NOTE_LARGE 0xFFFFu
static inline uint64_t note_of(size_t i, unsigned s) { return (uint64_t)i << 16 | s; }
static inline size_t note_page(uint64_t note) { return (size_t)(note >> 16); }
static inline unsigned note_slot(uint64_t note) { return (unsigned)(note & 0xFFFF); }
static struct {
    _Atomic uint32_t count; /* notes made this round (past HELD_MAX: some were lost) */
    uint32_t read;          /* notes read */
    uint64_t note[HELD_MAX]; /* page << 16 | slot */
} held_state;

static inline void held_reset(void) {
    atomic_store_explicit(&held_state.count, 0, memory_order_relaxed);
    held_state.read = 0;
}

static inline void held_note(size_t i, unsigned s) {
    uint32_t k = atomic_fetch_add_explicit(&held_state.count, 1, memory_order_relaxed);
    if (k < HELD_MAX)
        held_state.note[k] = note_of(i, s);
}

/* Objects found pointed to from shared memory stay held for STICKY_MARKS marks more, found
 * again or not: another process may keep moving such a pointer about while marks read it
 * (reread_shared), and now it must hide it from every one of those marks, not from one. (What
 * a use after free writes into such an object meanwhile is not read as held_read reads it.)
 * Written and read by the marking thread (the one that holds mark_state.marking). */
#define STICKY_MAX 1024
#define STICKY_MARKS 8
static struct {
    uint64_t note[STICKY_MAX]; /* page << 16 | slot */
    uint8_t left[STICKY_MAX];  /* marks it is still held for */
    uint32_t n;                /* entries: the marking thread, while it holds `marking` */
} sticky_state;
/* This thread is reading a root in shared memory (scan_root; never the team's helpers). */
static __thread bool reading_shared __attribute__((tls_model("initial-exec")));

static void sticky_add(uint64_t note) {
    for (uint32_t k = 0; k < sticky_state.n; k++)
        if (sticky_state.note[k] == note) {
            sticky_state.left[k] = STICKY_MARKS;
            return;
        }
    if (sticky_state.n < STICKY_MAX) { /* (else held by this mark's finding alone) */
        sticky_state.note[sticky_state.n] = note;
        sticky_state.left[sticky_state.n++] = STICKY_MARKS;
    }
}

static inline void mark_slot(size_t i, unsigned s, uintptr_t w) {
    _Atomic uint16_t *p = &ph.meta[i].slot[s];
    uint16_t v = atomic_load_explicit(p, memory_order_relaxed);
    unsigned st = v & PHS_MASK;
    if (st == PHS_QUAR || st == PHS_CAND) {
        atomic_store_explicit(p, (uint16_t)((v & ~PHS_MASK) | PHS_MARKED), memory_order_relaxed);
        held_note(i, s);
        if (unlikely(mark_state.dangling)) {
            size_t size = ph.pages[i].slot_size;
            dangling_line(ph_page_base(i) + s * size, size, w);
        }
    }
    if (unlikely(reading_shared) && (st == PHS_QUAR || st == PHS_CAND || st == PHS_MARKED))
        sticky_add(note_of(i, s));
}

/* Slot s of page i, when its object fills it (no slack): a pointer one past its end is the
 * start of the next slot. (malloc_usable_size clears the slack: the whole slot is then the
 * object's.) */
static inline void mark_full_slot(size_t i, unsigned s, uintptr_t w) {
    if ((atomic_load_explicit(&ph.meta[i].slot[s], memory_order_relaxed) >> 3) == 0)
        mark_slot(i, s, w);
}

static void mark_large(size_t i, struct ph_page *pg, uintptr_t w) {
    _Atomic uint32_t *st = &pg->lstate;
    uint32_t v = atomic_load_explicit(st, memory_order_relaxed);
    if (v == PHS_QUAR || v == PHS_CAND) {
        atomic_store_explicit(st, PHS_MARKED, memory_order_relaxed);
        held_note(i, NOTE_LARGE);
        if (unlikely(mark_state.dangling))
            dangling_line(ph_page_base(i), pg->large_size, w);
    }
    if (unlikely(reading_shared) && (v == PHS_QUAR || v == PHS_CAND || v == PHS_MARKED))
        sticky_add(note_of(i, NOTE_LARGE));
}

/* w is the start of a slot or a page: the object that ends exactly there, if any. */
static void mark_end(uintptr_t w) {
    if (w == ph.lo)
        return;
    uintptr_t v = w - 1;
    size_t i = ph_index(v);
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    uintptr_t off = v & (PH_PAGE - 1);
    if (kind == PHK_SMALL) {
        unsigned s = ph_slot_of(pg, off);
        if (s < pg->nslots && (uintptr_t)(s + 1) * pg->slot_size == off + 1)
            mark_full_slot(i, s, w);
        return;
    }
    if (kind == PHK_TAIL) {
        i -= pg->run;
        pg = &ph.pages[i];
        kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    }
    if (kind == PHK_LARGE && w - ph_page_base(i) == pg->large_size)
        mark_large(i, pg, w);
}

/* w is inside the heap: mark the candidate it points into, or one past the end of. (The
 * first filter word's bit is also set at an end: the object that begins there is looked up
 * too, and marked only if it is a candidate, or was freed meanwhile.) */
static void mark_addr(uintptr_t w) {
    size_t g = granule(w);
    if ((w & 15) == 0 && end_bit(g))
        mark_end(w); /* one past the end of a candidate that fills its slot */
    if (!cand_bit(g))
        return;
    size_t i = ph_index(w);
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    uintptr_t off = w & (PH_PAGE - 1);
    if (kind == PHK_SMALL) {
        unsigned s = ph_slot_of(pg, off), n = pg->nslots;
        if (s < n)
            mark_slot(i, s, w);
        return;
    }
    if (kind == PHK_TAIL) {
        i -= pg->run;
        pg = &ph.pages[i];
        kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    }
    if (kind == PHK_LARGE && w - ph_page_base(i) <= pg->large_size)
        mark_large(i, pg, w);
}

/* Every aligned word of [lo, hi). The words that may mark a candidate (the filter's bits
 * for them set: scan/words.h) are gathered a chunk at a time, then each one's candidate is
 * looked up. */
static void scan(uintptr_t lo, uintptr_t hi) {
    const uintptr_t *p = (const uintptr_t *)align_up(lo, sizeof(uintptr_t));
    const uintptr_t *e = (const uintptr_t *)(hi & ~(sizeof(uintptr_t) - 1));
    uintptr_t base = ph.lo, span = ph.hi - ph.lo;
    if (p >= e)
        return;
    scanned_here += (uintptr_t)e - (uintptr_t)p;
    const uintptr_t *hit[WORDS_CHUNK];
    uintptr_t val[WORDS_CHUNK];
    while (p < e) {
        size_t len = (size_t)(e - p) > WORDS_CHUNK ? WORDS_CHUNK : (size_t)(e - p);
        unsigned n = words_find(p, len, base, span, ph.cand, hit, val);
        p += len;
        for (unsigned k = 0; k < n; k++) {
            if (unlikely(mark_state.dangling)) /* (one thread marks: OSCAR_DANGLING names it) */
                mark_state.where = (uintptr_t)hit[k];
            mark_addr(val[k]);
        }
    }
}

static void scan_guarded(uintptr_t lo, uintptr_t hi, void *arg) {
    (void)arg;
    scan(lo, hi);
}

/* Whether the program changed the protection or the mapping of a page of heap range
 * [lo, hi) (heap/protect_heap.h, ph_note_foreign). */
static bool foreign_range(uintptr_t lo, uintptr_t hi) {
    if (likely(!atomic_load_explicit(&ph.any_foreign, memory_order_acquire)) || hi <= lo)
        return false;
    for (size_t i = ph_index(lo); i <= ph_index(hi - 1); i++)
        if (atomic_load_explicit(&ph.pages[i].foreign, memory_order_acquire))
            return true;
    return false;
}

/* Heap range [lo, hi) on a page the program made unreadable, or mapped over (a coroutine's
 * guard page in a block of its own, a ring buffer's mirror): read directly, the mark died
 * of SIGSEGV (protect_heap_unreadable). What it holds is still the program's, which may
 * make it readable again: it is read through /proc/self/mem (past PROT_NONE and a
 * protection key), a buffer at a time; a page that gives nothing (a guard marker) is left
 * out. Without /proc/self/mem, the readable pages only (roots_read_guarded). */
static void scan_foreign(uintptr_t lo, uintptr_t hi) {
    long fd = os_open_read("/proc/self/mem");
    if (fd < 0) {
        roots_read_guarded(scan_guarded, lo, hi, NULL);
        return;
    }
    uintptr_t buf[256];
    while (lo < hi) {
        size_t n = hi - lo < sizeof buf ? hi - lo : sizeof buf;
        long got = os_pread((int)fd, buf, n, lo);
        if (got <= 0) {
            lo = (lo | (OSCAR_PAGE - 1)) + 1; /* (nothing there: the next page) */
            continue;
        }
        scan((uintptr_t)buf, (uintptr_t)buf + (size_t)got);
        lo += (uintptr_t)got;
    }
    os_close((int)fd);
}

/* A heap range the mark reads: directly, or through scan_foreign. */
static inline void scan_obj(uintptr_t lo, uintptr_t hi) {
    if (unlikely(foreign_range(lo, hi)))
        scan_foreign(lo, hi);
    else
        scan(lo, hi);
}

/* reread_shared's bounds: readings of shared memory after the walk's, and bytes of them. */
#define SHARED_READINGS 8
#define SHARED_REREAD_BUDGET (256u << 10)

static void scan_root(uintptr_t lo, uintptr_t hi, enum root_kind kind, const char *name,
                      void *arg) {
    mark_state.kind = kind;
    mark_state.name = name;
    reading_shared = roots_reporting_shared();
    if (reading_shared)
        mark_state.shared_bytes += hi - lo;
    roots_read_guarded(scan_guarded, lo, hi, arg);
    reading_shared = false;
}

/* Every QUAR object becomes a candidate (CAND), its granules set in the filter. A small
 * page's filter words are built here first, then or'ed in (the words are zero between marks,
 * but the end bit of the previous page's last candidate may already be in the first). */
static void candidates(size_t first, size_t last) {
    const size_t gpp = PH_PAGE / 16; /* granules per page */
    for (size_t i = first; i < last; i++) {
        struct ph_page *pg = &ph.pages[i];
        unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
        uintptr_t base = ph_page_base(i);
        if (kind == PHK_SMALL) {
            _Atomic uint16_t *slot = ph.meta[i].slot;
            unsigned n = pg->nslots, size = pg->slot_size, g = size / 16, nw = pg->nwords;
            /* (one word more: a slot's granules may spill into it, all zero) */
            uint64_t cw[PH_MAX_WORDS + 1], ew[PH_MAX_WORDS + 1];
            bool any = false;
            if (!size || (size_t)n * size > PH_PAGE || nw > PH_MAX_WORDS)
                continue; /* (a page being set up while the world runs: no QUAR slot yet) */
            /* A slot of at most 64 granules covers two filter words at most: its bits are
             * set without a branch (a candidate's size and place are random, and branches
             * on them were mispredicted once or twice per candidate). */
            uint64_t gmask = g >= 64 ? ~0ULL : (1ULL << g) - 1;
            for (unsigned w = 0; w < nw; w++) {
                uint64_t q = word_in_state(slot, w, n, PHS_QUAR);
                if (!q)
                    continue;
                if (!any) {
                    memset(cw, 0, sizeof cw);
                    memset(ew, 0, sizeof ew);
                    any = true;
                }
                for (; q; q &= q - 1) {
                    unsigned t = w * 64 + (unsigned)__builtin_ctzll(q);
                    /* QUAR slots change only by the mark: a plain store, even while the
                     * world runs (the other lanes of its word are not touched). */
                    uint16_t v = atomic_load_explicit(&slot[t], memory_order_relaxed);
                    atomic_store_explicit(&slot[t], (uint16_t)((v & ~PHS_MASK) | PHS_CAND),
                                          memory_order_relaxed);
                    size_t from = (size_t)t * g, e = from + g;
                    if (g <= 64) {
                        unsigned b = (unsigned)(from % 64);
                        cw[from / 64] |= gmask << b;
                        cw[from / 64 + 1] |= (gmask >> 1) >> (63 - b); /* (what << b lost) */
                    } else {
                        bits_set(cw, from, g);
                    }
                    /* An object that fills its slot: one past its end counts. */
                    uint64_t fills = (v >> 3) == 0;
                    if (likely(e < gpp))
                        ew[e / 64] |= fills << (e % 64);
                    else if (fills)
                        end_mark(base + (uintptr_t)t * size, size, true);
                }
            }
            if (!any)
                continue;
            if (mark_state.cand_pages)
                cand_page(i);
            /* (The first word of the page may hold the previous page's last end bit, set
             * by another team thread meanwhile: or'ed in. The others are this page's.) */
            _Atomic uint64_t *f = &ph.cand[granule(base) / 64 * 2];
            for (unsigned w = 0; w < PH_MAX_WORDS; w++) {
                uint64_t first = cw[w] | ew[w];
                if (first && w == 0)
                    atomic_fetch_or_explicit(&f[0], first, memory_order_relaxed);
                else if (first)
                    atomic_store_explicit(&f[2 * w], first, memory_order_relaxed);
                if (ew[w])
                    atomic_fetch_or_explicit(&f[2 * w + 1], ew[w], memory_order_relaxed);
            }
        } else if (kind == PHK_LARGE) {
            if (atomic_load_explicit(&pg->lstate, memory_order_relaxed) == PHS_QUAR) {
                atomic_store_explicit(&pg->lstate, PHS_CAND, memory_order_relaxed);
                cand_range(base, align_up(pg->large_size, OSCAR_PAGE), true);
                end_mark(base, align_up(pg->large_size, OSCAR_PAGE), true);
                if (mark_state.cand_pages)
                    cand_page(i);
            }
            i += pg->run - 1;
        }
    }
}

/* The live objects of pages [first, last) (a large object that begins there: whole, up to page
 * `end`; a chunk of the team's begins where the last ended, and skips the rest of a large
 * object). While the world runs (a concurrent mark), a page
 * may be handed to another size class under us: its geometry is then read half old, half
 * new, so every range is kept inside the page or the run, and a run's length at least 1 (a
 * page so changed was written after the write tracking began: it is read again, whole, with
 * the world stopped). */
static void scan_heap(size_t first, size_t last, size_t end) {
    for (size_t i = first; i < last; i++) {
        struct ph_page *pg = &ph.pages[i];
        unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
        uintptr_t base = ph_page_base(i);
        if (kind == PHK_SMALL) {
            _Atomic uint16_t *slot = ph.meta[i].slot;
            unsigned n = pg->nslots, size = pg->slot_size;
            if (!size || (size_t)n * size > PH_PAGE)
                continue;
            unsigned nw = (n + 63) / 64;
            /* Runs of live slots, a word of 64 slots at a time, each run read in one go
             * (OSCAR_DANGLING: one object at a time, to name it). */
            for (unsigned w = 0; w < nw; w++) {
                uint64_t live = word_in_state(slot, w, n, PHS_LIVE);
                while (live) {
                    unsigned from, len = first_run(live, &from);
                    uintptr_t lo = base + (uintptr_t)(w * 64 + from) * size;
                    if (!mark_state.dangling) {
                        scan_obj(lo, lo + (uintptr_t)len * size);
                    } else {
                        for (unsigned k = 0; k < len; k++) {
                            mark_state.obj = lo + (uintptr_t)k * size;
                            mark_state.obj_size = size;
                            scan_obj(mark_state.obj, mark_state.obj + size);
                        }
                    }
                    live = from + len >= 64 ? 0 : live & (~0ULL << (from + len));
                }
            }
        } else if (kind == PHK_LARGE) {
            uint32_t st = atomic_load_explicit(&pg->lstate, memory_order_relaxed);
            size_t run, len = large_extent(i, pg, end, &run);
            if (st == PHS_LIVE) {
                if (unlikely(mark_state.dangling)) {
                    mark_state.obj = base;
                    mark_state.obj_size = pg->large_size;
                }
                scan_obj(base, base + len);
            }
            i += run - 1;
        }
    }
}

/* The live objects that overlap [lo, hi) (pages written during a concurrent mark): a small
 * page's live slots, whole; of a large object, the part inside [lo, hi). *done: the last small
 * page read (a run of written pages visits it once). */
static void scan_written(uintptr_t lo, uintptr_t hi, size_t used, size_t *done) {
    for (uintptr_t a = lo; a < hi;) {
        size_t i = ph_index(a);
        if (i >= used)
            return;
        struct ph_page *pg = &ph.pages[i];
        unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
        uintptr_t next = ph_page_base(i + 1);
        if (kind == PHK_SMALL) {
            if (*done != i)
                scan_heap(i, i + 1, i + 1);
            *done = i;
        } else if (kind == PHK_LARGE || kind == PHK_TAIL) {
            size_t h = kind == PHK_TAIL && pg->run <= i ? i - pg->run : i;
            struct ph_page *hp = &ph.pages[h];
            if (h < used && atomic_load_explicit(&hp->kind, memory_order_acquire) == PHK_LARGE &&
                atomic_load_explicit(&hp->lstate, memory_order_relaxed) == PHS_LIVE) {
                uintptr_t b = ph_page_base(h), e = b + align_up(hp->large_size, OSCAR_PAGE);
                uintptr_t from = a > b ? a : b, to = hi < e ? hi : e;
                if (to > next)
                    to = next;
                if (unlikely(mark_state.dangling)) {
                    mark_state.obj = b;
                    mark_state.obj_size = hp->large_size;
                }
                if (from < to)
                    scan_obj(from, to);
            }
        }
        a = next;
    }
}

/* The contents of one freed object the mark found pointed to (a note: page << 16 | slot). */
static void held_read_one(uint64_t note, size_t used) {
    size_t i = note_page(note), run;
    unsigned s = note_slot(note);
    if (i >= used)
        return;
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    uintptr_t lo, len;
    if (s == NOTE_LARGE) {
        if (kind != PHK_LARGE)
            return;
        lo = ph_page_base(i);
        len = large_extent(i, pg, used, &run);
    } else {
        if (kind != PHK_SMALL || !small_geometry(pg) || s >= pg->nslots)
            return;
        lo = ph_page_base(i) + (uintptr_t)s * pg->slot_size;
        len = pg->slot_size;
    }
    if (unlikely(mark_state.dangling)) {
        mark_state.obj = lo;
        mark_state.obj_size = len;
        mark_state.obj_freed = true;
    }
    scan_obj(lo, lo + len);
    mark_state.obj_freed = false;
}

/* Every MARKED object of pages [0, used) that hold candidates: fn(its note, arg). */
static void each_marked(size_t used, void (*fn)(uint64_t note, void *arg), void *arg) {
    for (size_t i = 0; i < used; i++) {
        if (!page_has_cand(i))
            continue;
        struct ph_page *pg = &ph.pages[i];
        unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
        if (kind == PHK_LARGE &&
            atomic_load_explicit(&pg->lstate, memory_order_relaxed) == PHS_MARKED)
            fn(note_of(i, NOTE_LARGE), arg);
        if (kind != PHK_SMALL || !small_geometry(pg))
            continue;
        for (unsigned w = 0; w < pg->nwords; w++)
            for (uint64_t m = word_in_state(ph.meta[i].slot, w, pg->nslots, PHS_MARKED); m;
                 m &= m - 1)
                fn(note_of(i, w * 64 + (unsigned)__builtin_ctzll(m)), arg);
    }
}

static void held_read_note(uint64_t note, void *used) { held_read_one(note, *(size_t *)used); }

/* Read what the freed objects marked so far hold, and what those mark in turn, until nothing
 * new is marked. The marking thread, once every other place was read (the world stopped, or
 * in a snapshot's child); marking is monotone, so reading an object twice costs only time. */
static void held_read(size_t used) {
    for (;;) {
        uint32_t n = atomic_load_explicit(&held_state.count, memory_order_acquire);
        if (held_state.read < n && held_state.read < HELD_MAX) {
            held_read_one(held_state.note[held_state.read++], used);
            continue;
        }
        if (n <= HELD_MAX)
            break;
        /* Some notes were lost: every MARKED object again (new marks note themselves). */
        held_reset();
        each_marked(used, held_read_note, &used);
    }
    held_reset();
}

/* ---------------------------------------------------------------------------------------
 * Pass 2: release. */

struct tally {
    uint64_t released, held, released_objects, held_objects;
    uint64_t released_dropped, held_dropped; /* of released and held: large objects whose
                                              * pages were given back at free */
};

/* Pass 2, on the pages that hold candidates: unmarked candidates (CAND) become FREED and go
 * back to their pages, marked ones back to QUAR; the filter is zero again after it. With
 * release false (the roots could not be read, or a fork child undoing a mark), every
 * candidate goes back to QUAR. */
static void release_page(size_t i, struct tally *t, bool release) {
    const size_t gpp = PH_PAGE / 16;
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    if (kind == PHK_SMALL) {
        uint64_t bits[PH_MAX_WORDS];
        _Atomic uint16_t *slot = ph.meta[i].slot;
        unsigned n = pg->nslots, size = pg->slot_size, nw = pg->nwords;
        bool any = false;
        /* Only the last slot's end bit can lie in the next page's filter words (the others
         * are in this page's, zeroed below). */
        if (n && (size_t)n * (size / 16) >= gpp)
            end_mark(ph_page_base(i) + (uintptr_t)(n - 1) * size, size, false);
        for (unsigned w = 0; w < nw; w++) {
            uint64_t cand, marked;
            word_states(slot, w, n, PHS_CAND, PHS_MARKED, &cand, &marked);
            if (!release) {
                marked |= cand;
                cand = 0;
            }
            bits[w] = cand;
            if (cand) {
                any = true;
                t->released += (uint64_t)__builtin_popcountll(cand) * size;
                t->released_objects += (uint64_t)__builtin_popcountll(cand);
            }
            if (marked) {
                t->held += (uint64_t)__builtin_popcountll(marked) * size;
                t->held_objects += (uint64_t)__builtin_popcountll(marked);
            }
            /* CAND and MARKED slots change only by the mark: plain stores, the world running
             * (a free or the owner's malloc changes other slots of the same words). */
            for (; cand; cand &= cand - 1) {
                unsigned k = w * 64 + (unsigned)__builtin_ctzll(cand);
                uint16_t v = atomic_load_explicit(&slot[k], memory_order_relaxed);
                atomic_store_explicit(&slot[k], (uint16_t)((v & ~PHS_MASK) | PHS_FREED),
                                      memory_order_relaxed);
            }
            for (; marked; marked &= marked - 1) {
                unsigned k = w * 64 + (unsigned)__builtin_ctzll(marked);
                uint16_t v = atomic_load_explicit(&slot[k], memory_order_relaxed);
                atomic_store_explicit(&slot[k], (uint16_t)((v & ~PHS_MASK) | PHS_QUAR),
                                      memory_order_relaxed);
            }
        }
        /* Every bit of this page's filter words was a candidate's of this mark. */
        _Atomic uint64_t *f = &ph.cand[granule(ph_page_base(i)) / 64 * 2];
        for (unsigned w = 0; w < 2 * PH_MAX_WORDS; w++)
            atomic_store_explicit(&f[w], 0, memory_order_relaxed);
        if (any)
            ph_release_slots(i, bits, nw);
    } else if (kind == PHK_LARGE) {
        uint32_t st = atomic_load_explicit(&pg->lstate, memory_order_relaxed);
        size_t usable = align_up(pg->large_size, OSCAR_PAGE);
        if (st == PHS_CAND || st == PHS_MARKED)
            filter_clear(ph_page_base(i), usable);
        uint64_t dropped = atomic_load_explicit(&pg->dropped, memory_order_relaxed) ? usable : 0;
        if (st == PHS_CAND && release) {
            t->released += usable;
            t->released_objects++;
            t->released_dropped += dropped;
            ph_release_large(i);
        } else if (st == PHS_MARKED || st == PHS_CAND) {
            atomic_store_explicit(&pg->lstate, PHS_QUAR, memory_order_relaxed);
            t->held += usable;
            t->held_objects++;
            t->held_dropped += dropped;
        }
    }
}

static void release_heap(size_t used, struct tally *t, bool release, bool every_page) {
    if (!mark_state.cand_pages || every_page) {
        for (size_t i = 0; i < used; i++) {
            unsigned kind = atomic_load_explicit(&ph.pages[i].kind, memory_order_acquire);
            if (kind == PHK_SMALL || kind == PHK_LARGE)
                release_page(i, t, release);
        }
        if (mark_state.cand_pages)
            for (size_t w = 0; w < (used + 63) / 64; w++)
                mark_state.cand_pages[w] = 0;
        return;
    }
    for (size_t w = 0; w < (used + 63) / 64; w++) {
        uint64_t b = mark_state.cand_pages[w];
        if (!b)
            continue;
        mark_state.cand_pages[w] = 0;
        for (; b; b &= b - 1)
            release_page(w * 64 + (size_t)__builtin_ctzll(b), t, release);
    }
}

/* ---------------------------------------------------------------------------------------
 * A round. */

static void note_pause(uint64_t us) {
    mark_state.pause_us[mark_state.npauses++ % PAUSE_RING] = us;
    unsigned n = mark_state.npauses < PAUSE_RING ? mark_state.npauses : PAUSE_RING;
    uint64_t sorted[PAUSE_RING];
    for (unsigned i = 0; i < n; i++) {
        uint64_t v = mark_state.pause_us[i];
        unsigned j = i;
        for (; j > 0 && sorted[j - 1] > v; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = v;
    }
    atomic_store_explicit(&oscar_stats[STAT_SCAN_PAUSE_US_MEDIAN], sorted[n / 2],
                          memory_order_relaxed);
    stats_raise_peak(STAT_SCAN_PAUSE_US_MAX, us);
}

/* why, and the errno behind it (0: none to say). */
static void warn_once(const char *why, int err) {
    if (atomic_exchange(&mark_state.warned, 1))
        return;
    char buf[256];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_CANNOT_MARK);
    fmt_str(&f, why);
    if (err) {
        fmt_str(&f, ", errno ");
        fmt_i64(&f, err);
    }
    fmt_str(&f, "): freed memory is not reused until a mark succeeds\n");
    fmt_flush(&f, 2);
}

/* Pass 1 with the world stopped. saved: the marking thread's callee-saved registers, pushed
 * by mark_run on its stack; the thread's own stack is a root from there up only (below lie
 * the mark's own frames, whose stale slots would keep objects for nothing). */
/* Fills mark_state.ex with what is no root, the heap and all of Oscar's metadata (the
 * heap's among it); returns how many ranges. */
static size_t not_roots(void) {
    mark_state.shared_bytes = 0; /* (called before each mark's walk) */
    struct root_range *ex = mark_state.ex;
    size_t nex = 0;
    ex[nex++] = (struct root_range){ph.lo, ph.hi};
    for (size_t i = 0, n = os_meta_count(); i < n; i++)
        if (os_meta_range(i, &ex[nex].lo, &ex[nex].hi))
            nex++;
    return nex;
}

/* The team's jobs (scan/team.h): chunks of the heap's pages, the world stopped. */
static void scan_heap_job(size_t first, size_t last) {
    scan_heap(first, last, mark_state.used);
    flush_scanned();
}

/* Memory shared with other processes is read again at the end of the stop: another process
 * may move a pointer from a place the mark has not read yet to one it has read, and then a
 * reading misses it (protect_shape_other_process). It is read up to SHARED_READINGS times
 * more, as many as fit in SHARED_REREAD_BUDGET bytes of reading (they lengthen the stop:
 * past the budget, once), so a process that keeps moving a pointer must hide it from every
 * one of those readings, not from one. It can still win (README, Limitations). (Whether it
 * changed between readings tells nothing: readings that missed a moving pointer are alike.)
 * The ranges the walk found (no /proc/self/maps again: most programs have none); the world
 * stopped. */
static void reread_shared(size_t nex) {
    size_t bytes = mark_state.shared_bytes, fit = bytes ? SHARED_REREAD_BUDGET / bytes : 1;
    unsigned n = fit < 1 ? 1 : fit > SHARED_READINGS ? SHARED_READINGS : (unsigned)fit;
    for (unsigned k = 0; k < n; k++) {
        if (roots_reread_shared(scan_root, NULL) != 0) { /* (the ranges the walk found, or) */
            roots_for_each_of(ROOTS_SHARED, scan_root, NULL, mark_state.ex, nex, 0);
            break;
        }
        if (k)
            stats_add(STAT_SCAN_SHARED_REREADS, 1);
    }
    mark_state.name = NULL;
}

/* Is a stopped mark of pages [0, used) one the trial weighs (team_trial_note)? Not when the
 * user set OSCAR_MARK_THREADS, no helper runs, one thread names dangling pointers, or the
 * heap is out of the range where the way is tried. */
static bool team_tried(size_t used) {
    return !mark_state.dangling && team_helpers() && !team_asked() && used >= TEAM_MIN_PAGES &&
           used < TEAM_ALWAYS_PAGES;
}

/* Does a stopped mark of pages [0, used) share its reading with the team? tried: team_tried's
 * answer for it (a mark the trial weighs takes the trial's way, any other worth sharing is). */
static bool team_for(size_t used, bool tried) {
    if (mark_state.dangling || !team_helpers() || used < TEAM_MIN_PAGES)
        return false;
    if (!tried)
        return true;
    unsigned k = trial_state.n % TRIAL_EVERY;
    return k < TRIAL_LEG * TRIAL_LEGS ? (k / TRIAL_LEG) % 2 == 0 : trial_state.team;
}

/* After a stopped mark that began at t0, used the team or not and released `released` bytes:
 * the time since the trial's previous mark began goes to that mark's way, with these bytes
 * (what the program freed meanwhile). Once the trial's legs are weighed, the cheaper way per
 * byte freed is kept until the next trial. A mark the trial does not weigh (tried false)
 * breaks the chain: its time is no leg's. */
static void team_trial_note(bool tried, bool team, uint64_t t0, uint64_t released) {
    if (!tried) {
        trial_state.last_t0 = 0;
        return;
    }
    unsigned k = trial_state.n++ % TRIAL_EVERY;
    if (k == 0)
        trial_state.ns[0] = trial_state.ns[1] = trial_state.bytes[0] = trial_state.bytes[1] = 0;
    if (trial_state.last_t0 && t0 > trial_state.last_t0) {
        trial_state.ns[trial_state.last_team] += t0 - trial_state.last_t0;
        trial_state.bytes[trial_state.last_team] += released;
    }
    if (k == TRIAL_LEG * TRIAL_LEGS && trial_state.bytes[0] && trial_state.bytes[1])
        trial_state.team = (unsigned __int128)trial_state.ns[1] * trial_state.bytes[0] <
                           (unsigned __int128)trial_state.ns[0] * trial_state.bytes[1];
    trial_state.last_team = team;
    trial_state.last_t0 = k < TRIAL_LEG * TRIAL_LEGS ? t0 : 0;
}

__attribute__((noinline)) static int mark_stopped(const uintptr_t *saved, size_t used,
                                                  bool team) {
    size_t nex = not_roots();
    held_reset();
    /* With helpers (not when naming where dangling pointers are: one thread names them), the
     * candidates are made by all, then the helpers read the heap while this thread reads
     * the roots, and joins them. (Locks held: the world lock only; the helpers take none.) */
    mark_state.threads = team ? 1 + team_helpers() : 1;
    if (team) {
        stats_add(STAT_SCAN_TEAM_ROUNDS, 1);
        team_begin(candidates, used, TEAM_CHUNK_PAGES);
        team_finish();
        mark_state.used = used;
        team_begin(scan_heap_job, used, TEAM_CHUNK_PAGES);
    } else {
        candidates(0, used);
    }
    /* This thread's stack is a root from the saved registers up: below lie the mark's own
     * frames (cut only within this stack's own mapping, never another thread's below it). */
    int err = roots_for_each(scan_root, NULL, mark_state.ex, nex, (uintptr_t)saved);
    mark_state.name = NULL;
    if (team)
        team_finish(); /* (even when the roots failed: the helpers are reading the heap) */
    else if (!err)
        scan_heap(0, used, used);
    if (!err) {
        reread_shared(nex);
        held_read(used);
    }
    return err;
}

/* Undo pass 1's CAND states when the roots could not be read: nothing is released. Every
 * page: a fork child undoing a mark that was stopped in the middle of candidates() (a page's
 * slots made CAND before its bit in mark_state.cand_pages was set). */
static void unmark(size_t used, bool every_page) {
    struct tally ignored = {0};
    release_heap(used, &ignored, false, every_page);
}

/* mark_run: push the callee-saved registers (the caller's values: the only copies of some
 * pointers may be there), make room for the thread's FS and GS bases and its alternate
 * signal stack's base below them (mark_body fills it: registers too, which no push saves;
 * and the kernel keeps the base, which may be a block the program freed while it is still
 * registered: the kernel would write a signal frame into it), then mark_body(pointer to
 * them all). */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl mark_run\n"
        ".hidden mark_run\n"
        ".type mark_run, @function\n"
        "mark_run:\n"
        "\tpush %rbx\n"
        "\tpush %rbp\n"
        "\tpush %r12\n"
        "\tpush %r13\n"
        "\tpush %r14\n"
        "\tpush %r15\n"
        "\tsub $24, %rsp\n"
        "\tmov %rsp, %rdi\n"
        "\tcall mark_body\n"
        "\tadd $24, %rsp\n"
        "\tpop %r15\n"
        "\tpop %r14\n"
        "\tpop %r13\n"
        "\tpop %r12\n"
        "\tpop %rbp\n"
        "\tpop %rbx\n"
        "\tret\n"
        ".size mark_run, .-mark_run\n");

/* call_on_stack: fn(arg) with the stack pointer at top (16-byte aligned), then back. The
 * frame-pointer chain goes on into the caller's stack. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl call_on_stack\n"
        ".hidden call_on_stack\n"
        ".type call_on_stack, @function\n"
        "call_on_stack:\n"
        "\tpush %rbp\n"
        "\tmov %rsp, %rbp\n"
        "\tmov %rdx, %rsp\n"
        "\tpush %rbp\n"
        "\tpush %rbp\n"
        "\tmov %rdi, %rax\n"
        "\tmov %rsi, %rdi\n"
        "\tcall *%rax\n"
        "\tmov %rbp, %rsp\n"
        "\tpop %rbp\n"
        "\tret\n"
        ".size call_on_stack, .-call_on_stack\n");
void call_on_stack(void (*fn)(void *), void *arg, void *top) __attribute__((visibility("hidden")));

void mark_body(const uintptr_t *saved);
static int mark_body_locked(const uintptr_t *saved, bool open_tracking);
static bool concurrent_request(void);
static bool called_from_outside_libc(void);
static int open_trackers(void);
static void note_stop(uint64_t stop_ns);

static void mark_here_body(void *saved) {
    mark_body_locked(saved, false);
}

/* Another thread is marking and this one's free found the quarantine far past its trigger
 * (twice its slack: ph_quarantine_urgent): it waits for that mark instead of freeing on. A stop
 * of the world waits for every thread to take its signal, and on fewer CPUs than threads a
 * thread that is not running takes it only once it runs again: meanwhile the running ones freed
 * on, and four threads churning on two CPUs took the quarantine from its 1 MiB floor to 38-60
 * MB (protect_threads_churn). The wait is a futex's with the program's signal mask, so the
 * stop's signal parks this thread in it; it ends when the mark is over, or after WAIT_MS at
 * most (a thread that blocks the park signal is left to the stop's own rules). Locks held:
 * none. */
#define WAIT_MS 100
static void wait_for_mark(void) {
    if (!ph_quarantine_urgent())
        return;
    atomic_fetch_add_explicit(&mark_state.waiters, 1, memory_order_seq_cst);
    for (int k = 0; k < WAIT_MS && atomic_load_explicit(&mark_state.marking, memory_order_seq_cst);
         k++)
        os_futex_wait(&mark_state.marking, 1, 1000 * 1000);
    atomic_fetch_sub_explicit(&mark_state.waiters, 1, memory_order_relaxed);
}

/* The mark is over: waiters (wait_for_mark) go on. */
static void release_marking(void) {
    atomic_store_explicit(&mark_state.marking, 0, memory_order_seq_cst);
    if (atomic_load_explicit(&mark_state.waiters, memory_order_seq_cst))
        os_futex_wake(&mark_state.marking, 1 << 30);
}

/* The synchronous mark, on the calling thread, the world stopped throughout pass 1. */
static void mark_here(const uintptr_t *saved) {
    /* No signal handler of the program runs on this thread during the mark: it could move a
     * pointer below the stack the mark reads, or fork while the mark holds the world (fork's
     * prepare would then wait for this very mark). Fault signals stay open (guarded reads).
     * Raw system calls: export/'s wrappers keep the park signal open, and it is ours. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    os_sigprocmask(SIG_BLOCK, &all, &old);
    if (atomic_exchange_explicit(&mark_state.marking, 1, memory_order_acquire)) {
        os_sigprocmask(SIG_SETMASK, &old, NULL);
        wait_for_mark();
        return;
    }
    in_mark = 1;
    /* On a stack of Oscar's (metadata, no root): the program's stack may be a coroutine's,
     * small, and beside another one's in one mapping, which the mark then reads whole (and
     * would find its own frames there, and could overflow into the other). */
    if (!mark_state.stack) {
        int err;
        mark_state.stack = os_alloc_meta(MARK_STACK, &err);
    }
    if (mark_state.stack)
        call_on_stack(mark_here_body, (void *)saved, (char *)mark_state.stack + MARK_STACK);
    else
        mark_here_body((void *)saved);
    in_mark = 0;
    release_marking();
    os_sigprocmask(SIG_SETMASK, &old, NULL); /* (after: a pending handler may fork) */
}

/* Start the team's helpers (scan/team.h) once the heap is worth sharing, from a call the
 * program made (called_from_outside_libc: pthread_create takes libc's locks). */
static void team_ready(void) {
    if (mark_state.dangling || team_helpers() >= team_wanted() ||
        atomic_load_explicit(&ph.used_pages, memory_order_relaxed) < TEAM_MIN_PAGES ||
        !called_from_outside_libc())
        return;
    team_start();
}

__attribute__((used, noinline, visibility("hidden"))) void mark_body(const uintptr_t *saved) {
    os_segment_bases((uintptr_t *)&saved[0], (uintptr_t *)&saved[1]);
    stack_t ss;
    ((uintptr_t *)saved)[2] =
        os_sigaltstack_get(&ss) == 0 && !(ss.ss_flags & SS_DISABLE) ? (uintptr_t)ss.ss_sp : 0;
    team_ready(); /* (here: the marker thread's stops use the team too) */
    if (!concurrent_request())
        mark_here(saved);
}

/* Why a round's reading failed, for the errors that say it themselves; NULL for any other
 * (the mappings could not be read: its errno is said). */
static const char *round_failure(int err) {
    switch (err) {
    case -ENOSPC:
        return "the program has more epoll instances, queued signals or io_urings than it can "
               "note";
    case -ENOTSUP:
        return "the kernel does not list the program's timers";
    case -ECHILD:
        return "the snapshot's child process failed";
    case -EBUSY:
        return "an io_uring's buffers, or the copies of POSIX queue messages, could not be read "
               "(a lock was busy)";
    case -EMSGSIZE:
        return "what a pipe, socket pair or message queue holds could not be read whole";
    case -EMFILE:
        return "no descriptor was left to read a pipe through";
    default:
        return NULL;
    }
}

/* Stops timed out in a row (a second each) before stop_world says marks cannot run. */
#define UNANSWERED_WARN 4

/* Freeze the world against forks (see `stopping`) and stop it. 0 or -errno; on success the
 * caller ends with world_resume() and `stopping` cleared. With marks back to back (a tiny
 * quarantine floor, two threads freeing), a fork that waited for one to end lost the race to
 * the next one again and again: single forks waited up to 3.6 s (fork_between_stops). A
 * stop lets a waiting fork go first. */
static int stop_world(void) {
    os_giveway_yield(&mark_state.forkers); /* (locks: none yet) */
    for (;;) {
        atomic_store(&mark_state.stopping, 1);
        if (!atomic_load(&mark_state.forking))
            break;
        atomic_store(&mark_state.stopping, 0);
        os_yield(); /* (a fork takes about a millisecond) */
    }
    int err = world_stop();
    if (err) {
        atomic_store(&mark_state.stopping, 0);
        ph_mark_failed();
        /* (which: a test's failure, or a user's statistics, then says why marks were skipped) */
        if (err == -ETIMEDOUT) {
            stats_add(STAT_SCAN_STOPS_TIMED_OUT, 1);
            /* A stop that times out now and then is a thread slow to park; every one for
             * UNANSWERED_WARN seconds is one that never will: said once (signalfd_daemon's
             * shape, with a raw system call no wrapper sees). */
            if (atomic_fetch_add(&mark_state.unanswered, 1) + 1 == UNANSWERED_WARN)
                warn_once("a thread of the program never answers the park signal: it blocks "
                          "it by a raw system call, or reads it from a signalfd", 0);
        } else if (err == -EAGAIN) {
            stats_add(STAT_SCAN_STOPS_REFUSED, 1);
        } else { /* (a thread that blocks the park signal is the program's right; this is not) */
            warn_once(err == -EMFILE ? "no descriptor is left to list the program's threads"
                                     : "cannot list the program's threads in /proc/self/task",
                      err == -EMFILE ? 0 : -err);
        }
        return err;
    }
    atomic_store(&mark_state.unanswered, 0);
    return 0;
}

static void resume_world(void) {
    mark_state.stopped = world_count();
    world_resume();
    atomic_store(&mark_state.stopping, 0);
}

/* The state of a noted object (PHS_*), PHS_NEVER where the note names none. */
static unsigned note_state(uint64_t note, size_t used) {
    size_t i = note_page(note);
    unsigned s = note_slot(note);
    if (i >= used)
        return PHS_NEVER;
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    if (s == NOTE_LARGE)
        return kind == PHK_LARGE ? atomic_load_explicit(&pg->lstate, memory_order_relaxed)
                                 : PHS_NEVER;
    if (kind != PHK_SMALL || s >= pg->nslots)
        return PHS_NEVER;
    return atomic_load_explicit(&ph.meta[i].slot[s], memory_order_relaxed) & PHS_MASK;
}

/* A noted object turns MARKED if it is a candidate: a snapshot child's record (never trusted
 * to name anything else), or sticky_hold's. */
static void mark_cand_note(uint64_t note, size_t used) {
    size_t i = note_page(note);
    unsigned s = note_slot(note);
    if (i >= used)
        return;
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_acquire);
    if (s == NOTE_LARGE && kind == PHK_LARGE) {
        uint32_t cand = PHS_CAND;
        atomic_compare_exchange_strong(&pg->lstate, &cand, PHS_MARKED);
    } else if (kind == PHK_SMALL && s < pg->nslots) {
        _Atomic uint16_t *p = &ph.meta[i].slot[s];
        uint16_t v = atomic_load_explicit(p, memory_order_relaxed);
        if ((v & PHS_MASK) == PHS_CAND) /* (CAND changes only by the mark: a plain store) */
            atomic_store_explicit(p, (uint16_t)((v & ~PHS_MASK) | PHS_MARKED),
                                  memory_order_relaxed);
    }
}

/* Before a release: the objects of sticky_state still quarantined and not marked this time
 * are marked (held), one mark less each; an object no longer quarantined (released by a mark
 * that could not hold it, or handed out again) leaves the table. The world may run: CAND and
 * MARKED change only by the mark. */
static void sticky_hold(size_t used) {
    uint32_t kept = 0;
    for (uint32_t k = 0; k < sticky_state.n; k++) {
        uint64_t note = sticky_state.note[k];
        unsigned st = note_state(note, used);
        if ((st != PHS_CAND && st != PHS_MARKED) || sticky_state.left[k] == 0)
            continue; /* (dropped) */
        if (st == PHS_CAND) {
            sticky_state.left[k]--;
            mark_cand_note(note, used);
        }
        sticky_state.note[kept] = note;
        sticky_state.left[kept++] = sticky_state.left[k];
    }
    sticky_state.n = kept;
}

/* The end of a round, stopped or concurrent, once the world runs again: its figures (stop_ns:
 * how long the world was stopped), then, if the roots were read (err 0), the release of every
 * unmarked candidate of pages [0, used). t0: when the round began (the next is paced by it).
 * once: the round read each root and live object once (a stopped round: not a concurrent
 * one, which reads the pages written meanwhile again), so what it read sets the next
 * trigger (ph_mark_read). */
static uint64_t finish_round(size_t used, int err, uint64_t t0, uint64_t stop_ns, bool once) {
    stats_add(STAT_SCAN_ROUNDS, 1);
    flush_scanned();
    stats_add(STAT_SCAN_BYTES, (int64_t)atomic_load(&mark_state.scanned));
    note_pause(stop_ns / 1000);
    if (err) {
        const char *why = round_failure(err);
        warn_once(why ? why : "cannot read the process's mappings", why ? 0 : -err);
        stats_add(STAT_SCAN_SKIPPED, 1);
        /* The next waits, as after a stop that failed: a round that cannot read (one
         * descriptor left below a hard RLIMIT_NOFILE, where the stop takes it and the round
         * needs a second) would fail again at once, and every free past the trigger paid for
         * a stop (descriptors_one_left: 100-500 times glibc's time). */
        ph_mark_failed();
        return 0;
    }
    /* (the reading's time, from the round's start: scan_bytes / scan_us is the marking rate
     * of every kind of mark, stopped or not) */
    stats_add(STAT_SCAN_US, (int64_t)((os_monotonic_ns() - t0) / 1000));
    if (once)
        ph_mark_read(atomic_load(&mark_state.scanned));
    struct tally t = {0};
    sticky_hold(used);
    release_heap(used, &t, true, false);
    /* The pacing counts the helpers' time too: a mark shared by N threads stops the program
     * for 1/N as long, and the next is not N times as frequent. */
    uint64_t cost = os_monotonic_ns() - t0 + stop_ns * (mark_state.threads - 1);
    ph_after_mark(t.released, t.held, t.released_objects, t.held_objects, t.released_dropped,
                  t.held_dropped, cost, mark_state.stopped);
    return t.released;
}

/* open_tracking: also open the write tracker while the world is stopped (the marker thread:
 * its next rounds are concurrent); its error is returned (0: open, or not asked for). */
static int mark_body_locked(const uintptr_t *saved, bool open_tracking) {
    if (!world_stop || !world_resume || !roots_for_each || !roots_read_guarded) {
        warn_once("this build has no stop-the-world or roots module", 0);
        stats_add(STAT_SCAN_SKIPPED, 1);
        return 0;
    }
    uint64_t t0 = os_monotonic_ns();
    if (stop_world() != 0) {
        stats_add(STAT_SCAN_SKIPPED, 1);
        return 0;
    }
    /* Locks held: the world lock only. The parked threads may hold any other. */
    int track_err = open_tracking ? open_trackers() : 0;
    size_t used = atomic_load_explicit(&ph.used_pages, memory_order_acquire);
    atomic_store(&mark_state.scanned, 0);
    mark_state.printed = 0;
    bool tried = team_tried(used), team = team_for(used, tried);
    int err = mark_stopped(saved, used, team);
    if (err)
        unmark(used, false);
    resume_world();
    uint64_t stop_ns = os_monotonic_ns() - t0;
    if (!err && used)
        note_stop(stop_ns);
    uint64_t released = finish_round(used, err, t0, stop_ns, true);
    team_trial_note(tried && !err, team, t0, released);
    return track_err;
}

/* ---------------------------------------------------------------------------------------
 * The concurrent mark (OSCAR_MARK=auto or concurrent, Linux 6.7+): a thread of Oscar's own
 * marks while the program runs. The heap's pages are write-protected first (os/wtrack.h);
 * the live objects are read with the world running; the pages written meanwhile are read
 * again, once or twice while the world runs, then a last time with the world stopped,
 * together with every root (stacks, registers, globals, mappings) and the pages handed out
 * since the mark began. A pointer to a candidate can then not hide: wherever the program
 * moved it, the place was either read after the move (a root, a written page, a new page)
 * or still holds it.
 *
 * Requests come from free() (mark_run): a futex word counts them, the marker answers each
 * round with `done`. */

enum { CM_UNKNOWN, CM_OFF }; /* CM_OFF: marks are not concurrent here (no tracking, no thread) */
#define MARKER_STACK (1UL << 20)
#define RUNS_MAX 512
#define PIECES_MAX 65536 /* 4 GiB of written heap pages per batch */
#define PIECES_CHUNK 1 /* (a claim per 64 KiB page read costs nothing beside it) */
#define PRECLEAN_ROUNDS 1 /* (two: scanstress 30% slower, hardly shorter stops) */
#define GROWTH_MIN_PAGES 16 /* 1 MiB */


/* Where libc's and the dynamic loader's code lie (set at init; 0, 0 if unknown). Starting a
 * thread takes locks of theirs (the stack cache, the TLS lock): a free() that libc itself made
 * while holding one (a thread's exit freeing its DTV) must not start the marker. */
struct text_range { uintptr_t lo, hi; };

/* The concurrent mark's state. */
static struct {
    int setting; /* OPT_MARK: 0 auto, 1 concurrent, 2 stop, 3 snapshot (set at init) */
    bool verbose;             /* OPT_VERBOSE (set at init) */
    /* OPT_MARK_CONCURRENT_MIB in heap pages (set at init): below it a mark takes a few
     * milliseconds with the world stopped, less than a concurrent round's fixed cost
     * (protecting, listing and unprotecting the pages, the handoff to the marker), and runs
     * on the freeing thread. */
    size_t min_pages;
    /* OPT_MARK_PAUSE_MS in ns (set at init; auto only): once two stopped marks in a row took
     * longer (note_stop), marks go to the marker instead. */
    uint64_t pause_budget_ns;
    /* Stopped rounds in a row that stopped the world longer than the budget (the marking
     * thread), and whether that happened twice: then auto's marks are concurrent from now on
     * (atomic, relaxed: a freeing thread reads it); whether any stopped round ran yet. */
    unsigned over_budget;
    atomic_bool go_concurrent, stopped_once;
    atomic_int state;         /* CM_*: the marker thread and write tracking work */
    atomic_int started;       /* the marker thread was started in this process */
    _Atomic int32_t tid;      /* its thread id (it sets it; 0 before) */
    void *stack;              /* its stack (MARKER_STACK bytes of metadata, once) */
    atomic_bool quit;         /* mark_threads_quit: it leaves at its next wake-up */
    _Atomic uint32_t want;    /* rounds asked for (futex word; the marker waits on it) */
    _Atomic uint32_t done;    /* rounds finished (futex word; an urgent free waits on it) */
    /* Kept open from one round to the next (opened with the world stopped: see wtrack.h),
     * high and close-on-exec; -1 when not open. Marker thread only (and a fork child). */
    struct wtrack wt;         /* the heap's write tracker */
    int pm;                   /* /proc/self/pagemap */
    uint64_t pm_dev, pm_ino;  /* its identity (the program may close or replace it) */
    atomic_int said;          /* say_stopped_marks said it: atomic exchange, once */
    /* The marker thread is being started (marker_started: test and set, lock-free). */
    atomic_flag starting;
    struct text_range libc_text, ldso_text; /* set once at init (find_libc) */
    struct text_range own_text; /* Oscar's own code: set by its first reader, racy but
                                 * idempotent (every thread computes the same) */
    /* Snapshot rounds (the marker thread): why they cannot be had here (say_no_snapshot's
     * reason, 0: they can), said once; the channel from the round's child while it runs (a
     * fork child of the program's unmaps it). */
    int snap_off;
    atomic_int snap_said;
    atomic_bool not_copied; /* mark_note_not_copied was called (any thread) */
    _Atomic(struct cow_chan *) snap_ch;
} cm_state = {.wt = {.fd = -1}, .pm = -1, .starting = ATOMIC_FLAG_INIT};

/* The concurrent mark's tables (all zero: .bss, apart from cm_state's initialised fields). */
static struct {
    struct wtrack_run runs[RUNS_MAX]; /* PAGEMAP_SCAN's answers (marker only) */
    /* The written runs of a round's last stop cut at heap page boundaries, for the team
     * (scan/team.h): pieces [0, npieces); the team's jobs read them (1 MiB of .bss, touched
     * only as far as used). */
    struct { uintptr_t lo, hi; } pieces[PIECES_MAX];
    size_t npieces;
    /* A snapshot round's batch of words: the child's (its copy) to send, the marker's to
     * take (32 KiB). */
    uint64_t snap_words[COW_WORDS];
} cm_buf_state;

static void say_stopped_marks(int err) {
    if ((cm_state.setting != 1 && !cm_state.verbose) || atomic_exchange(&cm_state.said, 1))
        return;
    char buf[256];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_MARK_STOPPED);
    fmt_str(&f, err == EPERM    ? "userfaultfd is not allowed here"
                : err == EAGAIN ? "the marking thread could not be started"
                                : "this kernel has no asynchronous write-protect (Linux 6.7+)");
    fmt_str(&f, ", errno ");
    fmt_i64(&f, err);
    fmt_str(&f, "): every mark stops the world while it reads the heap\n");
    fmt_flush(&f, 2);
}

static bool pagemap_valid(void) {
    uint64_t dev, ino;
    return cm_state.pm >= 0 && os_fd_id(cm_state.pm, &dev, &ino) == 0 &&
           dev == cm_state.pm_dev && ino == cm_state.pm_ino;
}

/* With the world stopped (no thread of the program opens a descriptor meanwhile): the write
 * tracker and the pagemap descriptor, if not open or no longer ours. 0 or an errno value. */
static int open_trackers(void) {
    if (!wtrack_valid(&cm_state.wt)) {
        int err = wtrack_open(&cm_state.wt);
        if (err)
            return err;
    }
    if (!pagemap_valid()) {
        long pm = os_open_read_stopped("/proc/self/pagemap");
        if (pm < 0)
            return (int)-pm;
        cm_state.pm = os_fd_out_of_way((int)pm);
        if (os_fd_id(cm_state.pm, &cm_state.pm_dev, &cm_state.pm_ino) != 0) {
            os_close(cm_state.pm);
            cm_state.pm = -1;
            return EBADF;
        }
    }
    return 0;
}

/* Each run of the pages of [0, used) written since they were protected (reprotect: protect
 * them again in the same step, for the next call), to fn. The number of written runs, or -1:
 * the tracking was lost (every page must be read again). */
static long each_written(int pagemap_fd, size_t used, bool reprotect,
                         void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg) {
    uintptr_t from = ph.lo, hi = ph_page_base(used);
    long total = 0;
    while (from < hi) {
        long n = wtrack_written(pagemap_fd, &from, hi, cm_buf_state.runs, RUNS_MAX, reprotect);
        if (n < 0)
            return -1;
        for (long k = 0; k < n; k++)
            fn(cm_buf_state.runs[k].lo, cm_buf_state.runs[k].hi, arg);
        total += n;
        if (n < RUNS_MAX && from < hi && n == 0)
            break;
    }
    return total;
}

/* rescan_written's reading of one run (done_page: scan_written's last small page). */
struct rescan { size_t used, done_page; };
static void rescan_run(uintptr_t lo, uintptr_t hi, void *arg) {
    struct rescan *r = arg;
    scan_written(lo, hi, r->used, &r->done_page);
}

/* Read again the live objects on the pages of [0, used) written since they were protected
 * (reprotect: as each_written). The number of written runs, or -1 as there. */
static long rescan_written(int pagemap_fd, size_t used, bool reprotect) {
    struct rescan r = {used, (size_t)-1};
    return each_written(pagemap_fd, used, reprotect, rescan_run, &r);
}

/* A team job: pieces [first, last) of cm_buf_state.pieces. */
static void pieces_job(size_t first, size_t last) {
    size_t done_page = (size_t)-1; /* (another thread may read the same small page: harmless) */
    for (size_t k = first; k < last; k++)
        scan_written(cm_buf_state.pieces[k].lo, cm_buf_state.pieces[k].hi, mark_state.used,
                     &done_page);
    flush_scanned();
}

/* rescan_written_team's state: not_roots' count, whether the roots were read, and
 * roots_for_each's answer. */
struct pieces { size_t nex; bool roots_read; int *err; };

/* The pieces listed so far, read by the team; with the first batch, the roots, by this
 * thread while the helpers read pieces. */
static void pieces_flush(struct pieces *c) {
    team_begin(pieces_job, cm_buf_state.npieces, PIECES_CHUNK);
    if (!c->roots_read) {
        *c->err = roots_for_each(scan_root, NULL, mark_state.ex, c->nex, 0);
        mark_state.name = NULL;
        c->roots_read = true;
    }
    team_finish();
    cm_buf_state.npieces = 0;
}

/* One written run, cut at heap page boundaries into pieces (a full table is read first). */
static void add_pieces(uintptr_t lo, uintptr_t hi, void *arg) {
    for (uintptr_t a = lo; a < hi;) {
        uintptr_t next = ph_page_base(ph_index(a) + 1);
        if (next > hi)
            next = hi;
        if (cm_buf_state.npieces == PIECES_MAX)
            pieces_flush(arg);
        cm_buf_state.pieces[cm_buf_state.npieces].lo = a;
        cm_buf_state.pieces[cm_buf_state.npieces++].hi = next;
        a = next;
    }
}

/* The last stop's roots and rescan_written (without reprotecting), shared by the team: the
 * written runs are cut into pieces of one heap page at most, read a batch at a time by all,
 * the first batch beside the roots (*err: roots_for_each's answer). The number of written
 * runs, or -1 as there (what was listed is read anyway, and the roots always are). */
static long rescan_written_team(int pagemap_fd, size_t used, size_t nex, int *err) {
    struct pieces c = {nex, false, err};
    mark_state.used = used;
    cm_buf_state.npieces = 0;
    long n = each_written(pagemap_fd, used, false, add_pieces, &c);
    pieces_flush(&c);
    return n;
}

/* One concurrent round, on the marker thread. false: the trackers are not open (the caller
 * runs a stopped round, which opens them) or cannot protect the heap; nothing was changed. */
static bool concurrent_round(void) {
    uint64_t t0 = os_monotonic_ns();
    size_t used = atomic_load_explicit(&ph.used_pages, memory_order_acquire);
    if (!used)
        return true;
    if (!wtrack_valid(&cm_state.wt) || !pagemap_valid() ||
        wtrack_protect(&cm_state.wt, ph.lo, used << PH_PAGE_SHIFT, true) != 0)
        return false;
    atomic_store(&mark_state.scanned, 0);
    mark_state.printed = 0;
    held_reset();
    candidates(0, used);
    mark_state.name = NULL;
    scan_heap(0, used, used); /* (the world running) */
    /* Pages handed out meanwhile (a heap that grows fast): protected and read with the world
     * running too, a few times, so that the stop reads only the last of them. */
    size_t tracked = used;
    for (int g = 0; g < 4; g++) {
        size_t grown = atomic_load_explicit(&ph.used_pages, memory_order_acquire);
        if (grown - tracked < GROWTH_MIN_PAGES ||
            wtrack_protect(&cm_state.wt, ph_page_base(tracked), (grown - tracked) << PH_PAGE_SHIFT,
                           true) != 0)
            break;
        scan_heap(tracked, grown, grown);
        tracked = grown;
    }
    bool lost = false;
    for (int r = 0; r < PRECLEAN_ROUNDS && !lost; r++) {
        long n = rescan_written(cm_state.pm, tracked, true);
        lost = n < 0;
        if (n < 16)
            break;
    }
    size_t nex = not_roots();
    uint64_t s0 = os_monotonic_ns();
    int err = stop_world();
    if (err) {
        wtrack_protect(&cm_state.wt, ph.lo, tracked << PH_PAGE_SHIFT, false);
        unmark(used, false);
        stats_add(STAT_SCAN_SKIPPED, 1);
        return true;
    }
    /* Stopped: every root; the written pages; the pages handed out since the round began.
     * (Locks held: the world lock only. The parked threads may hold any other.) */
    bool team = !mark_state.dangling && team_helpers() && !lost;
    mark_state.threads = team ? 1 + team_helpers() : 1;
    if (team) {
        stats_add(STAT_SCAN_TEAM_ROUNDS, 1);
        lost = rescan_written_team(cm_state.pm, tracked, nex, &err) < 0;
    } else {
        err = roots_for_each(scan_root, NULL, mark_state.ex, nex, 0);
        mark_state.name = NULL;
        if (!err && !lost)
            lost = rescan_written(cm_state.pm, tracked, false) < 0;
    }
    size_t now = atomic_load_explicit(&ph.used_pages, memory_order_acquire);
    if (!err)
        scan_heap(lost ? 0 : tracked, now, now);
    if (!err)
        reread_shared(nex);
    /* (The freed objects marked, as they are now: one the program wrote to meanwhile is read
     * after the write.) */
    if (!err)
        held_read(now);
    if (!err && lost)
        open_trackers(); /* (the program closed one: the next round opens it again) */
    if (err)
        unmark(used, false);
    resume_world();
    uint64_t s1 = os_monotonic_ns();
    wtrack_protect(&cm_state.wt, ph.lo, tracked << PH_PAGE_SHIFT, false);
    stats_add(STAT_SCAN_CONCURRENT_ROUNDS, 1);
    finish_round(used, err, t0, s1 - s0, false);
    team_trial_note(false, false, t0, 0); /* (a concurrent or snapshot round: no leg's) */
    return true;
}

/* The trackers, opened in a stop of their own if they are not open (the first round of a
 * process, or the program closed one): a few system calls, not a whole mark. 0 or an errno
 * value; EAGAIN when the world could not be stopped (then a stopped round tries again). */
static int open_trackers_stopped(void) {
    if (wtrack_valid(&cm_state.wt) && pagemap_valid())
        return 0;
    uint64_t t0 = os_monotonic_ns();
    if (stop_world() != 0)
        return EAGAIN;
    int err = open_trackers(); /* (locks held: the world lock only) */
    resume_world();
    note_pause((os_monotonic_ns() - t0) / 1000);
    return err == EAGAIN ? EIO : err;
}

/* ---------------------------------------------------------------------------------------
 * The snapshot mark (OSCAR_MARK=snapshot). The world stops only while the process is copied
 * (os/cowchild.h: its page tables, 35-140 ns per resident page here, 10-18 ms for
 * scanstress's 390 MiB) and while what a copy would not
 * hold as it was is read: shared memory and the kernel's roots. The child reads everything
 * else in its copy, every private page, stack and register as they were in the stop, and
 * sends back the candidates it found pointed to. No last stop: a pointer to a candidate that
 * the program holds later was copied from somewhere (a candidate was freed before the stop,
 * so nothing makes a new one), and following the copies back, some place held it in the stop,
 * where either this thread or the child read it. The price: the kernel copies each page the
 * program first writes while the child lives (~5 us a page here), and those copies are
 * memory until the child is done. */

#define SNAP_CHUNK_PAGES 64 /* heap pages the child reads, then drops (4 MiB) */
#define SNAP_TIMEOUT_NS (60ULL * 1000 * 1000 * 1000) /* a child silent this long is killed */

/* The child: add w to the batch in cm_buf_state.snap_words (n words so far), sent first if
 * it is full; the new count. */
static unsigned snapshot_put(struct cow_child *c, unsigned n, uint64_t w) {
    if (n == COW_WORDS) {
        cow_child_send(c, cm_buf_state.snap_words, n, false);
        n = 0;
    }
    cm_buf_state.snap_words[n] = w;
    return n + 1;
}

/* The child's answer so far: its batch holds n records. */
struct snapshot_out {
    struct cow_child *c;
    unsigned n;
};

static void snapshot_note(uint64_t note, void *arg) {
    struct snapshot_out *o = arg;
    o->n = snapshot_put(o->c, o->n, note);
}

/* Does [p, p + len) hold anything but zeros? */
static bool written(const uint64_t *p, size_t len) {
    uint64_t any = 0;
    for (size_t k = 0; k < len / sizeof *p; k++)
        any |= p[k];
    return any != 0;
}

/* A page the child keeps once read: a candidate there (a large one: its whole run) may be
 * found pointed to later on, and then be read (held_read). A small candidate was zeroed
 * when freed: unless a use after free wrote into it since, it holds nothing to read, and its
 * page goes (scanstress at 200 MiB live, where every page holds candidates: the child's
 * copies 268 MB when it kept them all). */
static bool snapshot_keeps(size_t i) {
    struct ph_page *pg = &ph.pages[i];
    unsigned kind = atomic_load_explicit(&pg->kind, memory_order_relaxed);
    if (kind == PHK_TAIL)
        return pg->run <= i && page_has_cand(i - pg->run);
    if (!page_has_cand(i))
        return false;
    if (kind != PHK_SMALL || !small_geometry(pg))
        return true;
    for (unsigned w = 0; w < pg->nwords; w++) {
        uint64_t cand, marked;
        word_states(ph.meta[i].slot, w, pg->nslots, PHS_CAND, PHS_MARKED, &cand, &marked);
        for (uint64_t m = cand | marked; m; m &= m - 1) {
            unsigned s = w * 64 + (unsigned)__builtin_ctzll(m);
            if (written((const uint64_t *)(ph_page_base(i) + (uintptr_t)s * pg->slot_size),
                        pg->slot_size))
                return true;
        }
    }
    return false;
}

/* The child's copy of pages [first, last), read, dropped but for what snapshot_keeps. */
static void snapshot_drop(size_t first, size_t last) {
    size_t from = first;
    for (size_t i = first; i <= last; i++) {
        if (i < last && !snapshot_keeps(i))
            continue;
        if (i > from)
            os_drop((void *)ph_page_base(from), (i - from) << PH_PAGE_SHIFT);
        from = i + 1;
    }
}

/* The child: read the copy, send (page << 16 | slot) for each candidate marked; the last
 * batch ends with the bytes read and the most memory the child held alone (its private dirty
 * memory: the old contents of pages the program wrote meanwhile, sampled). The candidates lie
 * in pages [0, used); the live objects to read in [0, upto), the pages handed out until the
 * copy was made. Never returns. */
__attribute__((noreturn)) static void snapshot_child(struct cow_child *c, size_t used, size_t upto,
                                                    size_t nex) {
    if (roots_for_each_of(ROOTS_PRIVATE, scan_root, NULL, mark_state.ex, nex, 0) != 0)
        cow_child_exit(2);
    mark_state.name = NULL;
    /* The heap a chunk at a time, each chunk's copy dropped once read (but for pages with
     * a candidate a use after free wrote into: snapshot_keeps): a page the program writes
     * after that is no longer shared with the child, and the kernel gives it back to the
     * program without copying it (fewer copies: time, and the child's memory). A large
     * object is read whole from the chunk it begins in. */
    uint64_t copied = 0, now;
    for (size_t first = 0; first < upto; first += SNAP_CHUNK_PAGES) {
        size_t last = upto - first < SNAP_CHUNK_PAGES ? upto : first + SNAP_CHUNK_PAGES;
        scan_heap(first, last, upto);
        /* (Its copies' peak, sampled: reading the figure walks the child's page tables.) */
        if (first % (16 * SNAP_CHUNK_PAGES) == 0 &&
            os_proc_bytes("/proc/self/smaps_rollup", "Private_Dirty:", &now) == 0 && now > copied)
            copied = now;
        snapshot_drop(first, last);
    }
    held_read(used); /* (on the pages snapshot_drop kept) */
    flush_scanned();
    struct snapshot_out out = {c, 0};
    each_marked(used, snapshot_note, &out);
    unsigned n = out.n;
    if (os_proc_bytes("/proc/self/smaps_rollup", "Private_Dirty:", &now) == 0 && now > copied)
        copied = now;
    if (n > COW_WORDS - 2) { /* (the last batch ends with both figures) */
        cow_child_send(c, cm_buf_state.snap_words, n, false);
        n = 0;
    }
    n = snapshot_put(c, n, atomic_load(&mark_state.scanned));
    n = snapshot_put(c, n, copied);
    cow_child_send(c, cm_buf_state.snap_words, n, true);
    cow_child_exit(0);
}

/* The child's answer, applied as it comes. true: all of it came, and the child ended well. */
static bool snapshot_answer(struct cow_child *c, size_t used) {
    uint64_t *buf = cm_buf_state.snap_words;
    bool last = false;
    long n = 0;
    while (!last) {
        n = cow_child_take(c, buf, &last, SNAP_TIMEOUT_NS);
        if (n < 0)
            break;
        long records = last ? n - 2 : n;
        for (long j = 0; j < records; j++)
            mark_cand_note(buf[j], used);
    }
    bool whole = last && n >= 2;
    if (whole) {
        atomic_fetch_add(&mark_state.scanned, buf[n - 2]);
        stats_raise_peak(STAT_PEAK_SNAPSHOT_COPY_BYTES, buf[n - 1]);
    }
    atomic_store(&cm_state.snap_ch, NULL);
    return cow_child_end(c, !whole) && whole;
}

/* Why snapshot rounds cannot be had here: a negative errno (no child could be made), or one
 * of these. Said once; the rounds are concurrent or stopped from then on. */
enum { SNAP_DANGLING = 1, SNAP_SECCOMP = 2, SNAP_NOT_COPIED = 3 };
static void say_no_snapshot(int why) {
    cm_state.snap_off = why;
    if (atomic_exchange(&cm_state.snap_said, 1))
        return;
    char buf[256];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_SNAPSHOT_OFF);
    if (why == SNAP_DANGLING)
        fmt_str(&f, "OSCAR_DANGLING=report names pointers from one thread");
    else if (why == SNAP_SECCOMP)
        fmt_str(&f, "a seccomp filter is on, and it might kill a process that makes a child");
    else if (why == SNAP_NOT_COPIED)
        fmt_str(&f, "the program keeps memory that a child does not get as it is: "
                    "MADV_DONTFORK, MADV_WIPEONFORK or shared memory mapped over its heap");
    else {
        fmt_str(&f, "no child process could be made, errno ");
        fmt_i64(&f, -why);
    }
    fmt_str(&f, "): marks are concurrent or stopped instead\n");
    fmt_flush(&f, 2);
}

/* A snapshot round (the marker thread). false: none can be had here (the caller marks
 * another way). */
static bool snapshot_round(void) {
    if (!cm_state.snap_off) {
        if (mark_state.dangling)
            say_no_snapshot(SNAP_DANGLING);
        else if (atomic_load(&cm_state.not_copied))
            say_no_snapshot(SNAP_NOT_COPIED);
    }
    if (cm_state.snap_off)
        return false;
    uint64_t t0 = os_monotonic_ns();
    size_t used = atomic_load_explicit(&ph.used_pages, memory_order_acquire);
    if (!used)
        return true;
    atomic_store(&mark_state.scanned, 0);
    mark_state.printed = 0;
    mark_state.threads = 1;
    held_reset();
    candidates(0, used); /* (the world running: objects freed from here on wait) */
    size_t nex = not_roots();
    uint64_t s0 = os_monotonic_ns();
    if (stop_world() != 0) {
        unmark(used, false);
        stats_add(STAT_SCAN_SKIPPED, 1);
        return true;
    }
    /* A seccomp filter may be installed at any time: asked in each round's stop (where no
     * thread of the program closes the descriptor under the reading, or opens one beside
     * it: tests/programs/lowest_descriptor.c). Unreadable (no descriptor left below the
     * hard limit), this round is another kind. */
    uint64_t seccomp = 0;
    int unknown = os_proc_value("/proc/self/status", "Seccomp:", &seccomp);
    if (unknown || seccomp) {
        unmark(used, false);
        resume_world();
        if (!unknown)
            say_no_snapshot(SNAP_SECCOMP);
        return false;
    }
    /* Stopped. Locks held: the world lock only; the parked threads may hold any other, and
     * the child takes none (it runs on this thread's copy alone). */
    int err = roots_for_each_of(ROOTS_SHARED | ROOTS_KERNEL, scan_root, NULL, mark_state.ex,
                                nex, 0);
    mark_state.name = NULL;
    /* Pages handed out since `used` was read (the world ran through candidates()) hold live
     * objects too: one may hold the only pointer to a candidate by now. */
    size_t now = atomic_load_explicit(&ph.used_pages, memory_order_acquire);
    struct cow_child c = {-1, NULL};
    int r = err ? 0 : cow_child_start(&c, "oscar-snapshot");
    if (!err && r == 0)
        snapshot_child(&c, used, now, nex);
    if (r > 0) {
        atomic_store(&cm_state.snap_ch, c.ch);
        reread_shared(nex); /* (after the copy: the child's reading is its own) */
        held_read(used);
    }
    resume_world();
    uint64_t stop_ns = os_monotonic_ns() - s0;
    if (!err && r < 0) {
        unmark(used, false);
        note_pause(stop_ns / 1000);
        say_no_snapshot(r);
        return false;
    }
    if (!err && !snapshot_answer(&c, used))
        err = -ECHILD;
    if (err)
        unmark(used, false);
    stats_add(STAT_SCAN_SNAPSHOT_ROUNDS, 1);
    finish_round(used, err, t0, stop_ns, false);
    team_trial_note(false, false, t0, 0); /* (a concurrent or snapshot round: no leg's) */
    return true;
}

#define MARKER_IDLE_NS 250000000ull

static void *marker_main(void *arg) {
    (void)arg;
    in_mark = 1; /* (this thread does nothing else) */
    atomic_store(&cm_state.tid, (int32_t)os_gettid());
    for (;;) {
        uint32_t d = atomic_load(&cm_state.done);
        while (atomic_load(&cm_state.want) == d)
            /* Idle: leave once the program's threads are all gone (team.c's helpers do too:
             * glibc ends the process when its last pthread exits, Oscar's included). */
            if (os_futex_wait(&cm_state.want, d, MARKER_IDLE_NS) == ETIMEDOUT &&
                atomic_load(&cm_state.want) == d && world_only_own_threads(os_threads_own())) {
                os_thread_leaving();
                return NULL;
            }
        uint32_t w = atomic_load(&cm_state.want);
        if (atomic_load(&cm_state.quit)) {
            os_thread_leaving();
            return NULL;
        }
        if (!atomic_exchange_explicit(&mark_state.marking, 1, memory_order_acquire)) {
            if (!(cm_state.setting == 3 && snapshot_round())) {
                int err = open_trackers_stopped();
                if (err || !concurrent_round()) {
                    /* A round with the world stopped (this thread's stack is Oscar's
                     * metadata, no root), which opens the trackers while it is stopped. */
                    err = mark_body_locked(NULL, true);
                    if (err) {
                        atomic_store(&cm_state.state, CM_OFF);
                        say_stopped_marks(err);
                    }
                }
            }
            release_marking();
        }
        atomic_store(&cm_state.done, w);
        os_futex_wake(&cm_state.done, 1 << 30);
    }
    return NULL;
}

/* The span of an object's executable segments, loaded at bias. */
static struct text_range exec_segments(uintptr_t bias, const ElfW(Phdr) *ph, unsigned n) {
    struct text_range r = {0, 0};
    for (unsigned i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
            uintptr_t lo = bias + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
            if (!r.lo || lo < r.lo)
                r.lo = lo;
            if (hi > r.hi)
                r.hi = hi;
        }
    return r;
}

/* The executable segments of the object whose ELF header is mapped at base. */
static struct text_range text_of(uintptr_t base) {
    struct text_range r = {0, 0};
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
    if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return r;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff);
    uintptr_t first = UINTPTR_MAX;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first)
            first = ph[i].p_vaddr;
    return exec_segments(base - (first & ~(OSCAR_PAGE - 1)), ph, eh->e_phnum);
}

/* libc is found by its name, not by the address of one of its functions: a program may define
 * that function itself (its own pthread_create, which wraps libc's), and its text would then
 * pass for libc's: no call would come from outside libc, and no helper or marker start
 * (protect_team_slow_start). */
static int libc_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    const char *name = info->dlpi_name, *slash = name ? strrchr(name, '/') : NULL;
    if (!name || strcmp(slash ? slash + 1 : name, "libc.so.6") != 0)
        return 0;
    cm_state.libc_text = exec_segments(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum);
    return 1;
}

static void find_libc(void) {
    unwind_iterate_modules(libc_object, NULL);
    cm_state.ldso_text = text_of((uintptr_t)getauxval(AT_BASE));
}

static inline bool in_text(uintptr_t a, struct text_range r) { return a - r.lo < r.hi - r.lo; }

/* The code that called into Oscar (the first return address outside Oscar's frames, which all
 * keep frame pointers) is not libc's or the loader's: none of their locks is held by this
 * thread. */
__attribute__((noinline)) static bool called_from_outside_libc(void) {
    if (!cm_state.libc_text.lo || !cm_state.ldso_text.lo)
        return false;
    if (!cm_state.own_text.lo) {
        extern const char __ehdr_start[] __attribute__((visibility("hidden")));
        cm_state.own_text = text_of((uintptr_t)__ehdr_start);
    }
    const uintptr_t *fp = __builtin_frame_address(0);
    for (int depth = 0; depth < 24 && fp; depth++) {
        uintptr_t ret = fp[1];
        if (!in_text(ret, cm_state.own_text))
            return !in_text(ret, cm_state.libc_text) && !in_text(ret, cm_state.ldso_text);
        const uintptr_t *next = (const uintptr_t *)fp[0];
        if (next <= fp || (uintptr_t)next - (uintptr_t)fp > (1UL << 20))
            return false;
        fp = next;
    }
    return false;
}

/* Start the marker thread once per process (a fork child starts its own), from a call the
 * program made (see called_from_outside_libc). */
static bool marker_started(void) {
    if (atomic_load_explicit(&cm_state.started, memory_order_acquire))
        return true;
    if (!called_from_outside_libc())
        return false;
    if (atomic_flag_test_and_set(&cm_state.starting))
        return false; /* another thread is starting it: mark here this time */
    bool ok = false;
    int err;
    if (!cm_state.stack) /* (metadata: never a root; reused by a fork child, or a restart) */
        cm_state.stack = os_alloc_meta(MARKER_STACK, &err);
    void *stack = cm_state.stack;
    if (stack) {
        sigset_t open;
        sigemptyset(&open);
        sigaddset(&open, SIGSEGV);
        sigaddset(&open, SIGBUS);
        sigaddset(&open, world_park_signal());
        ok = os_thread_start(marker_main, NULL, stack, MARKER_STACK, &open, "oscar-mark") == 0;
    }
    if (ok) {
        atomic_store_explicit(&cm_state.started, 1, memory_order_release);
    } else {
        atomic_store(&cm_state.state, CM_OFF);
        say_stopped_marks(EAGAIN);
        /* (snapshot marks asked for: their child would need a task as well, which RLIMIT_NPROC
         * may not leave, os/ownthread.c) */
        if (cm_state.setting == 3)
            say_no_snapshot(-EAGAIN);
    }
    atomic_flag_clear(&cm_state.starting);
    return ok;
}

bool mark_threads_quit(void) {
    /* Holding the mark: a round in progress ends first, and none begins. */
    while (atomic_exchange_explicit(&mark_state.marking, 1, memory_order_acquire))
        os_yield();
    bool ok = team_quit();
    while (atomic_flag_test_and_set(&cm_state.starting))
        os_yield(); /* (a marker_started in progress ends first) */
    if (atomic_load(&cm_state.started)) {
        int32_t tid;
        atomic_store(&cm_state.quit, true);
        atomic_fetch_add(&cm_state.want, 1);
        os_futex_wake(&cm_state.want, 1);
        while (!(tid = atomic_load(&cm_state.tid)))
            os_yield(); /* (started, not yet running: it will see quit) */
        ok &= os_thread_gone(tid, 1000000000ull);
        atomic_store(&cm_state.tid, 0);
        atomic_store(&cm_state.quit, false);
        atomic_store(&cm_state.done, atomic_load(&cm_state.want));
        os_futex_wake(&cm_state.done, 1 << 30);
        atomic_store(&cm_state.started, 0); /* (the next concurrent round starts another) */
    }
    atomic_flag_clear(&cm_state.starting);
    release_marking();
    return ok;
}

/* A stopped round stopped the world stop_ns (what the next ones would cost: stop_too_long). */
static void note_stop(uint64_t stop_ns) {
    atomic_store_explicit(&cm_state.stopped_once, true, memory_order_relaxed);
    cm_state.over_budget = stop_ns > cm_state.pause_budget_ns ? cm_state.over_budget + 1 : 0;
    if (cm_state.over_budget >= 2)
        atomic_store_explicit(&cm_state.go_concurrent, true, memory_order_relaxed);
}

/* OSCAR_MARK=auto: do marks with the world stopped take longer than OSCAR_MARK_PAUSE_MS? Two
 * in a row did (one may be a machine's hiccup), or, before any, the heap is so large that
 * reading it at 2 GB/s (what stopped marks read here: 1.6-2 GB/s) would take twice as long.
 * A concurrent round costs the program more in all (every first write to a protected page
 * faults; pages written meanwhile are read twice), and on heaps of tens of MiB its last stop
 * was measured longer than a whole stopped mark (it re-reads every page written meanwhile), so
 * smaller heaps keep stopped marks. Once concurrent, marks stay so (the heap never shrinks). */
static bool stop_too_long(size_t used) {
    if (!cm_state.pause_budget_ns ||
        atomic_load_explicit(&cm_state.go_concurrent, memory_order_relaxed))
        return true;
    return !atomic_load_explicit(&cm_state.stopped_once, memory_order_relaxed) &&
           (uint64_t)used << PH_PAGE_SHIFT > 4 * cm_state.pause_budget_ns; /* (2 bytes/ns, 2x) */
}

/* Hand the round to the marker thread. false: marks are not concurrent here (the caller
 * marks itself). An urgent caller (the quarantine far past its trigger) waits for the round. */
static bool concurrent_request(void) {
    size_t used = atomic_load_explicit(&ph.used_pages, memory_order_relaxed);
    if (cm_state.setting == 2 ||
        atomic_load_explicit(&cm_state.state, memory_order_relaxed) == CM_OFF || in_mark ||
        !world_park_signal || used < cm_state.min_pages ||
        (cm_state.setting == 0 && !stop_too_long(used)))
        return false;
    if (!marker_started())
        return false; /* (this time, the caller marks) */
    uint32_t d = atomic_load(&cm_state.done), w = atomic_load(&cm_state.want);
    if (w == d && atomic_compare_exchange_strong(&cm_state.want, &w, d + 1)) {
        w = d + 1;
        os_futex_wake(&cm_state.want, 1);
    }
    if (ph_quarantine_urgent())
        while ((int32_t)(atomic_load(&cm_state.done) - w) < 0 &&
               atomic_load(&cm_state.state) != CM_OFF)
            os_futex_wait(&cm_state.done, atomic_load(&cm_state.done), 50 * 1000 * 1000);
    return true;
}

void mark_wait(void) {
    if (!concurrent_request())
        mark_run();
    else {
        uint32_t w = atomic_load(&cm_state.want);
        for (int k = 0; k < 200 && (int32_t)(atomic_load(&cm_state.done) - w) < 0 &&
                        atomic_load(&cm_state.state) != CM_OFF; k++)
            os_futex_wait(&cm_state.done, atomic_load(&cm_state.done), 50 * 1000 * 1000);
    }
}

void mark_init(void) {
    mark_state.dangling = options_int(OPT_DANGLING) == 1;
    words_init();
    cm_state.setting = (int)options_int(OPT_MARK);
    find_libc(); /* (the marker thread and the team's helpers are started only outside it) */
    cm_state.verbose = options_int(OPT_VERBOSE) != 0;
    cm_state.min_pages = ((size_t)options_int(OPT_MARK_CONCURRENT_MIB) << 20) >> PH_PAGE_SHIFT;
    cm_state.pause_budget_ns = (uint64_t)options_int(OPT_MARK_PAUSE_MS) * 1000000;
    team_init((unsigned)options_int(OPT_MARK_THREADS));
    int err;
    mark_state.cand_pages =
        os_alloc_meta(align_up((ph.hi - ph.lo) >> PH_PAGE_SHIFT, 64) / 8 + 8, &err);
}

bool mark_fork_prepare(void) {
    /* No wait for a mark in progress on another thread: the child undoes it (waiting for a
     * whole mark made every fork of a busy process slow). */
    if (in_mark)
        return false; /* (a handler forking on the marking thread: nothing may be taken) */
    for (bool waits = false;;) {
        atomic_fetch_add(&mark_state.forking, 1);
        if (!atomic_load(&mark_state.stopping)) {
            if (waits)
                os_giveway_wait_ends(&mark_state.forkers);
            return true;
        }
        atomic_fetch_sub(&mark_state.forking, 1);
        if (!waits)
            os_giveway_wait_begins(&mark_state.forkers);
        waits = true;
        while (atomic_load(&mark_state.stopping))
            os_yield(); /* (parked here if the stop goes ahead) */
    }
}

void mark_fork_parent(void) { atomic_fetch_sub(&mark_state.forking, 1); }

void mark_note_not_copied(void) { atomic_store(&cm_state.not_copied, true); }

void mark_fork_child(void) {
    team_fork_child(); /* (its helpers are the parent's) */
    os_threads_fork_child(); /* (and the marker thread) */
    atomic_store(&mark_state.forking, 0);
    atomic_store(&mark_state.stopping, 0);
    os_giveway_fork_child(&mark_state.forkers);
    /* The marker thread is not in the child: the child starts its own at its first mark. The
     * parent's write tracker is not the child's (its registrations are not inherited). */
    if (atomic_load(&cm_state.started)) {
        atomic_store(&cm_state.started, 0);
        wtrack_close(&cm_state.wt); /* (the parent's: no range of the child is registered) */
        if (pagemap_valid())
            os_close(cm_state.pm); /* (the parent's pagemap) */
        cm_state.pm = -1;
        struct cow_chan *ch = atomic_exchange(&cm_state.snap_ch, NULL);
        if (ch)
            cow_child_forget(ch); /* (the parent's snapshot channel) */
        atomic_store(&cm_state.done, atomic_load(&cm_state.want));
    }
    if (in_mark || !atomic_load_explicit(&mark_state.marking, memory_order_acquire))
        return;
    /* Another thread was marking; it does not exist here. Its candidates go back to the
     * quarantine (a slot it had released but not yet published stays unused here). */
    unmark(atomic_load_explicit(&ph.used_pages, memory_order_acquire), true);
    atomic_store_explicit(&mark_state.marking, 0, memory_order_release);
}
