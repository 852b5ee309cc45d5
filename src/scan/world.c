/* world: see world.h.
 *
 * The park signal is SIGPWR (as Boehm GC's on Linux): programs rarely use it, and it is a
 * standard signal, so a second request pending while a thread is parked merges with the first.
 * A program that installs its own SIGPWR handler keeps ours in front (export/export_signal.c
 * records theirs here); a SIGPWR that is not one of our requests (they carry world_state's
 * cookie: os_send_request) goes on to the program's handler or its default action, also when
 * the kernel merged it with one of ours (on_park; export/export_send.c).
 *
 * A stop, step by step (world_stop):
 *   1. take the world lock; a new epoch; mark "stopping";
 *   2. send the park signal (a request) to the threads the last stop found, and wait for them
 *      (3): the listing below opens a descriptor, and a thread of the program that closed
 *      its descriptors and opens one must get the lowest (tests/programs/lowest_descriptor.c:
 *      39,451 of its opens in 2 s got another while stops listed the threads before any was
 *      parked); then list /proc/self/task
 *      (getdents64 into a static buffer: no allocation) and send it to every thread not yet
 *      asked in this epoch (one the last stop did not find: only such a thread still runs
 *      while the descriptor is open);
 *   3. wait on a futex until every thread asked has parked or is gone (tgkill(tid, 0) says
 *      ESRCH: it exited meanwhile, maybe with every signal blocked, as glibc's thread exit does);
 *   4. list the threads again: a thread created by one not yet parked appears now; go back to 2
 *      until a listing finds no new thread. Once every thread is parked no new one can appear.
 * A thread that neither parks nor exits before the timeout (1 s), or that still blocks the
 * park signal after 50 ms, the request still pending (a raw system call: /proc's SigBlk and
 * SigPnd say so), makes the stop fail: the parked ones are released and world_stop returns
 * -ETIMEDOUT (or -EAGAIN). Its request may still arrive later: the handler then finds no
 * stop in progress and drops it.
 *
 * The handler (SA_SIGINFO | SA_RESTART | SA_ONSTACK) records the interrupted stack pointer, the
 * extent of the signal frame (the ucontext and the FPU/vector state the kernel saved beside it:
 * the registers of the thread, which may hold the only pointer to an object) and the thread's
 * alternate signal stack, then waits on the resume futex. A thread blocked in a system call is
 * parked too: the signal interrupts the call, which SA_RESTART restarts after the resume. errno
 * is saved and restored.
 *
 * Locks: the world lock ("world" in base/lock.h) is taken by world_stop and released by
 * world_resume. While the world is stopped the caller must not take any lock a parked thread
 * may hold (so fork and the mark take the allocator locks they need BEFORE world_stop: the
 * world lock ranks after them). The handler takes no lock. */
#define _GNU_SOURCE
#include "scan/world.h"
#include "os/giveway.h"
#include "os/os.h"
#include "os/nopark.h"
#include "report/fault.h"
#include "base/fmt.h"

#include <errno.h>
#include <string.h>
#include <ucontext.h>

extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#define WORLD_HASH (2 * WORLD_MAX) /* tid -> slot, open addressing */
/* The second park signal: glibc's SIGSETXID, its signal for setuid and its kind across
 * threads, which glibc keeps open in every mask it sets (its sigfillset, sigprocmask and
 * pthread_sigmask leave it out) and never hands to the program. A thread that blocks the
 * park signal does not block this one unless by a raw system call: glibc's own helper
 * threads (timer_create's SIGEV_THREAD, mq_notify, aio, getaddrinfo_a), a thread made with
 * pthread_attr_setsigmask_np, or after setcontext with a full mask. Without it, no stop could
 * park such a thread, and no mark ever ran again (2.2 GiB where glibc used 1 MiB:
 * protect_blocked_by_libc). */
#define SECOND_SIG 33
#define SECOND_TIDS 16
#define WORLD_TIMEOUT_NS 1000000000ull

enum { SLOT_ASKED, SLOT_PARKED, SLOT_GONE };

struct slot {
    _Atomic int state; /* SLOT_*: written by the parked thread (PARKED) or the stopper */
    uint32_t epoch;    /* the stop that asked (the parked thread waits for its resume) */
    bool second;       /* asked with the second park signal too (the stopper) */
    struct world_thread t;
};

/* All of world's state. The stopper writes it under the world lock; the handler reads the
 * table and writes only its own slot. */
static struct {
    oscar_lock lock;           /* the world lock: world_stop takes it, world_resume releases */
    int sig;                   /* the park signal (constant) */
    uint64_t cookie;           /* our requests' si_value (os_send_request; set once at init) */
    _Atomic uint32_t draining; /* threads that parked and have not yet taken what came
                                * meanwhile (on_park) */
    bool drain_gave_up;        /* a stop waited DRAIN_WAIT_NS for them in vain (wait_drained;
                                * the stopper, under the world lock) */
    /* The program's sends to another thread waiting for the world lock
     * (world_program_send_begin): a stop lets them go first (os/giveway.h). */
    struct os_giveway senders;
    uint64_t handler_mask;     /* what the park handler blocks, as /proc's SigBlk (constant) */
    atomic_bool ready;         /* world_init done (set once, under the world lock) */
    _Atomic uint32_t epoch;    /* stops so far */
    _Atomic uint32_t resumed;  /* futex: == epoch once the parked threads may go */
    _Atomic uint32_t nparked;  /* futex: parked in this epoch */
    _Atomic uint32_t nexpect;  /* asked in this epoch and not gone: the stopper waits for
                                * nparked == nexpect, and only the parker that gets there wakes
                                * it (one wake-up per stop, not one per thread) */
    atomic_bool stopping;      /* a stop is in progress: the stopper, release; the handler
                                * reads it (acquire) */
    _Atomic int pid;           /* the process this is: set by world_init, and a fork's child
                                * (world_fork_child); a vfork child shares it, and the lock,
                                * under a pid of its own */
    bool proc_apart;           /* this stop: /proc is another pid namespace's (its numbers
                                * are not ours: ask_new translates; the stopper, under the
                                * world lock) */
    int32_t zombie_leader;     /* the pid whose first thread was found gone (pthread_exit:
                                * the kernel keeps it, a zombie that never parks), so never
                                * asked again; a fork child's pid differs (the stopper, under
                                * the world lock) */
    /* The tables, mapped once by world_init (under the world lock): */
    struct slot *slots;        /* [WORLD_MAX] */
    int32_t *known;            /* [WORLD_MAX]: the threads the last stop parked, and its
                                * stopper (the stopper, under the world lock) */
    size_t nknown;             /* entries of known (the same) */
    _Atomic int32_t *hash;     /* [WORLD_HASH]: slot index + 1, or 0 */
    size_t n;                  /* slots used in this epoch */
    struct world_thread **parked; /* [WORLD_MAX]: the parked ones, for world_thread_at */
    size_t nparked_list;       /* entries of parked (the stopper, world stopped) */
    struct sigaction program;  /* what the program believes is installed for sig */
    /* Oscar's own threads that a stop leaves running (scan/team.c's helpers: they read the
     * heap for the stopper while the world is stopped); 0: a free entry. Set by each helper
     * for itself (atomic: a stopper may be listing threads meanwhile). */
    _Atomic int32_t exempt[WORLD_EXEMPT_MAX];
    int sig2;                  /* the second park signal (SECOND_SIG), 0 where not installed
                                * (set once by world_init) */
    struct os_ksigaction glibc2; /* glibc's action for it, which ours hands its own to */
    /* Threads the last stops asked with the second signal: asked with it at once in the next
     * ones (no 50 ms wait first; the stopper, under the world lock) */
    int32_t second_tids[SECOND_TIDS];
    unsigned second_next;      /* where the next one goes in second_tids (the same) */
} world_state = {.lock = OSCAR_LOCK_INIT(WORLD), .sig = SIGPWR};

