/* filters: see filters.h. A small interpreter of seccomp's classic BPF (the instructions the
 * kernel accepts in a filter) over a copy of each filter the program installed. */
#define _GNU_SOURCE
#include "os/filters.h"
#include "os/os.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>

/* The kernel takes at most 32768 instructions over all filters of a thread (each filter
 * counting 4 more): room for all of them, in bss (not resident until a filter comes). */
#define FILTER_INSNS_MAX 32768
#define FILTERS_MAX 1024

/* A record's state: empty until os_filter_add has written it (the kernel has not got the
 * filter yet: skipped), pending until the program's install returned, then on or dropped. */
enum { F_EMPTY, F_PENDING, F_ON, F_DROPPED };

_Atomic bool os_filters_on;
void (*os_filters_refused_hook)(long nr);

/* No lock: a record and its instructions are claimed with an atomic add each (two threads of
 * the program may install filters at once), written, then published by their state. */
static struct {
    struct sock_filter insns[FILTER_INSNS_MAX]; /* copies, claimed through used_insns */
    /* One record per filter, in the order claimed: written by the os_filter_add that claimed
     * it before its state leaves F_EMPTY, then only its state changes (os_filter_done). */
    struct {
        uint32_t off, len; /* its instructions: insns[off, off + len) */
        bool strict;    /* SECCOMP_MODE_STRICT: read, write, exit, rt_sigreturn only */
        bool unknown;   /* its instructions could not be read: it refuses everything */
        atomic_int state; /* F_*, release after the fields above */
    } f[FILTERS_MAX]; /* (records: see above) */
    atomic_uint claimed;    /* records claimed (atomic add) */
    atomic_uint used_insns; /* instructions claimed (atomic add) */
    atomic_bool no_room;    /* a filter did not fit: every call refused from then on */
    atomic_bool refused;    /* the hook was called (atomic exchange, once) */
} filters_state;

/* This thread entered strict mode (os_filter_add's caller, while its install is pending or
 * on): the kernel applies strict mode to that thread alone, and Oscar's other threads (the
 * mark's team, its marker) go on as before; refusing their calls too left a helper spinning
 * on a wait that failed at once, the process alive after its only thread left
 * (tests/programs/seccomp_strict_exit.c). */
static __thread bool strict_here __attribute__((tls_model("initial-exec")));

/* The program's memory: through process_vm_readv, so that a bad pointer is an error, not a
 * fault (the kernel's install then refuses it too); where a filter already in place refuses
 * that call, read as it is (the program hands its own filter, which it just wrote). */
static bool allowed(long nr, const long args[6]);
static bool read_program(void *dst, uintptr_t src, size_t n) {
    static const long none[6];
    int err = EPERM;
    if (!atomic_load(&os_filters_on) || (allowed(SYS_getpid, none) &&
                                         allowed(SYS_process_vm_readv, none)))
        err = os_read_own(dst, src, n);
    if (err == EFAULT || err == ENOMEM)
        return false;
    if (err)
        memcpy(dst, (const void *)src, n);
    return true;
}

int os_filter_add(const void *fprog, bool strict) {
    struct sock_fprog prog = {0, NULL};
    bool unknown = !strict && !read_program(&prog, (uintptr_t)fprog, sizeof prog);
    unsigned len = strict || unknown ? 0 : prog.len;
    unsigned n = atomic_fetch_add(&filters_state.claimed, 1);
    unsigned off = atomic_fetch_add(&filters_state.used_insns, len);
    if (n >= FILTERS_MAX || off + len > FILTER_INSNS_MAX || off + len < off) {
        atomic_store(&filters_state.no_room, true);
        atomic_store_explicit(&os_filters_on, true, memory_order_release);
        return -1;
    }
    if (len && !read_program(&filters_state.insns[off], (uintptr_t)prog.filter,
                             len * sizeof(struct sock_filter)))
        unknown = true, len = 0;
    filters_state.f[n].off = off;
    filters_state.f[n].len = len;
    filters_state.f[n].strict = strict;
    if (strict)
        strict_here = true;
    filters_state.f[n].unknown = unknown || (!strict && !len);
    atomic_store_explicit(&filters_state.f[n].state, F_PENDING, memory_order_release);
    atomic_store_explicit(&os_filters_on, true, memory_order_release);
    return (int)n;
}

void os_filter_done(int h, bool ok) {
    if (h < 0)
        return; /* (no room: every call stays refused, whether it was installed or not) */
    /* A dropped record keeps its room: a thread of Oscar's may still be reading it. */
    atomic_store_explicit(&filters_state.f[h].state, ok ? F_ON : F_DROPPED, memory_order_release);
    if (!ok && filters_state.f[h].strict)
        strict_here = false; /* (a thread enters strict mode once: no other strict record) */
}

/* The filter's answer for one call, as the kernel's interpreter gives it. An instruction the
 * kernel would not have taken (it checked the filter at install) answers "kill". */
