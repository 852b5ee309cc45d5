/* api: arenas and views for custom allocators (include/oscar.h, src/export/api.h).
 *
 * Everything here is a slow path of its own: no malloc, no lock shared with malloc. The
 * only coordination is with fork (a gate: operations in flight finish before the arena
 * file is copied, new ones wait until the fork is done) and with each other through CAS on
 * the first page entry of an arena or view. */
#include "heap/views.h"
#include "base/api_abi.h"
#include "base/fmt.h"
#include "mem/maplimit.h"
#include "os/os.h"
#include "heap/reclaim.h"
#include "mem/region.h"
#include "report/report.h"
#include "report/stack.h"

#include <errno.h>

#include "../../include/oscar.h"

/* Arena file pages appear to mapview as canonical pages numbered from here: consecutive
 * arena pages join one mapping, and never join a real canonical page (< 2^32). */
#define ARENA_CANON (1ULL << 40)

typedef _Atomic uint64_t api_rec[2];

/* The custom-allocator arenas' state. */
static struct {
    oscar_lock init_lock; /* one views_init at a time (rank VIEWS_INIT) */
    atomic_int ready;     /* set once, with release, by views_init after the three below */
    /* The arena file, its length and the records by region page: set once by views_init,
     * under init_lock; the file is replaced in a fork child (views_fork_child). */
    int arena_fd;
    uint64_t file_len;
    api_rec *recs;
    _Atomic uint64_t file_bump; /* the file's next unused byte: fetch-add, lock-free */
    /* The fork gate: forking is set by views_fork_prepare, which waits until no call is
     * inside (inflight, counted by gate_enter and gate_exit); both atomic. */
    atomic_int forking;
    _Atomic long inflight;
    /* The child's copy of the arena file and the error making it: made by
     * views_fork_prepare before fork, taken or closed by the after-fork handlers, all with
     * the gate closed. */
    int child_fd, fork_err;
} views_state = {.init_lock = OSCAR_LOCK_INIT(VIEWS_INIT), .arena_fd = -1, .child_fd = -1};

static int views_init(void) {
    if (likely(atomic_load_explicit(&views_state.ready, memory_order_acquire)))
        return 0;
    if (atomic_load(&oscar_init_state) != 2)
        return ENOTSUP; /* export/api.c initialises first; this is a call from inside init */
    oscar_lock_acquire(&views_state.init_lock);
    int err = 0;
    if (!atomic_load(&views_state.ready)) {
        size_t pages = (oscar_region.end - oscar_region.base) >> OSCAR_PAGE_SHIFT;
        int fd = -1;
        api_rec *r = os_alloc_meta(pages * sizeof(api_rec), &err);
        if (r && (err = os_memfd("oscar-arena", &fd)) == 0 &&
            (err = os_ftruncate(fd, (uint64_t)pages << OSCAR_PAGE_SHIFT)) == 0) {
            views_state.recs = r;
            views_state.arena_fd = fd;
            views_state.file_len = (uint64_t)pages << OSCAR_PAGE_SHIFT;
            atomic_store_explicit(&views_state.ready, 1, memory_order_release);
        } else {
            if (fd >= 0)
                os_close(fd);
            if (r)
                os_unmap(r, pages * sizeof(api_rec));
            if (!err)
                err = ENOMEM;
        }
    }
    oscar_lock_release(&views_state.init_lock);
    return err;
}

/* The fork gate (see fork.c: views_fork_prepare runs before any allocator lock is taken). */
static void gate_enter(void) {
    for (;;) {
        while (atomic_load(&views_state.forking))
            __builtin_ia32_pause();
        atomic_fetch_add(&views_state.inflight, 1);
        if (!atomic_load(&views_state.forking))
            return;
        atomic_fetch_sub(&views_state.inflight, 1);
    }
}
static void gate_exit(void) { atomic_fetch_sub(&views_state.inflight, 1); }