/* The stopper's buffers, apart from world_state (a zero table in .bss, not in .data with
 * world_state's initialised fields). */
static struct {
    char dents[32768];         /* getdents64 buffer (stopper only, under the world lock) */
    char status[4096];         /* a thread's /proc status (stopper only, under the world lock) */
} world_buf_state;

static size_t hash_of(int32_t tid) { return ((uint32_t)tid * 2654435761u) % WORLD_HASH; }

static struct slot *lookup(int32_t tid) {
    for (size_t h = hash_of(tid), i = 0; i < WORLD_HASH; i++, h = (h + 1) % WORLD_HASH) {
        int32_t v = atomic_load_explicit(&world_state.hash[h], memory_order_acquire);
        if (v == 0)
            return NULL;
        if (world_state.slots[v - 1].t.tid == tid)
            return &world_state.slots[v - 1];
    }
    return NULL;
}

/* Adds tid (stopper only). NULL when the table is full. */
static struct slot *add(int32_t tid) {
    if (world_state.n >= WORLD_MAX)
        return NULL;
    struct slot *s = &world_state.slots[world_state.n];
    memset(&s->t, 0, sizeof s->t);
    s->t.tid = tid;
    s->t.proc_tid = tid; /* (ask_new sets another where /proc's namespace is not ours) */
    s->epoch = atomic_load_explicit(&world_state.epoch, memory_order_relaxed);
    s->second = false;
    atomic_store_explicit(&s->state, SLOT_ASKED, memory_order_relaxed);
    size_t h = hash_of(tid);
    while (atomic_load_explicit(&world_state.hash[h], memory_order_relaxed))
        h = (h + 1) % WORLD_HASH;
    atomic_store_explicit(&world_state.hash[h], (int32_t)++world_state.n, memory_order_release);
    return s;
}

static void clear_table(void) {
    for (size_t i = 0; i < world_state.n; i++) {
        size_t h = hash_of(world_state.slots[i].t.tid);
        while (atomic_load_explicit(&world_state.hash[h], memory_order_relaxed) != (int32_t)(i + 1))
            h = (h + 1) % WORLD_HASH;
        atomic_store_explicit(&world_state.hash[h], 0, memory_order_relaxed);
    }
    /* (Entries removed out of probe order would break lookups of later ones, but the whole
     * table is emptied here, before any lookup of the new epoch.) */
    world_state.n = 0;
}

/* The end of the signal frame's saved state: the ucontext, and past it the FPU/vector state
 * (its size is in the software-reserved bytes of the legacy area when the magic is there). */
static uintptr_t frame_end(ucontext_t *uc) {
    uintptr_t end = (uintptr_t)(uc + 1);
    uintptr_t fp = (uintptr_t)uc->uc_mcontext.fpregs;
    if (fp) {
        const uint32_t *sw = (const uint32_t *)(fp + 464); /* struct _fpx_sw_bytes */
        uintptr_t fend = fp + (sw[0] == 0x46505853u /* FP_XSTATE_MAGIC1 */ ? sw[1] : 512);
        if (fend > end)
            end = fend;
    }
    return end;
}

/* This thread's system calls that a park request cut short (world_calls_cut), and when
 * the current wrapper call was first cut (world_cut_at). */
static __thread uint32_t calls_cut __attribute__((tls_model("initial-exec")));
static __thread uint64_t cut_at __attribute__((tls_model("initial-exec")));
/* The wrapper's calls (world_call_begins) and the one cut_at belongs to: a second park
 * that comes as the cut call returns finds the same context (rax -EINTR after `syscall`) but
 * cut nothing, and must not move cut_at past the time parked (a sleep then slept it again:
 * with marks back to back, 17 s for a sleep of 1 s). */
static __thread uint32_t call_gen __attribute__((tls_model("initial-exec")));
static __thread uint32_t cut_gen __attribute__((tls_model("initial-exec")));

uint32_t world_calls_cut(void) { return calls_cut; }
uint64_t world_cut_at(void) { return cut_at; }
void world_call_begins(void) { call_gen++; }

/* The handler's start, where it may have cut a call short (rax -EINTR): after the call
 * stopped, so a sleep that goes on from here with what the kernel said was left never
 * wakes early. Else 0 (no clock read). */
static uint64_t entered_at(const ucontext_t *uc) {
    return uc->uc_mcontext.gregs[REG_RAX] == -EINTR ? os_monotonic_ns() : 0;
}

/* The request just handled interrupted a system call the kernel does not restart after a
 * handler (poll, epoll_wait, select, nanosleep, pause...: it returns EINTR, and rax holds
 * -EINTR right after the `syscall` instruction) and no signal of the program's waits to be
 * handled once this handler returns (that one would have cut it short too, and the program
 * must see EINTR): count it, so that a wrapper of such a call goes on waiting instead
 * (export/export_waits.c). */
