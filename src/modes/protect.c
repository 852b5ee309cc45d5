/* protect: see protect.h. */
#define _GNU_SOURCE
#include "modes/protect.h"
#include "modes/off.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "base/options.h"
#include "base/stats.h"
#include "heap/protect_heap.h"
#include "heap/sample.h"
#include "modes/foreign.h"
#include "report/fault.h"
#include "scan/mark.h"
#include "scan/mqlog.h"
#include "scan/world.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#pragma weak world_init

int protect_mode_state;
/* Protect mode's own state. */
static struct {
    /* OSCAR_ALLOC_DEALLOC_MISMATCH, OSCAR_NEW_DELETE_TYPE_MISMATCH: set once at init */
    bool check_kind, check_size;
} protect_state;

#define MODE_PROTECT 2 /* index of "protect" in OSCAR_MODE's choices (base/options.def) */

static void sample_off_warning(int err) {
    char buf[160];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_SAMPLE_OFF);
    fmt_str(&f, "cannot reserve the sample pool, errno ");
    fmt_i64(&f, err);
    fmt_str(&f, ")\n");
    fmt_flush(&f, 2);
}

bool protect_select(void) {
    bool on = options_int(OPT_MODE) == MODE_PROTECT;
    if (on) {
        int err = protect_heap_init();
        if (err) {
            off_enter("protect mode cannot reserve its heap (a smaller OSCAR_PROTECT_HEAP_GIB "
                      "may fit)", err);
            return true;
        }
        if (world_init && (err = world_init()) != 0) {
            off_enter("protect mode cannot set up the stop of the world", -err);
            return true;
        }
        mark_init();
        fault_init();
        protect_state.check_kind = options_int(OPT_ALLOC_DEALLOC_MISMATCH) != 0;
        protect_state.check_size = options_int(OPT_NEW_DELETE_TYPE_MISMATCH) != 0;
        int serr = sample_init();
        if (serr)
            sample_off_warning(serr);
        if (options_int(OPT_STATS_SIGNAL))
            fault_init_stats_signal((int)options_int(OPT_STATS_SIGNAL));
    }
    __atomic_store_n(&protect_mode_state, on ? 2 : 1, __ATOMIC_RELEASE);
    return on;
}

/* fork: the heap's locks (a mark in progress on another thread is undone in the child); the
 * child keeps only the forking thread's cache. A fork from a signal handler that interrupted
 * this thread's own mark takes nothing (the child then inherits the mark as it is, and
 * finishes it when the handler returns, if it does). */
static __thread int fork_took __attribute__((tls_model("initial-exec")));
static void fork_prepare(void) {
    fork_took = mark_fork_prepare();
    if (fork_took)
        ph_fork_prepare();
}
static void fork_parent(void) {
    if (fork_took) {
        ph_fork_parent();
        mark_fork_parent();
    }
}
static void fork_child(void) {
    if (fork_took) {
        ph_fork_child();
        mark_fork_child();
    }
    /* The child is a process of its own: without this its world kept the parent's pid, took
     * itself for a vfork child, and an exec went ahead of a stop's request, which killed the
     * new image (exec_during_first_mark). */
    world_fork_child();
    mqlog_fork_child();
    stats_add(STAT_FORKS, 1);
}

void protect_fork_init(void) { pthread_atfork(fork_prepare, fork_parent, fork_child); }

void protect_fold_stats(void) { ph_fold_all(); }

static void *or_enomem(void *p) {
    if (unlikely(!p))
        errno = ENOMEM;
    return p;
}

/* The heap had no room for size bytes: freed objects waiting in quarantine may be what fills
 * it (their addresses, even where their pages went back). A whole mark here releases what no
 * pointer reaches, and the caller tries once more (protect_heap_exhausted). false: a size no
 * heap of this one's size can hold, nothing to try again. */
static bool marked_for_room(size_t size) {
    if (size > ph.hi - ph.lo)
        return false;
    mark_wait();
    return true;
}

/* OSCAR_SAMPLE_RATE: allocations left until this thread's next sample (the fast path's one
 * test: with sampling off, the first allocation sets it out of reach). A thread's first
 * allocation draws its first interval instead of being sampled. */
static __thread int64_t sample_left __attribute__((tls_model("initial-exec")));
static __thread bool sample_started __attribute__((tls_model("initial-exec")));

/* The countdown ran out: a sampled object (zeroed, a fresh page), or NULL. While the
 * process is in its first OSCAR_SAMPLE_FIRST samplable allocations, each is sampled and the
 * countdown stays at one. */
__attribute__((noinline)) static void *sampled(size_t size) {
    if (!sample_rate) {
        sample_left = INT64_MAX;
        return NULL;
    }
    if (sample_first_open()) { /* (an allocation too big to sample does not close it) */
        sample_left = 1;
        if (size > OSCAR_PAGE)
            return NULL;
        if (sample_first_take())
            return sample_alloc(size);
    }
    bool first = !sample_started;
    sample_started = true;
    sample_left = sample_interval();
    return first && sample_rate > 1 ? NULL : sample_alloc(size);
}

