/* team: see team.h.
 *
 * A job is published in one word, `claim`: the job's number (16 bits, against a stale
 * helper's compare-and-swap), its chunks (24 bits) and the next chunk to hand out (24 bits).
 * A thread takes a chunk by a compare-and-swap on it, and reads the job's function and sizes
 * only after that: a job cannot end while one of its chunks is taken and not done, so what it
 * reads is that job's. `done` counts the chunks finished; the caller waits for all of them. */
#define _GNU_SOURCE
#include "scan/team.h"
#include "scan/world.h"
#include "os/os.h"
#include "os/ownthread.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>

#pragma weak world_exempt_self
#pragma weak world_exempt_clear
#pragma weak world_exempt_drop
#pragma weak world_park_signal
#pragma weak world_only_own_threads

#define TEAM_MAX 15                  /* helpers at most (OSCAR_MARK_THREADS caps at 16) */
#define TEAM_STACK (256UL << 10)     /* a job's frames: the scan's 4 KiB buffers and little else */
#define FIELD ((1ULL << 24) - 1)     /* a 24-bit field of `claim` */
#define SPIN 2000                    /* pauses the caller spins before it sleeps (~0.1 ms) */
#define IDLE_NS 250000000ull         /* a helper asks whether the program is gone this often */
#define START_WAIT_NS 1000000000ull  /* team_start waits this long at most for its helpers */

/* All of team's state. */
static struct {
    unsigned threads;              /* OPT_MARK_THREADS resolved, the caller included (init) */
    bool asked;                    /* ... set by the user (not 0: auto) */
    atomic_uint running;           /* helpers started in this process */
    atomic_bool failed;            /* a helper could not start: no more tries here */
    atomic_flag starting;          /* team_start in progress (test and set) */
    void *stack[TEAM_MAX];         /* their stacks (metadata; a fork child reuses them) */
    _Atomic int32_t tid[TEAM_MAX]; /* theirs (each sets its own; 0 before) */
    atomic_bool quit;              /* team_quit: the helpers leave at their next wake-up */
    _Atomic uint32_t wake;         /* futex: bumped for every job the helpers are woken for */
    _Atomic uint64_t claim;        /* job number << 48 | chunks << 24 | next chunk */
    _Atomic uint32_t done;         /* futex: chunks of the current job finished */
    uint32_t job_number;           /* the caller's (one job at a time) */
    /* The current job, written before `claim` publishes it (release). */
    team_job job;
    size_t n, chunk;
} team_state = {.starting = ATOMIC_FLAG_INIT};

void team_init(unsigned threads) {
    unsigned cpus = os_cpu_count();
    team_state.asked = threads != 0;
    if (!threads)
        threads = cpus < 4 ? cpus : 4;
    team_state.threads = threads > TEAM_MAX + 1 ? TEAM_MAX + 1 : threads;
}

bool team_asked(void) { return team_state.asked; }

unsigned team_wanted(void) { return team_state.threads ? team_state.threads - 1 : 0; }

unsigned team_helpers(void) { return atomic_load_explicit(&team_state.running, memory_order_acquire); }

/* Take chunks of the current job until none is left. */
static void work(void) {
    for (;;) {
        uint64_t c = atomic_load_explicit(&team_state.claim, memory_order_acquire);
        uint64_t next = c & FIELD, total = (c >> 24) & FIELD;
        if (next >= total)
            return;
        if (!atomic_compare_exchange_weak_explicit(&team_state.claim, &c, c + 1,
                                                   memory_order_acq_rel, memory_order_acquire))
            continue;
        size_t first = (size_t)next * team_state.chunk;
        size_t last = first + team_state.chunk < team_state.n ? first + team_state.chunk
                                                              : team_state.n;
        team_state.job(first, last);
        if (atomic_fetch_add_explicit(&team_state.done, 1, memory_order_acq_rel) + 1 == total)
            os_futex_wake(&team_state.done, 1);
    }
}

static void *helper_main(void *arg) {
    if (world_exempt_self)
        world_exempt_self(); /* (full table: stops park this thread, and the caller does all) */
    atomic_store(&team_state.tid[(uintptr_t)arg], (int32_t)os_gettid()); /* (team_start waits) */
    uint32_t seen = atomic_load(&team_state.wake);
    for (;;) {
        uint32_t w;
        while ((w = atomic_load(&team_state.wake)) == seen) {
            /* Idle: if the program's threads are all gone (its first one left with
             * pthread_exit), Oscar's must not keep the process alive (glibc's exit(0) comes
             * with the last pthread's end): leave. */
            int err = os_futex_wait(&team_state.wake, seen, IDLE_NS);
            if (err == EPERM || (err == ETIMEDOUT && atomic_load(&team_state.wake) == seen &&
                                 world_only_own_threads &&
                                 world_only_own_threads(os_threads_own()))) {
                /* (EPERM: a seccomp filter of the program's refuses the wait, which would
                 * fail at once for ever: this thread would spin) */
                atomic_fetch_sub(&team_state.running, 1);
                goto leave;
            }
        }
        seen = w;
        if (atomic_load(&team_state.quit))
            break;
        work();
    }
leave:
    /* (A tid the kernel may give to a thread of the program's next must not stay exempt.) */
    if (world_exempt_drop)
        world_exempt_drop();
    os_thread_leaving();
    return NULL;
}