static void note_cut(const ucontext_t *uc, uint64_t entered) {
    if (!entered) /* (rax was not -EINTR: entered_at) */
        return;
    unsigned char insn[2];
    int err = os_read_own(insn, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 2, 2);
    if (err == EFAULT || (!err && (insn[0] != 0x0f || insn[1] != 0x05)))
        return;
    uint64_t pending, mask;
    memcpy(&mask, &uc->uc_sigmask, sizeof mask);
    if (os_sigpending(&pending) != 0 ||
        (pending & ~mask & ~(1ull << (world_state.sig - 1))) != 0)
        return;
    if (cut_gen != call_gen || !cut_at) {
        cut_at = entered;
        cut_gen = call_gen;
    }
    calls_cut++;
}

/* A park signal of the program's (or of another process): its handler, its default action
 * (termination) or nothing (ignored). */
static void pass_on(int sig, siginfo_t *si, void *uc) {
    struct sigaction act = world_state.program;
    bool custom = os_is_handler(&act);
    if (custom) {
        if (act.sa_flags & SA_RESETHAND) { /* one-shot: the default from now on */
            memset(&world_state.program, 0, sizeof world_state.program);
            world_state.program.sa_handler = SIG_DFL;
        }
        fault_call_handler(&act, sig, si, uc);
        return;
    }
    if (act.sa_handler == SIG_IGN && !(act.sa_flags & SA_SIGINFO))
        return;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    __sigaction(sig, &dfl, NULL);
    os_tgkill(os_getpid(), os_gettid(), sig); /* pending until this handler returns */
}

/* The thread sent itself the park signal for the program (world_program_send_begin) and no
 * delivery has answered it yet: if one of our requests was pending then, the kernel merged
 * the program's into it (a standard signal is pending once), and the handler answers both. */
static __thread bool program_owed __attribute__((tls_model("initial-exec")));

/* This thread holds the world lock for an exec (world_exec_begin): a handler of the
 * program's that runs meanwhile and stops the world (a mark) gives up instead of waiting for
 * itself, and an exec it calls goes straight through. */
static __thread bool exec_holding __attribute__((tls_model("initial-exec")));

uint64_t world_test_park_spin_ns;

/* Parks the thread for the stop that asked slot s. */
static void park(struct slot *s, ucontext_t *uc) {
    os_nopark_parked();
    if (__builtin_expect(world_test_park_spin_ns != 0, 0))
        os_spin_ns(world_test_park_spin_ns);
    /* The stop that asked this slot, not world_state.epoch read earlier: a request of a stop
     * that gave up may be handled only now, during the next stop (this thread asked again), and
     * waiting for the old stop's resume would park it for ever. */
    uint32_t epoch = s->epoch;
    s->t.sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    s->t.regs_lo = (uintptr_t)uc;
    s->t.regs_hi = frame_end(uc);
    /* The FS and GS bases are registers too (a runtime may point GS at a heap object:
     * protect_root_register "gsbase"), and the frame does not save them: they go in its
     * reserved words, which rt_sigreturn does not read, so the registers' root holds them. */
    uintptr_t fs, gs;
    os_segment_bases(&fs, &gs);
    uc->uc_mcontext.__reserved1[0] = fs;
    uc->uc_mcontext.__reserved1[1] = gs;
    s->t.tp = os_thread_pointer();
    os_kheld_get(s->t.kheld);
    stack_t ss;
    if (os_sigaltstack_get(&ss) == 0 && !(ss.ss_flags & SS_DISABLE) && ss.ss_size) {
        s->t.altstack_lo = (uintptr_t)ss.ss_sp;
        s->t.altstack_hi = (uintptr_t)ss.ss_sp + ss.ss_size;
    }
    atomic_store_explicit(&s->state, SLOT_PARKED, memory_order_release);
    uint32_t parked = atomic_fetch_add_explicit(&world_state.nparked, 1, memory_order_acq_rel) + 1;
    if (parked >= atomic_load_explicit(&world_state.nexpect, memory_order_acquire))
        os_futex_wake(&world_state.nparked, 1);
    /* From here on, s belongs to the stopper again: touch nothing of world_state but the futex. */
    uint32_t r;
    while ((int32_t)((r = atomic_load_explicit(&world_state.resumed, memory_order_acquire)) -
                     epoch) < 0)
        os_futex_wait(&world_state.resumed, r, 0);
    if (__builtin_expect(world_test_park_spin_ns != 0, 0))
        os_spin_ns(world_test_park_spin_ns); /* (resumed, still in the handler: its mask) */
}

/* A delivery whose siginfo the kernel dropped: past RLIMIT_SIGPENDING it still delivers a
 * standard signal sent with a value, but as from kill() by no one (SI_USER, pid and uid 0),
 * and our request's cookie is gone (sigpending_limit: every stop killed the program, its
 * SIGPWR's default action). Taken for our request while this thread is asked by the stop in
 * progress; then a SIGPWR of the program's whose siginfo was dropped too merges into it, as
 * any does with a request pending (the known gap of a standard signal). */
static bool info_lost_request(const siginfo_t *si) {
    if (si->si_code != SI_USER || si->si_pid != 0 || si->si_uid != 0 ||
        !atomic_load_explicit(&world_state.stopping, memory_order_acquire))
        return false;
    struct slot *s = lookup((int32_t)os_gettid());
    return s && atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_ASKED;
}

/* One delivery of the park signal may carry a request of ours, a signal of the program's, or
 * both (the kernel merged them): it answers each.
 * After a park, the thread takes what came while it was parked (the park handler blocks every
 * signal): a request of ours, when it parked for a signal of the program's that came before
 * the stopper's own request, or a request of the next stop; left pending, a later send of
 * the program's to this thread would merge into it. world_program_send_begin waits for this
 * (world_state.draining).
 * Locks: none (it parks while the stopper holds the world lock). */