static inline uint64_t api_entry(enum page_kind k, bool dead, uint64_t dist) {
    return entry_large(k, dist << 1 | (dead ? 1 : 0));
}
static inline api_rec *rec_of(uintptr_t first) { return &views_state.recs[region_page_index(first)]; }
static inline uint64_t rec_word(uintptr_t first, int i) {
    return atomic_load_explicit(&(*rec_of(first))[i], memory_order_acquire);
}
static inline uintptr_t first_page(uintptr_t page, uint64_t e) {
    return page - (entry_api_dist(e) << OSCAR_PAGE_SHIFT);
}
static inline uint64_t span_pages(uintptr_t start, size_t len) {
    return (align_up(start + len, OSCAR_PAGE) - (start & ~(OSCAR_PAGE - 1))) >> OSCAR_PAGE_SHIFT;
}
/* The arena file page under arena address a (a inside a live arena). */
static uint64_t arena_file_page(uintptr_t a) {
    uintptr_t page = a & ~(OSCAR_PAGE - 1);
    uint64_t e = region_load(page);
    uintptr_t first = first_page(page, e);
    return (rec_word(first, 0) >> 32) + entry_api_dist(e);
}
/* Mark pages 1..n-1 of an arena or view (the first page is the caller's business). */
static void mark_tail(uintptr_t first, uint64_t n, enum page_kind k, bool dead) {
    for (uint64_t i = 1; i < n; i++)
        region_store(first + (i << OSCAR_PAGE_SHIFT), api_entry(k, dead, i));
}

static int misuse(const char *fn, const void *addr, int code, const char *why) {
    static const char *const names[] = {"OSCAR_OK", "OSCAR_EINVAL", "OSCAR_ENOTOURS",
                                  "OSCAR_EREVOKED", "OSCAR_EBUSY", "OSCAR_ENOMEM",
                                  "OSCAR_ENOTSUP"};
    report_api_error(fn, (uintptr_t)addr, names[code], why);
    return code;
}

/* ------------------------------------------------------------------------------------- */

int views_active(void) { return 1; }

void *views_arena_alloc(size_t len) {
    if (!len) {
        errno = EINVAL;
        return NULL;
    }
    if (views_init() != 0 || len > views_state.file_len) {
        errno = ENOMEM;
        return NULL;
    }
    size_t bytes = align_up(len, OSCAR_PAGE);
    uint64_t n = bytes >> OSCAR_PAGE_SHIFT;
    gate_enter();
    uint64_t off = atomic_fetch_add(&views_state.file_bump, bytes);
    uintptr_t a = off + bytes <= views_state.file_len ? region_take(bytes, OSCAR_PAGE) : 0;
    if (!a) {
        gate_exit();
        errno = ENOMEM;
        return NULL;
    }
    long delta = mapview_delta(a, a + bytes - OSCAR_PAGE, VIEW_SHARED,
                               ARENA_CANON + (off >> OSCAR_PAGE_SHIFT));
    int err = os_map_shadow((void *)a, bytes, views_state.arena_fd, off, 0);
    if (err) {
        if (err == ENOMEM)
            maplimit_on_enomem();
        gate_exit();
        errno = ENOMEM;
        return NULL;
    }
    atomic_store(&(*rec_of(a))[0], (off >> OSCAR_PAGE_SHIFT) << 32);
    atomic_store(&(*rec_of(a))[1], len);
    mark_tail(a, n, PK_ARENA, false);
    region_store(a, api_entry(PK_ARENA, false, 0));
    maplimit_add(delta);
    if (stack_depth)
        stack_note_alloc(a);
    gate_exit();
    return (void *)a;
}