unsigned team_start(void) {
    unsigned want = team_wanted(), have = team_helpers();
    if (have >= want || atomic_load(&team_state.failed) || !world_exempt_self ||
        atomic_flag_test_and_set(&team_state.starting))
        return have;
    sigset_t open;
    sigemptyset(&open);
    sigaddset(&open, SIGSEGV);
    sigaddset(&open, SIGBUS);
    sigaddset(&open, world_park_signal()); /* (until it is exempt, a stop parks it) */
    for (unsigned i = have; i < want; i++) {
        int err;
        if (!team_state.stack[i])
            team_state.stack[i] = os_alloc_meta(TEAM_STACK, &err);
        atomic_store(&team_state.tid[i], 0);
        if (!team_state.stack[i] || os_thread_start(helper_main, (void *)(uintptr_t)i,
                                                    team_state.stack[i],
                                                    TEAM_STACK, &open, "oscar-team") != 0) {
            atomic_store(&team_state.failed, true);
            break;
        }
        atomic_fetch_add_explicit(&team_state.running, 1, memory_order_release);
    }
    /* Until a helper is exempt, a stop asks it to park; a new thread runs a while with every
     * signal blocked, and on a loaded machine that while passed the 50 ms after which a stop
     * gives up on a thread that blocks its signal: the very next mark, the one the helpers
     * were started for, failed (protect_team_slow_start). So they are waited for, 1 s at most
     * (a later stop waits for a slow one anyway). Locks held: none. */
    uint64_t deadline = os_monotonic_ns() + START_WAIT_NS;
    _Atomic uint32_t nap = 0; /* (a futex nobody wakes: a 0.1 ms sleep) */
    for (unsigned i = have, n = team_helpers(); i < n; i++)
        while (!atomic_load(&team_state.tid[i]) && os_monotonic_ns() < deadline)
            os_futex_wait(&nap, 0, 100000);
    atomic_flag_clear(&team_state.starting);
    return team_helpers();
}

void team_begin(team_job job, size_t n, size_t chunk) {
    if (!chunk)
        chunk = 1;
    if (n / chunk >= FIELD)
        chunk = n / (FIELD - 1) + 1;
    uint64_t total = (n + chunk - 1) / chunk;
    team_state.job = job;
    team_state.n = n;
    team_state.chunk = chunk;
    atomic_store_explicit(&team_state.done, 0, memory_order_relaxed);
    team_state.job_number++;
    atomic_store_explicit(&team_state.claim,
                          (uint64_t)(team_state.job_number & 0xFFFF) << 48 | total << 24,
                          memory_order_release);
    if (total > 1 && team_helpers()) {
        atomic_fetch_add(&team_state.wake, 1);
        os_futex_wake(&team_state.wake, INT_MAX);
    }
}

void team_finish(void) {
    work();
    uint64_t total = (atomic_load(&team_state.claim) >> 24) & FIELD;
    uint32_t d;
    for (unsigned spins = 0; (d = atomic_load(&team_state.done)) < total; spins++) {
        if (spins < SPIN)
            __builtin_ia32_pause();
        else
            os_futex_wait(&team_state.done, d, 1000 * 1000);
    }
}

bool team_quit(void) {
    while (atomic_flag_test_and_set(&team_state.starting))
        os_yield(); /* (a team_start in progress ends first) */
    unsigned n = team_helpers();
    bool ok = true;
    if (n) {
        atomic_store(&team_state.quit, true);
        atomic_fetch_add(&team_state.wake, 1);
        os_futex_wake(&team_state.wake, INT_MAX);
        for (unsigned i = 0; i < n; i++) {
            int32_t tid;
            while (!(tid = atomic_load(&team_state.tid[i])))
                os_yield(); /* (started, not yet running: it will see quit) */
            ok &= os_thread_gone(tid, 1000000000ull);
        }
        atomic_store(&team_state.running, 0);
        atomic_store(&team_state.quit, false);
    }
    atomic_flag_clear(&team_state.starting);
    return ok;
}

void team_fork_child(void) {
    atomic_store(&team_state.running, 0);
    atomic_store(&team_state.failed, false);
    atomic_flag_clear(&team_state.starting);
    if (world_exempt_clear)
        world_exempt_clear();
}