static void on_park(int sig, siginfo_t *si, void *ucv) {
    int saved = errno;
    uint64_t entered = entered_at(ucv);
    bool program = false, parked = false;
    siginfo_t program_si, taken;
    for (;;) {
        bool ours = os_is_request(si, world_state.cookie) || info_lost_request(si);
        if (!ours) {
            if (!program)
                program_si = *si;
            program = true;
            if ((si->si_code == SI_TKILL || si->si_code == SI_QUEUE) && si->si_pid == os_getpid())
                program_owed = false; /* (sent to this thread: what it owed is this one) */
        } else if (program_owed) { /* (the program's send merged into this request) */
            program_owed = false;
            if (!program) {
                memset(&program_si, 0, sizeof program_si);
                program_si.si_signo = sig;
                program_si.si_code = SI_TKILL;
                program_si.si_pid = os_getpid();
                program_si.si_uid = (uid_t)os_getuid();
            }
            program = true;
        }
        struct slot *s = NULL;
        if (atomic_load_explicit(&world_state.stopping, memory_order_acquire))
            s = lookup((int32_t)os_gettid());
        /* Asked by the stop in progress: by this request of ours, or by one the kernel merged
         * into the program's signal, or by one still to come (taken below). Inside a stretch
         * that must not be parked in (os/nopark.h: a free between its page's entry and its
         * revocation), the thread asks again as soon as it leaves it. */
        if (s && atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_ASKED &&
            !os_nopark_defer()) {
            if (!parked)
                atomic_fetch_add_explicit(&world_state.draining, 1, memory_order_relaxed);
            parked = true;
            park(s, ucv);
        }
        /* Once parked, whatever came meanwhile, until nothing is pending (a request of the
         * next stop parks it again; one that comes after this is delivered as usual). */
        if (!parked || os_sigtake(sig, &taken) != sig)
            break;
        si = &taken;
    }
    if (parked)
        atomic_fetch_sub_explicit(&world_state.draining, 1, memory_order_release);
    if (program)
        pass_on(sig, &program_si, ucv);
    else
        note_cut(ucv, entered); /* (a request of ours, answered or late: dropped) */
    errno = saved;
}

/* The second park signal's handler: a request of ours parks the thread as on_park does (it
 * takes nothing else: a pending SIGSETXID is glibc's); anything else is glibc's, handed to
 * its handler. Locks: none (as on_park). */
static void on_park_second(int sig, siginfo_t *si, void *ucv) {
    if (!os_is_request(si, world_state.cookie)) {
        world_state.glibc2.handler(sig, si, ucv);
        return;
    }
    int saved = errno;
    uint64_t entered = entered_at(ucv);
    struct slot *s = NULL;
    if (atomic_load_explicit(&world_state.stopping, memory_order_acquire))
        s = lookup((int32_t)os_gettid());
    if (s && atomic_load_explicit(&s->state, memory_order_acquire) == SLOT_ASKED &&
        !os_nopark_defer_second(sig)) {
        atomic_fetch_add_explicit(&world_state.draining, 1, memory_order_relaxed);
        park(s, ucv);
        atomic_fetch_sub_explicit(&world_state.draining, 1, memory_order_release);
    }
    note_cut(ucv, entered);
    errno = saved;
}

/* Stands in front of glibc's handler of SECOND_SIG, with on_park's mask and flags and glibc's
 * restorer. glibc installs its handler once the process has a second thread: until then
 * (or where it has none) left alone, world_state.sig2 still 0, and tried again when a thread
 * blocks the park signal (ask_second). Locks: the world lock. */
static void install_second(void) {
    struct os_ksigaction old, act;
    if (os_ksigaction(SECOND_SIG, NULL, &old) != 0 || !(old.flags & SA_SIGINFO) ||
        !(old.flags & 0x04000000 /* SA_RESTORER */) || !old.restorer)
        return;
    act = old;
    act.handler = on_park_second;
    act.flags = old.flags | SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    act.mask = world_state.handler_mask;
    world_state.glibc2 = old;
    if (os_ksigaction(SECOND_SIG, &act, NULL) == 0)
        world_state.sig2 = SECOND_SIG;
}

/* The tables, mapped once (the world lock held). 0 or -errno. */
static int map_tables(void) {
    if (world_state.slots)
        return 0;
    int err = 0;
    size_t bytes = WORLD_MAX * sizeof(struct slot) + WORLD_HASH * sizeof(int32_t) +
                   WORLD_MAX * sizeof(struct world_thread *) + WORLD_MAX * sizeof(int32_t);
    char *m = os_alloc_meta(bytes, &err);
    if (!m)
        return -err;
    world_state.hash = (_Atomic int32_t *)(m + WORLD_MAX * sizeof(struct slot));
    world_state.parked = (struct world_thread **)(m + WORLD_MAX * sizeof(struct slot) +
                                                  WORLD_HASH * sizeof(int32_t));
    world_state.known = (int32_t *)(world_state.parked + WORLD_MAX);
    world_state.slots = (struct slot *)m; /* (last: the tables are there) */
    return 0;
}

int world_reserve(void) {
    oscar_lock_acquire(&world_state.lock);
    int err = map_tables();
    oscar_lock_release(&world_state.lock);
    return err;
}

int world_init(void) {
    if (atomic_load(&world_state.ready))
        return 0;
    oscar_lock_acquire(&world_state.lock);
    if (atomic_load(&world_state.ready)) {
        oscar_lock_release(&world_state.lock);
        return 0;
    }
    int err = -map_tables();
    if (!err) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_park;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        /* Every other signal waits while a thread is parked: a program's handler running on a
         * parked thread would move pointers below the stack pointer the mark starts from, or
         * allocate and free, in the middle of the mark (tests/programs/protect_shape_signal_move.c).
         * Fault signals stay open (a fault in the park handler must still be reported). */
        sigfillset(&sa.sa_mask);
        sigdelset(&sa.sa_mask, SIGSEGV);
        sigdelset(&sa.sa_mask, SIGBUS);
        /* (signal n is bit n - 1, as in /proc; the kernel never blocks SIGKILL or SIGSTOP) */
        for (int n = 1; n <= 64; n++)
            if (n != SIGKILL && n != SIGSTOP && sigismember(&sa.sa_mask, n) == 1)
                world_state.handler_mask |= 1ull << (n - 1);
        /* The thread that starts Oscar (usually the program's only one yet) is known from
         * the first stop on: asked before the listing opens its descriptor. */
        world_state.known[world_state.nknown++] = (int32_t)os_gettid();
        world_state.cookie = os_random() | 1;
        if (__sigaction(world_state.sig, &sa, &world_state.program) != 0) {
            err = errno;
        } else {
            fault_hold(world_park_mask());
            install_second();
            os_nopark_cookie = world_state.cookie;
            os_nopark_signal = world_state.sig;
            atomic_store(&world_state.pid, os_getpid());
            atomic_store(&world_state.ready, true);
        }
    }
    oscar_lock_release(&world_state.lock);
    return -err;
}