int views_arena_free(void *arena) {
    static const char fn[] = "oscar_arena_free";
    if (!arena)
        return OSCAR_OK;
    uintptr_t a = (uintptr_t)arena;
    if (views_init() != 0 || !region_contains(a))
        return misuse(fn, arena, OSCAR_ENOTOURS, "not memory from oscar_arena_alloc");
    uint64_t e = region_load(a & ~(OSCAR_PAGE - 1));
    if (reclaim_is_reclaimed(a) && entry_kind(e) == PK_NONE)
        return misuse(fn, arena, OSCAR_EREVOKED, "freed long ago (its records were reclaimed)");
    if (entry_kind(e) == PK_VIEW)
        return misuse(fn, arena, OSCAR_ENOTOURS, "a view, not an arena (oscar_view_revoke "
                                                 "revokes views)");
    if (entry_kind(e) != PK_ARENA)
        return misuse(fn, arena, OSCAR_ENOTOURS, "not memory from oscar_arena_alloc");
    if ((a & (OSCAR_PAGE - 1)) || entry_api_dist(e))
        return misuse(fn, arena, OSCAR_EINVAL, "an interior pointer of an arena, not its start");
    if (entry_api_dead(e))
        return misuse(fn, arena, OSCAR_EREVOKED, "the arena was already freed");
    size_t len = rec_word(a, 1), bytes = align_up(len, OSCAR_PAGE);
    uint64_t n = bytes >> OSCAR_PAGE_SHIFT, off = (rec_word(a, 0) >> 32) << OSCAR_PAGE_SHIFT;
    gate_enter();
    long delta = shadow_revoke_delta(a, a + bytes - OSCAR_PAGE);
    if (!atomic_compare_exchange_strong(region_entry(a), &e, api_entry(PK_ARENA, true, 0))) {
        gate_exit();
        return misuse(fn, arena, OSCAR_EREVOKED, "the arena was already freed");
    }
    if (atomic_load(&(*rec_of(a))[0]) & 0xffffffffu) {
        region_store(a, api_entry(PK_ARENA, false, 0));
        gate_exit();
        return misuse(fn, arena, OSCAR_EBUSY, "views of this arena are still live; revoke "
                                              "them first (nothing was freed)");
    }
    mark_tail(a, n, PK_ARENA, true);
    if (stack_depth)
        stack_note_free(a);
    int err = os_revoke((void *)a, bytes);
    if (!err) {
        maplimit_add(delta);
        os_punch_hole(views_state.arena_fd, off, bytes); /* offsets are never reused: only memory */
    }
    gate_exit();
    return err ? OSCAR_ENOMEM : OSCAR_OK;
}

int views_create(void *ptr, size_t len, void **view) {
    static const char fn[] = "oscar_view_create";
    if (!view)
        return misuse(fn, ptr, OSCAR_EINVAL, "the view out-pointer is NULL");
    *view = NULL;
    uintptr_t a = (uintptr_t)ptr;
    if (!len)
        len = 1;
    if (a + len < a)
        return misuse(fn, ptr, OSCAR_EINVAL, "the range wraps around the address space");
    if (views_init() != 0 || !region_contains(a) || !region_contains(a + len - 1))
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the range is not inside an oscar arena "
                                               "(memory from oscar_arena_alloc)");
    uintptr_t page = a & ~(OSCAR_PAGE - 1);
    uint64_t e = region_load(page);
    if (reclaim_is_reclaimed(a) && entry_kind(e) == PK_NONE)
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the arena or view was freed long ago");
    if (entry_kind(e) == PK_VIEW)
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the address is a view; create views of "
                                               "oscar_view_origin(view)");
    if (entry_kind(e) != PK_ARENA)
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the range is not inside an oscar arena "
                                               "(memory from oscar_arena_alloc)");
    uintptr_t arena = first_page(page, e);
    if (entry_api_dead(region_load(arena)))
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the arena was freed");
    if (a + len > arena + rec_word(arena, 1))
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the range runs past the end of its arena");
    gate_enter();
    atomic_fetch_add(&(*rec_of(arena))[0], 1);
    if (entry_api_dead(atomic_load(region_entry(arena)))) {
        atomic_fetch_sub(&(*rec_of(arena))[0], 1);
        gate_exit();
        return misuse(fn, ptr, OSCAR_ENOTOURS, "the arena was freed");
    }
    uint64_t n = span_pages(a, len);
    uint64_t fpage = (rec_word(arena, 0) >> 32) + ((page - arena) >> OSCAR_PAGE_SHIFT);
    uintptr_t v = region_take(n << OSCAR_PAGE_SHIFT, OSCAR_PAGE);
    int err = ENOMEM;
    long delta = 0;
    if (v) {
        uintptr_t last = v + ((n - 1) << OSCAR_PAGE_SHIFT);
        delta = mapview_delta(v, last, VIEW_SHARED, ARENA_CANON + fpage);
        err = maplimit_defer(delta) ? ENOMEM
                                    : os_map_shadow((void *)v, n << OSCAR_PAGE_SHIFT, views_state.arena_fd,
                                                    fpage << OSCAR_PAGE_SHIFT, 1);
        if (err == ENOMEM && !maplimit_defer(delta))
            maplimit_on_enomem();
    }
    if (err) {
        atomic_fetch_sub(&(*rec_of(arena))[0], 1);
        gate_exit();
        return OSCAR_ENOMEM;
    }
    atomic_store(&(*rec_of(v))[0], a);
    atomic_store(&(*rec_of(v))[1], len);
    mark_tail(v, n, PK_VIEW, false);
    region_store(v, api_entry(PK_VIEW, false, 0));
    maplimit_add(delta);
    if (stack_depth)
        stack_note_alloc(v);
    gate_exit();
    *view = (void *)(v + (a & (OSCAR_PAGE - 1)));
    return OSCAR_OK;
}

