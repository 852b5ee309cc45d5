/* mqlog: see mqlog.h. */
#define _GNU_SOURCE
#include "scan/mqlog.h"
#include "base/core.h"
#include "base/lock.h"
#include "os/os.h"

#include <errno.h>
#include <mqueue.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#define MQLOG_QUEUES 64          /* queues with copies or a notification at once */
#define MQLOG_BYTES (256u << 10) /* the copies' room (liboscar.so's bss, touched as used) */

/* A copy: this header, then the message's bytes, padded to 8. gone: received (compacted
 * away at the next trim). */
struct rec {
    uint32_t len, prio;
    uint8_t queue;
    bool gone;
    uint16_t unused[3];
};

struct queue {
    uint64_t dev, ino; /* the queue's identity (ino 0: a free slot) */
    int fd;            /* the descriptor seen last for it (-1: none known to be open) */
    bool lost;         /* a message sent to it was not copied: until it is found empty */
    bool notify;       /* a notification is registered, with value */
    uintptr_t value;
};

/* In liboscar.so's bss (not a root). The fields below `lock` are written under it, by any
 * thread (the wrappers) or by the marking thread with the world stopped (mqlog_for_each). */
static struct {
    oscar_lock lock;                     /* rank KROOTS_MQ */
    struct queue queues[MQLOG_QUEUES];   /* the queues known (ino 0: a free slot) */
    size_t used;                         /* bytes of `log` in use */
    size_t gone;                         /* ... of which copies received (compacted away
                                          * once they are half of it) */
    atomic_bool any;                     /* some queue has a slot: the mark looks */
    atomic_bool lost;                    /* a message not copied whose queue has no slot */
    _Alignas(8) unsigned char log[MQLOG_BYTES]; /* the copies: struct rec, bytes, ... */
} mqlog_state = {.lock = OSCAR_LOCK_INIT(KROOTS_MQ)};

/* The log's lock, with every signal blocked while it is held: no handler of the program's
 * can run inside (and send to a queue there), and a stop of the world parks this thread only
 * once it let go (so neither a mark nor fork ever finds the lock held by a parked thread).
 * The copies are made from what the kernel has just read: nothing faults inside. */
static void take(sigset_t *old) {
    sigset_t all;
    sigfillset(&all);
    os_sigprocmask(SIG_SETMASK, &all, old);
    oscar_lock_acquire(&mqlog_state.lock);
}

static void drop(const sigset_t *old) {
    oscar_lock_release(&mqlog_state.lock);
    os_sigprocmask(SIG_SETMASK, old, NULL);
}

static struct rec *rec_at(size_t off) { return (struct rec *)(void *)(mqlog_state.log + off); }
static size_t rec_bytes(const struct rec *r) { return sizeof *r + align_up(r->len, 8); }

/* fd's queue slot (add: a free one taken if it has none), or -1; its descriptor noted. */
static int queue_of(int fd, bool add) {
    uint64_t dev, ino;
    if (os_fd_id(fd, &dev, &ino) != 0 || !ino)
        return -1;
    int free_slot = -1;
    for (int i = 0; i < MQLOG_QUEUES; i++) {
        struct queue *q = &mqlog_state.queues[i];
        if (q->ino == ino && q->dev == dev) {
            q->fd = fd;
            return i;
        }
        if (!q->ino && free_slot < 0)
            free_slot = i;
    }
    if (!add || free_slot < 0)
        return -1;
    mqlog_state.queues[free_slot] = (struct queue){dev, ino, fd, false, false, 0};
    atomic_store(&mqlog_state.any, true);
    return free_slot;
}

/* Is queue q empty now? Asked through its descriptor, if that is still the queue's. */
static bool found_empty(struct queue *q) {
    uint64_t dev, ino;
    if (q->fd < 0 || os_fd_id(q->fd, &dev, &ino) != 0 || dev != q->dev || ino != q->ino) {
        q->fd = -1;
        return false;
    }
    struct mq_attr attr;
    return os_syscall(SYS_mq_getsetattr, q->fd, 0, (long)&attr, 0, 0) == 0 &&
           attr.mq_curmsgs == 0;
}

/* The copies received, and those of the queues empty[q] (NULL: none), are removed, the rest
 * moved together; kept[q] (if not NULL): queue q has a copy left. Under the lock. */
static void compact(const bool *empty, bool *kept) {
    size_t to = 0;
    for (size_t off = 0; off < mqlog_state.used;) {
        struct rec *r = rec_at(off);
        size_t n = rec_bytes(r);
        if (!r->gone && !(empty && empty[r->queue])) {
            if (kept)
                kept[r->queue] = true;
            if (to != off)
                memmove(mqlog_state.log + to, r, n);
            to += n;
        }
        off += n;
    }
    mqlog_state.used = to;
    mqlog_state.gone = 0;
}

/* The copies of the queues found empty go (and those received), the rest is moved
 * together, and the slots of queues with nothing left (no copy, no notification, no lost
 * message, no descriptor) are freed. Under the lock. The number of queues with a lost
 * message left. */