int world_park_signal(void) { return world_state.sig; }
uint64_t world_park_mask(void) {
    return 1ull << (world_state.sig - 1) | 1ull << (SECOND_SIG - 1);
}

void world_unblockable(sigset_t *set) {
    if (set)
        sigdelset(set, world_state.sig);
}

int world_program_sigaction(const struct sigaction *act, struct sigaction *old) {
    /* (Not under the world lock: a parked thread may be the one calling. A torn read of
     * world_state.program by a concurrent pass_on is the same race the kernel has with
     * sigaction.) */
    if (!atomic_load(&world_state.ready))
        return 0;
    if (old)
        *old = world_state.program;
    if (act) {
        world_state.program = *act;
        world_unblockable(&world_state.program.sa_mask);
    }
    return 1;
}

/* Locks: the world lock, for a send to another thread (taken with every signal blocked but
 * faults: no handler of the program's runs while it is held; while it waits, the signals are
 * open, so a stop in progress parks this thread). */
/* world_program_send_begin; before world_init too where `always` (an exec). */
static void send_begin(bool self, struct world_send *w, bool always) {
    w->active = w->locked = false;
    if (!always && !atomic_load(&world_state.ready))
        return;
    w->active = true;
    sigset_t block;
    if (self) {
        sigemptyset(&block);
        sigaddset(&block, world_state.sig);
        os_sigprocmask(SIG_BLOCK, &block, &w->old);
        program_owed = true;
        return;
    }
    sigfillset(&block);
    sigdelset(&block, SIGSEGV);
    sigdelset(&block, SIGBUS);
    os_giveway_wait_begins(&world_state.senders);
    for (;;) {
        os_sigprocmask(SIG_BLOCK, &block, &w->old);
        if (oscar_lock_try(&world_state.lock)) {
            w->locked = true;
            os_giveway_wait_ends(&world_state.senders);
            /* (no stop now: the threads of the last one are leaving the handler) */
            while (atomic_load_explicit(&world_state.draining, memory_order_acquire))
                os_yield();
            return;
        }
        os_sigprocmask(SIG_SETMASK, &w->old, NULL);
        os_yield();
    }
}

void world_program_send_begin(bool self, struct world_send *w) { send_begin(self, w, false); }

/* The process that loaded Oscar (before any world_init: an exec then must still tell a vfork
 * child, whose lock is its parent's, from the process itself). */
__attribute__((constructor)) static void note_pid(void) {
    if (!atomic_load(&world_state.pid))
        atomic_store(&world_state.pid, os_getpid());
}

/* The lock is taken even before world_init: another thread's first mark may be starting
 * the world (world_init, then its first stop, which asks this thread). An exec that went
 * ahead while it did took its request into the new image, which died of SIGPWR
 * (exec_during_first_mark: 63-95 children of 300). */
bool world_exec_begin(struct world_send *w) {
    w->active = w->locked = false;
    if (exec_holding || os_getpid() != atomic_load_explicit(&world_state.pid, memory_order_relaxed))
        return false; /* (a nested exec, or a vfork child: its parent's lock is not its own) */
    send_begin(false, w, true);
    if (!w->locked)
        return false;
    exec_holding = true;
    os_sigprocmask(SIG_SETMASK, &w->old, NULL); /* (the new image inherits the program's) */
    return true;
}

void world_exec_end(struct world_send *w) {
    if (!w->locked)
        return;
    exec_holding = false;
    world_program_send_end(w);
}

void world_program_send_end(struct world_send *w) {
    if (!w->active)
        return;
    if (w->locked)
        oscar_lock_release(&world_state.lock);
    os_sigprocmask(SIG_SETMASK, &w->old, NULL); /* (a send to itself is delivered here) */
}

static bool exempt(int32_t tid) {
    for (int i = 0; i < WORLD_EXEMPT_MAX; i++)
        if (atomic_load_explicit(&world_state.exempt[i], memory_order_relaxed) == tid)
            return true;
    return false;
}

bool world_exempt_self(void) {
    int32_t tid = (int32_t)os_gettid(), none = 0;
    for (int i = 0; i < WORLD_EXEMPT_MAX; i++)
        if (atomic_compare_exchange_strong(&world_state.exempt[i], &none, tid))
            return true;
        else
            none = 0;
    return false;
}

void world_exempt_drop(void) {
    int32_t tid = (int32_t)os_gettid();
    for (int i = 0; i < WORLD_EXEMPT_MAX; i++) {
        int32_t t = tid;
        atomic_compare_exchange_strong(&world_state.exempt[i], &t, 0);
    }
}

void world_fork_child(void) {
    atomic_store_explicit(&world_state.pid, os_getpid(), memory_order_relaxed);
    program_owed = false; /* (a fork child has no signal pending) */
    atomic_store(&world_state.draining, 0); /* (the parent's parked threads are not here) */
    os_giveway_fork_child(&world_state.senders); /* (nor its senders) */
}

void world_exempt_clear(void) {
    for (int i = 0; i < WORLD_EXEMPT_MAX; i++)
        atomic_store(&world_state.exempt[i], 0);
    /* (The parent's threads are not the child's: its only one is this.) */
    if (world_state.known) {
        world_state.nknown = 0;
        world_state.known[world_state.nknown++] = (int32_t)os_gettid();
    }
}

static bool blocks_park(long proc_tid);
static bool asked_second_before(int32_t tid);
static bool ask_second(int pid, struct slot *s);

/* Asks thread tid to park, unless it is the caller, an exempt one or asked already in this
 * epoch. 1 if asked, 0 if not, -EAGAIN when the table is full. */