static uint32_t run(const struct sock_filter *p, uint32_t len, const uint32_t data[16]) {
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    for (uint32_t pc = 0; pc < len; pc++) {
        const struct sock_filter *i = &p[pc];
        uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? x : k;
        switch (BPF_CLASS(i->code)) {
        case BPF_LD:
        case BPF_LDX: {
            uint32_t v;
            switch (BPF_MODE(i->code)) {
            case BPF_ABS:
                if (BPF_SIZE(i->code) != BPF_W || BPF_CLASS(i->code) != BPF_LD || k % 4 ||
                    k >= 64)
                    return SECCOMP_RET_KILL_PROCESS;
                v = data[k / 4];
                break;
            case BPF_LEN: v = 64; break;
            case BPF_IMM: v = k; break;
            case BPF_MEM:
                if (k >= BPF_MEMWORDS)
                    return SECCOMP_RET_KILL_PROCESS;
                v = mem[k];
                break;
            default: return SECCOMP_RET_KILL_PROCESS;
            }
            if (BPF_CLASS(i->code) == BPF_LD)
                a = v;
            else
                x = v;
            break;
        }
        case BPF_ST:
        case BPF_STX:
            if (k >= BPF_MEMWORDS)
                return SECCOMP_RET_KILL_PROCESS;
            mem[k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
            break;
        case BPF_ALU:
            switch (BPF_OP(i->code)) {
            case BPF_ADD: a += src; break;
            case BPF_SUB: a -= src; break;
            case BPF_MUL: a *= src; break;
            case BPF_DIV:
                if (!src)
                    return 0; /* (the kernel's program ends with 0: kill the thread) */
                a /= src;
                break;
            case BPF_MOD:
                if (!src)
                    return 0;
                a %= src;
                break;
            case BPF_AND: a &= src; break;
            case BPF_OR: a |= src; break;
            case BPF_XOR: a ^= src; break;
            case BPF_LSH: a = src >= 32 ? 0 : a << src; break;
            case BPF_RSH: a = src >= 32 ? 0 : a >> src; break;
            case BPF_NEG: a = -a; break;
            default: return SECCOMP_RET_KILL_PROCESS;
            }
            break;
        case BPF_JMP: {
            bool t;
            switch (BPF_OP(i->code)) {
            case BPF_JA: pc += k; continue;
            case BPF_JEQ: t = a == src; break;
            case BPF_JGT: t = a > src; break;
            case BPF_JGE: t = a >= src; break;
            case BPF_JSET: t = (a & src) != 0; break;
            default: return SECCOMP_RET_KILL_PROCESS;
            }
            pc += t ? i->jt : i->jf;
            break;
        }
        case BPF_RET:
            return BPF_RVAL(i->code) == BPF_A ? a : k;
        case BPF_MISC:
            if (BPF_MISCOP(i->code) == BPF_TAX)
                x = a;
            else
                a = x;
            break;
        default: return SECCOMP_RET_KILL_PROCESS;
        }
    }
    return SECCOMP_RET_KILL_PROCESS; /* (ran off the end: the kernel never lets a filter) */
}

/* The kernel's precedence: the lowest action, compared as a signed number, wins. */
static int32_t action(uint32_t r) { return (int32_t)(r & SECCOMP_RET_ACTION_FULL); }

static bool allowed(long nr, const long args[6]) {
    uint32_t data[16]; /* struct seccomp_data: nr, arch, instruction_pointer, args[6] */
    data[0] = (uint32_t)nr;
    data[1] = AUDIT_ARCH_X86_64;
    data[2] = data[3] = 0; /* (where the call is made from: not known, so 0) */
    for (int i = 0; i < 6; i++) {
        data[4 + 2 * i] = (uint32_t)(uint64_t)args[i];
        data[5 + 2 * i] = (uint32_t)((uint64_t)args[i] >> 32);
    }
    int32_t worst = action(SECCOMP_RET_ALLOW);
    if (atomic_load_explicit(&filters_state.no_room, memory_order_acquire))
        worst = action(SECCOMP_RET_KILL_PROCESS);
    unsigned n = atomic_load_explicit(&filters_state.claimed, memory_order_acquire);
    for (unsigned h = 0; h < n && h < FILTERS_MAX; h++) {
        int st = atomic_load_explicit(&filters_state.f[h].state, memory_order_acquire);
        if (st == F_EMPTY || st == F_DROPPED)
            continue;
        uint32_t r;
        if (filters_state.f[h].strict && !strict_here)
            continue; /* (another thread's) */
        if (filters_state.f[h].strict)
            r = nr == SYS_read || nr == SYS_write || nr == SYS_exit || nr == SYS_rt_sigreturn
                    ? SECCOMP_RET_ALLOW
                    : SECCOMP_RET_KILL_PROCESS;
        else if (filters_state.f[h].unknown)
            r = SECCOMP_RET_KILL_PROCESS;
        else
            r = run(&filters_state.insns[filters_state.f[h].off], filters_state.f[h].len, data);
        if (action(r) < worst)
            worst = action(r);
    }
    return worst == action(SECCOMP_RET_ALLOW) || worst == action(SECCOMP_RET_LOG) ||
           worst == action(SECCOMP_RET_ERRNO);
}

bool os_filters_would_allow(long nr, const long args[6]) { return allowed(nr, args); }

bool os_filters_allow(long nr, const long args[6]) {
    if (allowed(nr, args))
        return true;
    if (!atomic_exchange(&filters_state.refused, true) && os_filters_refused_hook)
        os_filters_refused_hook(nr);
    return false;
}