void *protect_malloc(size_t size) {
    if (unlikely(--sample_left <= 0)) {
        void *p = sampled(size);
        if (p)
            return p;
    }
    void *p = ph_malloc(size);
    if (unlikely(!p) && marked_for_room(size))
        p = ph_malloc(size);
    return or_enomem(p);
}
void *protect_calloc(size_t size) {
    if (unlikely(--sample_left <= 0)) {
        void *p = sampled(size);
        if (p)
            return p;
    }
    void *p = ph_calloc(size);
    if (unlikely(!p) && marked_for_room(size))
        p = ph_calloc(size);
    return or_enomem(p);
}
void *protect_aligned(size_t size, size_t align) {
    void *p = ph_aligned(size, align);
    if (unlikely(!p) && marked_for_room(size))
        p = ph_aligned(size, align);
    return or_enomem(p);
}
/* Not in the heap: a sampled object, or glibc's (modes/foreign.h), or a bad pointer. */
static bool outside_heap(const void *p) { return p && !ph_contains((uintptr_t)p); }

/* A free of p as `as` (free and realloc: malloc's kind; delete: new's), with a sized
 * delete's size: against the kind operator new recorded, then forgotten. p in the heap, or a
 * sampled object. */
static void check_and_forget_kind(void *p, enum alloc_kind as, enum report_caller who,
                                  bool sized, size_t size) {
    unsigned k;
    size_t requested;
    bool sampled = sample_owns(p);
    if (!(sampled ? sample_take_kind(p, &k, &requested) : ph_take_kind(p, &k, &requested)))
        return; /* (not a live object's start: the free reports it) */
    uintptr_t a = (uintptr_t)p;
    struct object_info (*describe)(uintptr_t) = sampled ? sample_object : ph_describe;
    if (protect_state.check_kind && k != as)
        report_kind_mismatch(a, describe(a), (enum alloc_kind)k, as, who);
    if (sized && protect_state.check_size && size != requested)
        report_size_mismatch(a, describe(a), requested, size, true);
}

/* In the heap, or a sampled object: the objects whose kind is kept. */
static bool kind_kept(const void *p) { return ph_contains((uintptr_t)p) || sample_owns(p); }

void protect_note_kind(void *p, enum alloc_kind kind) {
    if (p && protect_state.check_kind) {
        if (ph_contains((uintptr_t)p))
            ph_set_kind(p, kind);
        else if (sample_owns(p) && kind) {
            sample_set_kind(p, kind);
            atomic_store_explicit(&ph_kinds_used, true, memory_order_relaxed); /* (free checks) */
        }
    }
}

void protect_delete(void *p, enum alloc_kind as, bool sized, size_t size) {
    if (p && kind_kept(p) &&
        ((as != KIND_MALLOC && protect_state.check_kind) || (sized && protect_state.check_size) ||
         atomic_load_explicit(&ph_kinds_used, memory_order_relaxed)))
        check_and_forget_kind(p, as, CALL_FREE, sized, size);
    protect_free(p, CALL_FREE);
}

void protect_free(void *p, enum report_caller who) {
    if (unlikely(atomic_load_explicit(&ph_kinds_used, memory_order_relaxed)) && p &&
        kind_kept(p))
        check_and_forget_kind(p, KIND_MALLOC, who, false, 0); /* (after a delete: nothing) */
    if (unlikely(outside_heap(p))) {
        size_t usable;
        if (sample_owns(p)) {
            sample_free(p, (int)who);
            return;
        }
        if (foreign_is_libcs(p, &usable)) {
            foreign_free(p);
            return;
        }
    }
    if (p && unlikely(ph_free(p, (int)who)))
        mark_run(); /* (here, not deeper: the frames above the mark are roots) */
}
void *protect_realloc(void *p, size_t size) {
    if (!p)
        return protect_malloc(size);
    size_t old;
    bool sampled = false;
    if (unlikely(outside_heap(p)) &&
        ((sampled = sample_owns(p)) || foreign_is_libcs(p, &old))) {
        /* A sampled object or glibc's: never grown in place, a new object, then free. */
        if (sampled)
            old = sample_usable_size(p, CALL_REALLOC);
        void *q = size ? protect_malloc(size) : NULL;
        if (q)
            memcpy(q, p, old < size ? old : size);
        if (q || !size)
            protect_free(p, CALL_REALLOC);
        return q;
    }
    if (unlikely(atomic_load_explicit(&ph_kinds_used, memory_order_relaxed)))
        check_and_forget_kind(p, KIND_MALLOC, CALL_REALLOC, false, 0);
    bool mark;
    void *q = ph_realloc(p, size, &mark);
    if (unlikely(!q) && size && marked_for_room(size))
        q = ph_realloc(p, size, &mark);
    if (!q && size)
        errno = ENOMEM;
    /* (A realloc that moved its object freed the old one: the mark it may call for, as a
     * free's; none ran, and the quarantine kept every old copy: 29 GB in 77,000 reallocs of
     * up to 3 MB, protect_realloc_marks.) */
    if (unlikely(mark))
        mark_run();
    return q;
}
int protect_trim(void) {
    mark_wait(); /* (first the quarantine: what a mark releases may empty whole pages) */
    return ph_trim();
}

size_t protect_usable_size(void *p) {
    size_t usable;
    if (unlikely(outside_heap(p))) {
        if (sample_owns(p))
            return sample_usable_size(p, CALL_USABLE_SIZE);
        if (foreign_is_libcs(p, &usable))
            return usable;
    }
    return p ? ph_usable_size(p, CALL_USABLE_SIZE) : 0;
}