static long ask(int pid, long self, long tid) {
    if (tid == self || lookup((int32_t)tid) || exempt((int32_t)tid) ||
        (tid == pid && world_state.zombie_leader == pid))
        return 0;
    struct slot *s = add((int32_t)tid);
    if (!s)
        return -EAGAIN;
    atomic_fetch_add(&world_state.nexpect, 1);
    int err = os_send_request(pid, tid, world_state.sig, world_state.cookie);
    if (err == ESRCH || err == EPERM) {
        atomic_store(&s->state, SLOT_GONE);
        atomic_fetch_sub(&world_state.nexpect, 1);
    } else if (!err && asked_second_before((int32_t)tid) && blocks_park(tid)) {
        ask_second(pid, s); /* (at once: it blocked the park signal in the last stops too) */
    }
    /* EPERM: the program's seccomp filter would kill for the request (os/filters.h), so no
     * thread can be asked: the stop fails now rather than at its deadline. */
    return err == EPERM ? -EPERM : 1;
}

/* /proc/self/task, opened for a stop; its identity, to tell it from a descriptor of the
 * program's that took its number (a thread not parked yet may close every descriptor and
 * open one: the lowest). The stopper's, under the world lock. */
static struct {
    uint64_t dev, ino; /* written by open_task_dir (the stopper, under the world lock) */
} task_dir_state;

static long open_task_dir(void) {
    long fd = os_open_dir_stopped("/proc/self/task");
    if (fd >= 0 && os_fd_id((int)fd, &task_dir_state.dev, &task_dir_state.ino) != 0) {
        os_close((int)fd);
        return -EBADF;
    }
    return fd;
}

/* Is fd still the directory open_task_dir opened (no lseek, read or close of a descriptor of
 * the program's)? */
static bool dir_ours(int fd) {
    uint64_t dev, ino;
    return fd >= 0 && os_fd_id(fd, &dev, &ino) == 0 && dev == task_dir_state.dev &&
           ino == task_dir_state.ino;
}

/* Is /proc another pid namespace's than ours (/proc/self names us by another number)? A
 * program in a pid namespace of its own (unshare -p, a sandbox) that kept its parent's /proc
 * lists its threads there by the parent's numbers: asked by those, the requests went to no
 * thread of ours (ESRCH, taken for a thread that exited), the stop went on without them, and
 * a freed object only a running thread's register held was handed out again
 * (protect_root_register "pidns"). */
static bool proc_apart(int pid) {
    char buf[24];
    long n = os_readlink("/proc/self", buf, sizeof buf);
    if (n <= 0)
        return false;
    long v = 0;
    for (const char *c = buf; *c >= '0' && *c <= '9'; c++)
        v = v * 10 + (*c - '0');
    return v != pid;
}

/* Thread proc_tid's /proc/self/task/N/<file> ("status", "stat") into world_buf_state.status;
 * false if gone. */
static bool read_task_file(long proc_tid, const char *file) {
    char path[64];
    struct fmt f = FMT_INIT(path);
    fmt_str(&f, "/proc/self/task/");
    fmt_i64(&f, proc_tid);
    fmt_char(&f, '/');
    fmt_str(&f, file);
    fmt_char(&f, 0);
    long fd = os_open_read(path);
    if (fd < 0)
        return false;
    long n = os_read((int)fd, world_buf_state.status, sizeof world_buf_state.status - 1);
    os_close((int)fd);
    if (n <= 0)
        return false;
    world_buf_state.status[n] = 0;
    return true;
}

static bool read_task_status(long proc_tid) { return read_task_file(proc_tid, "status"); }

/* Is thread proc_tid one of io_uring's workers (iou-wrk-N for requests that wait, iou-sqp-N
 * polling a ring's submissions)? The kernel lists them among the process's threads, but they
 * run no code of the program's and take no signal: asked to park, one never did, and every
 * stop gave up while it lived (the quarantine grew without end). They hold no pointer of the
 * program's a mark could read (a request in flight is README's limit). Told by PF_IO_WORKER
 * in the flags of its stat (the ninth field), which the program cannot set, not by its name,
 * which it can. A thread gone meanwhile is none. */
#define PF_IO_WORKER 0x10
static bool io_worker(long proc_tid) {
    if (!read_task_file(proc_tid, "stat"))
        return false;
    const char *b = world_buf_state.status;
    const char *p = strrchr(b, ')'); /* (its name may hold spaces and parentheses) */
    for (int field = 2; p && field < 9; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return false;
    uint64_t flags = 0;
    for (p++; *p >= '0' && *p <= '9'; p++)
        flags = flags * 10 + (uint64_t)(*p - '0');
    return flags & PF_IO_WORKER;
}

/* Thread proc_tid of /proc's namespace by our number: the last of its status's NSpid (the
 * innermost namespace, ours); 0 if gone or not said. */
static long our_tid(long proc_tid) {
    if (!read_task_status(proc_tid))
        return 0;
    const char *p = strstr(world_buf_state.status, "NSpid:");
    long last = 0;
    for (p = p ? p + 6 : "\n"; *p && *p != '\n';) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p < '0' || *p > '9')
            break;
        for (last = 0; *p >= '0' && *p <= '9'; p++)
            last = last * 10 + (*p - '0');
    }
    return last;
}

/* Lists /proc/self/task and asks every thread not asked yet in this epoch. Returns how many
 * were new, or -errno (-EBADF: the descriptor is no longer ours). */
static long ask_new(int dirfd, int pid, long self) {
    long fresh = 0;
    if (!dir_ours(dirfd))
        return -EBADF;
    if (os_lseek_start(dirfd) < 0)
        return -EIO;
    for (;;) {
        long n = os_getdents(dirfd, world_buf_state.dents, sizeof world_buf_state.dents);
        if (n < 0)
            return n;
        if (n == 0)
            return fresh;
        for (long off = 0; off < n;) {
            struct os_dirent *d = (void *)(world_buf_state.dents + off);
            off += d->reclen;
            long tid = 0;
            const char *c = d->name;
            if (*c < '0' || *c > '9')
                continue;
            for (; *c >= '0' && *c <= '9'; c++)
                tid = tid * 10 + (*c - '0');
            long proc_tid = tid;
            if (world_state.proc_apart && (tid = our_tid(proc_tid)) <= 0)
                continue; /* (gone meanwhile) */
            /* (a thread never parked before: is it a thread of the program's at all?) */
            if (tid != self && !lookup((int32_t)tid) && !exempt((int32_t)tid) &&
                io_worker(proc_tid))
                continue;
            long r = ask(pid, self, tid);
            if (r < 0)
                return r;
            struct slot *s = world_state.proc_apart ? lookup((int32_t)tid) : NULL;
            if (s)
                s->t.proc_tid = (pid_t)proc_tid;
            fresh += r;
        }
        if (!dir_ours(dirfd)) /* (before the next read: a thread may have closed it) */
            return -EBADF;
    }
}