int views_revoke(void *view) {
    static const char fn[] = "oscar_view_revoke";
    uintptr_t a = (uintptr_t)view;
    if (!atomic_load_explicit(&views_state.ready, memory_order_acquire) || !region_contains(a))
        return misuse(fn, view, OSCAR_ENOTOURS, "not a view made by oscar_view_create");
    uintptr_t page = a & ~(OSCAR_PAGE - 1);
    uint64_t e = region_load(page);
    if (reclaim_is_reclaimed(a) && entry_kind(e) == PK_NONE)
        return misuse(fn, view, OSCAR_EREVOKED, "revoked long ago (its records were reclaimed)");
    if (entry_kind(e) == PK_ARENA)
        return misuse(fn, view, OSCAR_ENOTOURS, "arena memory, not a view");
    if (entry_kind(e) != PK_VIEW)
        return misuse(fn, view, OSCAR_ENOTOURS, "not a view made by oscar_view_create");
    uintptr_t first = first_page(page, e);
    uintptr_t origin = rec_word(first, 0);
    size_t len = rec_word(first, 1);
    if (a != first + (origin & (OSCAR_PAGE - 1)))
        return misuse(fn, view, OSCAR_EINVAL, "an interior pointer of a view, not the "
                                              "address oscar_view_create returned");
    e = region_load(first);
    if (entry_api_dead(e))
        return misuse(fn, view, OSCAR_EREVOKED, "the view was already revoked");
    uint64_t n = span_pages(origin, len);
    gate_enter();
    long delta = shadow_revoke_delta(first, first + ((n - 1) << OSCAR_PAGE_SHIFT));
    if (!atomic_compare_exchange_strong(region_entry(first), &e, api_entry(PK_VIEW, true, 0))) {
        gate_exit();
        return misuse(fn, view, OSCAR_EREVOKED, "the view was already revoked");
    }
    mark_tail(first, n, PK_VIEW, true);
    if (stack_depth)
        stack_note_free(first);
    int err = os_revoke((void *)first, n << OSCAR_PAGE_SHIFT);
    if (!err)
        maplimit_add(delta);
    uintptr_t opage = origin & ~(OSCAR_PAGE - 1);
    uintptr_t arena = first_page(opage, region_load(opage));
    atomic_fetch_sub(&(*rec_of(arena))[0], 1);
    gate_exit();
    return err ? OSCAR_ENOMEM : OSCAR_OK;
}

void *views_origin(void *view) {
    uintptr_t a = (uintptr_t)view;
    if (!atomic_load_explicit(&views_state.ready, memory_order_acquire) || !region_contains(a))
        return view;
    uintptr_t page = a & ~(OSCAR_PAGE - 1);
    uint64_t e = region_load(page);
    if (entry_kind(e) != PK_VIEW)
        return view;
    uintptr_t first = first_page(page, e);
    uintptr_t origin = rec_word(first, 0);
    return (void *)(origin + (a - (first + (origin & (OSCAR_PAGE - 1)))));
}

/* ------------------------------------------------------------------------------------- */
/* For object.c, mapview.c (hook), report.c (hook) and fork.c. */