static unsigned trim(void) {
    bool empty[MQLOG_QUEUES], kept[MQLOG_QUEUES] = {false};
    unsigned lost = 0;
    bool all_empty = true;
    for (int i = 0; i < MQLOG_QUEUES; i++) {
        struct queue *q = &mqlog_state.queues[i];
        empty[i] = q->ino && found_empty(q);
        if (empty[i])
            q->lost = false;
        all_empty &= !q->ino || empty[i];
        lost += q->lost;
    }
    compact(empty, kept);
    bool any = false;
    for (int i = 0; i < MQLOG_QUEUES; i++) {
        struct queue *q = &mqlog_state.queues[i];
        if (q->ino && !kept[i] && !q->notify && !q->lost && q->fd < 0)
            q->ino = 0;
        any |= q->ino != 0;
    }
    atomic_store(&mqlog_state.any, any);
    if (all_empty) /* (every queue known is empty: a message not copied is gone too) */
        atomic_store(&mqlog_state.lost, false);
    return lost;
}

void mqlog_sent(int fd, const void *msg, size_t len, unsigned prio) {
    int saved = errno;
    sigset_t old;
    take(&old);
    int q = queue_of(fd, true);
    size_t need = sizeof(struct rec) + align_up(len, 8);
    if (q >= 0 && need > MQLOG_BYTES - mqlog_state.used)
        trim();
    if (q < 0) {
        atomic_store(&mqlog_state.lost, true); /* (no slot left) */
    } else if (need > MQLOG_BYTES - mqlog_state.used) {
        mqlog_state.queues[q].lost = true;
    } else {
        struct rec *r = rec_at(mqlog_state.used);
        *r = (struct rec){(uint32_t)len, prio, (uint8_t)q, false, {0, 0, 0}};
        memcpy(r + 1, msg, len);
        mqlog_state.used += need;
    }
    drop(&old);
    errno = saved;
}

void mqlog_received(int fd, const void *msg, size_t len, unsigned prio) {
    if (!atomic_load_explicit(&mqlog_state.any, memory_order_relaxed))
        return;
    int saved = errno;
    sigset_t old;
    take(&old);
    int q = queue_of(fd, false);
    for (size_t off = 0; q >= 0 && off < mqlog_state.used; off += rec_bytes(rec_at(off))) {
        struct rec *r = rec_at(off);
        if (r->queue == q && !r->gone && r->prio == prio && r->len == len &&
            memcmp(r + 1, msg, len) == 0) {
            r->gone = true;
            mqlog_state.gone += rec_bytes(r);
            if (2 * mqlog_state.gone > mqlog_state.used) /* (each receive then costs O(1)) */
                compact(NULL, NULL);
            break;
        }
    }
    drop(&old);
    errno = saved;
}

void mqlog_notify(int fd, bool on, uintptr_t value) {
    int saved = errno;
    sigset_t old;
    take(&old);
    int q = queue_of(fd, on);
    if (q >= 0) {
        mqlog_state.queues[q].notify = on;
        mqlog_state.queues[q].value = on ? value : 0;
    }
    drop(&old);
    errno = saved;
}

/* (The marking thread, world stopped. Locks held: the world lock; the log's is tried.) */
int mqlog_for_each(void (*message)(int fd, const unsigned char *p, size_t n, void *arg),
                   void (*value)(int fd, uintptr_t v, void *arg), void *arg) {
    if (!atomic_load(&mqlog_state.any) && !atomic_load(&mqlog_state.lost))
        return 0;
    if (!oscar_lock_try(&mqlog_state.lock))
        return -EBUSY;
    unsigned lost = trim();
    for (size_t off = 0; off < mqlog_state.used; off += rec_bytes(rec_at(off))) {
        struct rec *r = rec_at(off);
        message(mqlog_state.queues[r->queue].fd, (const unsigned char *)(r + 1), r->len, arg);
    }
    for (int i = 0; i < MQLOG_QUEUES; i++)
        if (mqlog_state.queues[i].ino && mqlog_state.queues[i].notify)
            value(mqlog_state.queues[i].fd, mqlog_state.queues[i].value, arg);
    int err = lost || atomic_load(&mqlog_state.lost) ? -EMSGSIZE : 0;
    oscar_lock_release(&mqlog_state.lock);
    return err;
}

/* (The child has only the forking thread, which holds no lock of the log. Another thread
 * may have held it when fork copied the process: protect mode's fork does not stop the
 * world. Then the log may be half updated: its copies are dropped and every queue known is
 * taken as one with a message not copied, until found empty.) */
void mqlog_fork_child(void) {
    if (oscar_lock_try(&mqlog_state.lock)) {
        oscar_lock_release(&mqlog_state.lock);
        return;
    }
    mqlog_state.used = 0;
    for (int i = 0; i < MQLOG_QUEUES; i++)
        mqlog_state.queues[i].lost = mqlog_state.queues[i].ino != 0;
    oscar_lock_init(&mqlog_state.lock, LOCK_KROOTS_MQ);
}