/* Asks the threads the last stop parked (one that exited since is gone: tgkill says ESRCH,
 * also for a number the kernel gave to a thread of another process since). How many were
 * asked, or -errno. */
static long ask_known(int pid, long self) {
    long fresh = 0;
    for (size_t i = 0; i < world_state.nknown; i++) {
        long r = ask(pid, self, world_state.known[i]);
        if (r < 0)
            return r;
        fresh += r;
    }
    return fresh;
}

/* The hexadecimal signal mask after `field` in world_buf_state.status; false if absent. */
static bool status_mask(const char *field, uint64_t *mask) {
    const char *p = strstr(world_buf_state.status, field);
    if (!p)
        return false;
    *mask = 0;
    for (p += strlen(field); *p == ' ' || *p == '\t'; p++)
        ;
    for (;; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            return true;
        *mask = *mask << 4 | (uint64_t)d;
    }
}

/* Does thread proc_tid (its number in /proc) block the park signal and leave it pending (SigBlk
 * and SigPnd in /proc)?
 * Only a raw system call can block it for long: our wrappers remove it from every mask. A
 * thread in our handler blocks it too (the handler's mask) until it counts as parked, but
 * the signal it took is no longer pending: judged on the mask alone, a thread parking as the
 * stopper looked made the stop give up (test_thread_parking_as_the_stopper_reads_its_mask).
 * A thread resumed by the last stop and not out of the handler yet (no CPU for it) has this
 * stop's request pending as well: it takes it as it leaves, and is waited for
 * (test_thread_leaving_the_park_handler_as_the_next_stop_asks). */
static bool blocks_park(long proc_tid) {
    if (!read_task_status(proc_tid))
        return false;
    uint64_t mask, pending;
    if (!status_mask("SigBlk:", &mask) || !status_mask("SigPnd:", &pending))
        return false;
    /* One that blocks every signal (the kernel keeps SIGKILL and SIGSTOP out of any mask) and
     * runs (or waits for a CPU) is taken for a thread still starting: glibc makes its threads
     * with every signal blocked until their own mask is set, and on a loaded machine a new
     * thread may wait past 50 ms for a CPU. It is waited for, until the deadline
     * (protect_new_thread_slow). */
    const char *st = strstr(world_buf_state.status, "State:");
    if ((mask | 1ull << (SIGKILL - 1) | 1ull << (SIGSTOP - 1)) == ~0ull && st) {
        for (st += 6; *st == ' ' || *st == '\t'; st++)
            ;
        if (*st == 'R')
            return false;
    }
    /* In our handler: its mask, and the fault signals it leaves open still open (a thread
     * that blocks every signal by a raw system call blocks those too). */
    uint64_t faults = 1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1);
    if ((mask & world_state.handler_mask) == world_state.handler_mask && !(mask & faults))
        return false;
    return (mask & pending) >> (world_state.sig - 1) & 1;
}

/* Has the process's first thread left with pthread_exit? The kernel keeps it, a zombie
 * without memory (it never parks, and tgkill does not say ESRCH for it), until the last
 * thread is gone, and its /proc/self/exe is gone with its memory (ENOENT). No descriptor
 * taken (a thread of the program's may be opening one). */
static bool first_thread_exited(void) {
    char buf[8];
    return os_readlink("/proc/self/exe", buf, sizeof buf) == -ENOENT;
}

/* first_thread_exited, remembered for pid: its stops never ask that thread again. */
static bool leader_gone(int pid) {
    if (!first_thread_exited())
        return false;
    world_state.zombie_leader = pid;
    return true;
}

/* Was tid asked with the second park signal by an earlier stop? */
static bool asked_second_before(int32_t tid) {
    for (int i = 0; i < SECOND_TIDS; i++)
        if (world_state.second_tids[i] == tid)
            return true;
    return false;
}

/* Slot s's thread blocks the park signal (blocks_park, whose reading of its status is in
 * world_buf_state): asks it with the second one (SECOND_SIG), unless it blocks that too.
 * true: asked (now or before), wait for it. */
static bool ask_second(int pid, struct slot *s) {
    if (s->second)
        return true;
    uint64_t mask;
    if (!world_state.sig2)
        install_second();
    if (!world_state.sig2 || !status_mask("SigBlk:", &mask) ||
        (mask >> (world_state.sig2 - 1) & 1))
        return false;
    if (os_send_request(pid, s->t.tid, world_state.sig2, world_state.cookie) != 0)
        return false;
    s->second = true;
    if (!asked_second_before(s->t.tid))
        world_state.second_tids[world_state.second_next++ % SECOND_TIDS] = s->t.tid;
    return true;
}

/* Waits until every asked thread has parked or gone. 0, -ETIMEDOUT at the deadline, or
 * -EAGAIN (a thread blocks the park signal). */
static int wait_parked(int pid, uint64_t start, uint64_t deadline) {
    for (;;) {
        uint32_t seen = atomic_load_explicit(&world_state.nparked, memory_order_acquire);
        if (seen >= atomic_load_explicit(&world_state.nexpect, memory_order_acquire))
            return 0;
        if (os_futex_wait(&world_state.nparked, seen, 2000000) == ETIMEDOUT) {
            /* Slow to answer: has any of them exited (maybe with every signal blocked)? After
             * 50 ms (a thread being created runs a moment with every signal blocked), one that
             * blocks the park signal will not answer: give up at once rather than at the
             * deadline (unless it looks like a thread still starting: blocks_park). */
            uint64_t now = os_monotonic_ns();
            bool check_masks = now - start > 50000000u;
            for (size_t i = 0; i < world_state.n; i++) {
                struct slot *s = &world_state.slots[i];
                int expected = SLOT_ASKED;
                if (atomic_load(&s->state) != SLOT_ASKED)
                    continue;
                if (os_tgkill(pid, s->t.tid, 0) == ESRCH ||
                    (s->t.tid == pid && leader_gone(pid))) {
                    if (atomic_compare_exchange_strong(&s->state, &expected, SLOT_GONE))
                        atomic_fetch_sub(&world_state.nexpect, 1);
                } else if ((check_masks || asked_second_before(s->t.tid)) &&
                           blocks_park(s->t.proc_tid) && atomic_load(&s->state) == SLOT_ASKED) {
                    /* (Not sooner, even for a thread that blocked it last time: fork tries
                     * three stops, and one that waits may see the thread unblock it;
                     * fork_stop_gives_up.) */
                    if (!ask_second(pid, s))
                        return -EAGAIN;
                }
            }
            if (now > deadline)
                return -ETIMEDOUT;
        }
    }
}