void views_describe(uintptr_t addr, uintptr_t page, uint64_t e, struct object_info *o) {
    uintptr_t first = first_page(page, e);
    uint64_t fe = region_load(first);
    uintptr_t start = first;
    if (entry_kind(e) == PK_VIEW)
        start += rec_word(first, 0) & (OSCAR_PAGE - 1);
    size_t size = rec_word(first, 1);
    if (addr < start || addr >= start + size)
        return; /* the rest of a page was never handed out through this address */
    o->start = start;
    o->size = size;
    o->entry = fe;
    o->state = entry_api_dead(fe) ? OBJ_FREED : OBJ_LIVE;
}

bool views_records_range(uintptr_t page, size_t pages, uintptr_t *at, size_t *len) {
    if (!atomic_load_explicit(&views_state.ready, memory_order_acquire))
        return false;
    *at = (uintptr_t)rec_of(page);
    *len = pages * sizeof(api_rec);
    return true;
}

enum page_view views_page_view(uintptr_t page, uint64_t e, uint64_t *canon) {
    uintptr_t first = first_page(page, e);
    if (entry_api_dead(e) || entry_api_dead(region_load(first)))
        return VIEW_NONE;
    if (entry_kind(e) == PK_ARENA) {
        *canon = ARENA_CANON + (rec_word(first, 0) >> 32) + entry_api_dist(e);
    } else {
        uint64_t origin = rec_word(first, 0);
        *canon = ARENA_CANON + arena_file_page(origin) + entry_api_dist(e);
    }
    return VIEW_SHARED;
}

uintptr_t views_origin_of(uintptr_t addr) {
    void *o = views_origin((void *)addr);
    return (uintptr_t)o == addr ? 0 : (uintptr_t)o;
}

void views_fork_prepare(void) {
    if (!atomic_load(&views_state.ready))
        return;
    atomic_store(&views_state.forking, 1);
    while (atomic_load(&views_state.inflight))
        __builtin_ia32_pause();
    views_state.fork_err = os_memfd("oscar-arena", &views_state.child_fd);
    if (!views_state.fork_err &&
        (views_state.fork_err = os_ftruncate(views_state.child_fd, views_state.file_len)) == 0)
        views_state.fork_err = os_copy_file(views_state.arena_fd, views_state.child_fd,
                                            atomic_load(&views_state.file_bump));
}

void views_fork_parent(void) {
    if (!atomic_load(&views_state.ready))
        return;
    if (views_state.child_fd >= 0)
        os_close(views_state.child_fd);
    views_state.child_fd = -1;
    atomic_store(&views_state.forking, 0);
}

void views_fork_child(void) {
    if (!atomic_load(&views_state.ready))
        return;
    if (views_state.fork_err)
        report_fatal("fork: cannot copy the custom-allocator arenas for the child", views_state.fork_err);
    uintptr_t end = oscar_region.base + region_used();
    for (uintptr_t p = oscar_region.base; p < end;) {
        uint64_t e = region_load(p), c, d;
        enum page_kind k = entry_kind(e);
        if ((k != PK_ARENA && k != PK_VIEW) || views_page_view(p, e, &c) != VIEW_SHARED) {
            p = reclaim_next_page(p);
            continue;
        }
        uintptr_t q = p + OSCAR_PAGE;
        while (q < end) {
            uint64_t f = region_load(q);
            k = entry_kind(f);
            if ((k != PK_ARENA && k != PK_VIEW) || views_page_view(q, f, &d) != VIEW_SHARED ||
                d != c + ((q - p) >> OSCAR_PAGE_SHIFT))
                break;
            q += OSCAR_PAGE;
        }
        int err = os_map_shadow((void *)p, q - p, views_state.child_fd,
                                (c - ARENA_CANON) << OSCAR_PAGE_SHIFT, 0);
        if (err)
            report_fatal("fork: cannot remap the custom-allocator arenas in the child", err);
        p = q;
    }
    os_close(views_state.arena_fd);
    views_state.arena_fd = views_state.child_fd;
    views_state.child_fd = -1;
    atomic_store(&views_state.inflight, 0);
    atomic_store(&views_state.forking, 0);
}

void views_register_hooks(void) {
    mapview_set_arena_hook(views_page_view);
    report_set_view_origin_hook(views_origin_of);
}
