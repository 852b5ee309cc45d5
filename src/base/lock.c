/* lock: see lock.h. The debug build keeps, per thread, the locks it holds (rank and address)
 * and refuses an acquisition that breaks the rank order. */
#include "base/lock.h"
#include "base/messages.h"
#include "base/fmt.h"
#include <stdlib.h>

static const char *const rank_names[LOCK_RANK_COUNT] = {
    [LOCK_UNRANKED] = "unranked",
#define OSCAR_LOCK_RANK(id, name, what) [LOCK_##id] = name,
    OSCAR_LOCK_RANKS(OSCAR_LOCK_RANK)
#undef OSCAR_LOCK_RANK
};

const char *oscar_lock_name(enum lock_rank rank) {
    return rank < LOCK_RANK_COUNT ? rank_names[rank] : "?";
}

#ifdef OSCAR_DEBUG
#define HELD_MAX 64
static __thread struct {
    unsigned n;
    const oscar_lock *lock[HELD_MAX];
} held;

__attribute__((noreturn)) static void lock_fail(const char *why, const oscar_lock *l,
                                                const oscar_lock *other) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_LOCK_ORDER);
    fmt_str(&f, why);
    fmt_str(&f, ": taking '");
    fmt_str(&f, oscar_lock_name(l->rank));
    fmt_str(&f, "'");
    if (other) {
        fmt_str(&f, " while holding '");
        fmt_str(&f, oscar_lock_name(other->rank));
        fmt_str(&f, "'");
    }
    fmt_char(&f, '\n');
    fmt_flush(&f, 2);
    abort();
}

__attribute__((noreturn)) void oscar_assert_failed(const char *what, const char *file, int line) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_ASSERTION);
    fmt_str(&f, what);
    fmt_str(&f, " (");
    fmt_str(&f, file);
    fmt_char(&f, ':');
    fmt_i64(&f, line);
    fmt_str(&f, ")\n");
    fmt_flush(&f, 2);
    abort();
}

static void check_order(const oscar_lock *l) {
    if (l->rank == LOCK_UNRANKED || l->rank >= LOCK_RANK_COUNT)
        lock_fail("a lock without a rank", l, NULL);
    for (unsigned i = 0; i < held.n; i++) {
        const oscar_lock *h = held.lock[i];
        if (h == l)
            lock_fail("already held by this thread", l, h);
        if (h->rank > l->rank || (h->rank == l->rank && h > l))
            lock_fail("rank order broken", l, h);
    }
}

static void note_held(const oscar_lock *l) {
    if (held.n < HELD_MAX)
        held.lock[held.n++] = l;
}

static void note_released(const oscar_lock *l) {
    for (unsigned i = held.n; i-- > 0;) {
        if (held.lock[i] == l) {
            held.lock[i] = held.lock[--held.n];
            return;
        }
    }
    lock_fail("released but not held by this thread", l, NULL);
}

void oscar_lock_assert_none_held(const char *where) {
    if (held.n)
        lock_fail(where, held.lock[0], NULL);
}
#else
static inline void check_order(const oscar_lock *l) { (void)l; }
static inline void note_held(const oscar_lock *l) { (void)l; }
static inline void note_released(const oscar_lock *l) { (void)l; }
void oscar_lock_assert_none_held(const char *where) { (void)where; }
#endif

void oscar_lock_acquire(oscar_lock *l) {
    check_order(l);
    while (atomic_flag_test_and_set_explicit(&l->f, memory_order_acquire))
        __builtin_ia32_pause();
    note_held(l);
}

bool oscar_lock_try(oscar_lock *l) {
    if (atomic_flag_test_and_set_explicit(&l->f, memory_order_acquire))
        return false;
    /* (a try-lock cannot deadlock, so only a lock without a rank is refused) */
#ifdef OSCAR_DEBUG
    if (l->rank == LOCK_UNRANKED)
        lock_fail("a lock without a rank", l, NULL);
#endif
    note_held(l);
    return true;
}

void oscar_lock_release(oscar_lock *l) {
    note_released(l);
    atomic_flag_clear_explicit(&l->f, memory_order_release);
}