static void release_parked(uint32_t epoch) {
    atomic_store_explicit(&world_state.stopping, false, memory_order_release);
    atomic_store_explicit(&world_state.resumed, epoch, memory_order_release);
    os_futex_wake(&world_state.resumed, 0x7fffffff);
}

bool world_only_own_threads(unsigned own) {
    /* Then /proc/self/task's link count is 2 + every thread, the zombie included (stat: no
     * descriptor either). */
    if (!first_thread_exited())
        return false;
    uint64_t nlink;
    return os_stat_nlink("/proc/self/task", &nlink) == 0 && nlink >= 3 && nlink - 3 <= own;
}

static int stop_locked(void);

/* A send of the program's to another thread takes the world lock between two stops; with
 * stops back to back it lost that race again and again: single sends waited up to 0.7 s
 * (signal_park_counts other nofork). A stop about to begin lets it go first. */
int world_stop(void) {
    if (!atomic_load(&world_state.ready))
        return -ENOSYS;
    if (exec_holding)
        return -EBUSY;
    os_giveway_yield(&world_state.senders); /* (locks: none yet) */
    oscar_lock_acquire(&world_state.lock);
    return stop_locked();
}

int world_try_stop(void) {
    if (!atomic_load(&world_state.ready))
        return -ENOSYS;
    if (!oscar_lock_try(&world_state.lock))
        return -EBUSY;
    return stop_locked();
}

/* How long a stop waits for the threads of the last one to leave the park handler. */
#define DRAIN_WAIT_NS 50000000ull

/* The threads the last stop parked have left the park handler (or 50 ms passed: one frozen
 * there by SIGSTOP or a tracer must not hold every stop back). A thread woken from its park
 * that gets no processor before the next request takes that one in the same handler, with
 * every signal blocked: with stops back to back it stayed there across dozens of them, and
 * two of the program's signals sent to it meanwhile merged into one (signals_between_stops:
 * 2-6 of 30 handled; waits_across_stops hung in sigsuspend). Once it has left, what the
 * program sent it is delivered as it returns, and the next request finds it in the
 * program's code. Locks: the world lock (the parked threads take none). */
static void wait_drained(void) {
    if (!atomic_load_explicit(&world_state.draining, memory_order_acquire)) {
        world_state.drain_gave_up = false;
        return;
    }
    if (world_state.drain_gave_up)
        return; /* (still there since: frozen, not slow; the next stops do not wait for it) */
    uint64_t until = os_monotonic_ns() + DRAIN_WAIT_NS;
    while (atomic_load_explicit(&world_state.draining, memory_order_acquire)) {
        if (os_monotonic_ns() >= until) {
            world_state.drain_gave_up = true;
            return;
        }
        os_yield();
    }
}

/* world_stop with the world lock taken. */
static int stop_locked(void) {
    int pid = os_getpid();
    long self = os_gettid();
    wait_drained();
    clear_table();
    world_state.nparked_list = 0;
    atomic_store(&world_state.nparked, 0);
    atomic_store(&world_state.nexpect, 0);
    uint32_t epoch = atomic_fetch_add(&world_state.epoch, 1) + 1;
    atomic_store_explicit(&world_state.stopping, true, memory_order_release);
    uint64_t start = os_monotonic_ns(), deadline = start + WORLD_TIMEOUT_NS;
    world_state.proc_apart = proc_apart(pid);
    long err = ask_known(pid, self), dirfd = -1;
    if (err > 0)
        err = wait_parked(pid, start, deadline);
    if (err == 0 && (dirfd = open_task_dir()) < 0)
        err = dirfd;
    for (int lost = 0; !err;) {
        long fresh = ask_new((int)dirfd, pid, self);
        if (fresh == -EBADF && lost++ < 3) {
            /* A thread not parked yet closed it (and its number may be the program's now:
             * never closed here). Once those asked are parked, again. */
            if ((err = wait_parked(pid, start, deadline)) == 0 && (dirfd = open_task_dir()) < 0)
                err = dirfd;
            continue;
        }
        if (fresh < 0) {
            err = fresh;
            break;
        }
        if ((err = wait_parked(pid, start, deadline)) != 0)
            break;
        if (fresh == 0)
            break; /* every thread parked, and none appeared since the last listing */
    }
    if (dir_ours((int)dirfd))
        os_close((int)dirfd);
    /* The next stop asks these first (parked, or asked by a stop that gave up), and the
     * stopper: the listing then runs beside new threads only. */
    world_state.nknown = 0;
    world_state.known[world_state.nknown++] = (int32_t)self;
    for (size_t i = 0; i < world_state.n && world_state.nknown < WORLD_MAX; i++)
        if (atomic_load(&world_state.slots[i].state) != SLOT_GONE)
            world_state.known[world_state.nknown++] = world_state.slots[i].t.tid;
    if (err) {
        release_parked(epoch);
        oscar_lock_release(&world_state.lock);
        return (int)err;
    }
    for (size_t i = 0; i < world_state.n; i++)
        if (atomic_load(&world_state.slots[i].state) == SLOT_PARKED)
            world_state.parked[world_state.nparked_list++] = &world_state.slots[i].t;
    return 0;
}

size_t world_count(void) { return world_state.nparked_list; }

const struct world_thread *world_thread_at(size_t i) {
    if (i >= world_state.nparked_list)
        return NULL;
    return world_state.parked[i];
}

void world_resume(void) {
    release_parked(atomic_load(&world_state.epoch));
    world_state.nparked_list = 0;
    oscar_lock_release(&world_state.lock);
}
