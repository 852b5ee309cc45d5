/* stack: see stack.h. */
#define _GNU_SOURCE
#include "report/stack.h"
#include "base/options.h"
#include "os/os.h"
#include "mem/region.h"
#include "base/stats.h"
#include "report/dwarf.h"
#include "report/unwind.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>

int stack_depth; /* OSCAR_STACK_DEPTH: set once by stack_store_init, at init */

struct stack_slot {
    _Atomic uint64_t hash;   /* 0: empty; claimed by CAS */
    _Atomic uint32_t frames; /* frame count, published last (0: being written) */
    uint32_t pad;
    uintptr_t pc[STACK_MAX_FRAMES];
};

/* The recorded stacks' state (stack_depth, above, is read by the callers: set once by
 * stack_store_init). Per thread: stack_top and my_tid, below, TLS. */
static struct {
    /* The stack store, a hash table of stacks: allocated once by stack_store_init (at init);
     * its slots are claimed by CAS on their hash, lock-free. */
    struct stack_slot *slots;
    uint64_t slot_mask; /* set once with slots */
    /* One record per page of the region (who allocated and freed its object): allocated
     * once by stack_init; each record is written by the thread that owns its object. */
    struct obj_record *records;
    /* records' pages still mapped: set by stack_init, lowered by records_shrink (the
     * region's shrink hook, under its caller's one-at-a-time recount) */
    size_t records_pages;
    uintptr_t lib_lo, lib_hi; /* liboscar's mapped image: set once by stack_store_init */
} stack_state;
extern void *__libc_stack_end;
static __thread uintptr_t stack_top __attribute__((tls_model("initial-exec")));
static __thread uint32_t my_tid __attribute__((tls_model("initial-exec")));

/* The kernel's thread id, asked once per thread (fork resets it: stack_after_fork). */
uint32_t stack_thread_id(void) {
    if (!my_tid)
        my_tid = (uint32_t)os_gettid();
    return my_tid;
}

void stack_after_fork(void) {
    my_tid = 0;
    unwind_after_fork();
    dwarf_after_fork();
}

#define PROBES 64

static void find_own_image(void) {
    Dl_info info;
    if (!dladdr((void *)&find_own_image, &info) || !info.dli_fbase)
        return;
    const ElfW(Ehdr) *eh = info.dli_fbase;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    uintptr_t hi = 0;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > hi)
            hi = ph[i].p_vaddr + ph[i].p_memsz;
    stack_state.lib_lo = (uintptr_t)eh;
    stack_state.lib_hi = stack_state.lib_lo + hi;
}

/* The region gave back its top (RLIMIT_AS lowered): so do the records of its pages. */
static void records_shrink(uintptr_t new_end) {
    uintptr_t lo = (uintptr_t)&stack_state.records[(new_end - oscar_region.base) >> OSCAR_PAGE_SHIFT];
    uintptr_t hi = (uintptr_t)&stack_state.records[stack_state.records_pages];
    lo = align_up(lo, OSCAR_PAGE);
    hi &= ~(OSCAR_PAGE - 1);
    if (hi > lo)
        os_unmap((void *)lo, hi - lo);
    stack_state.records_pages = (new_end - oscar_region.base) >> OSCAR_PAGE_SHIFT;
}

int stack_init(void) {
    size_t pages = (oscar_region.end - oscar_region.base) >> OSCAR_PAGE_SHIFT;
    int err;
    stack_state.records = os_alloc_meta(pages * sizeof(struct obj_record), &err);
    if (!stack_state.records)
        return err;
    stack_state.records_pages = pages;
    region_set_shrink_hook(records_shrink);
    return stack_store_init();
}

int stack_store_init(void) {
    if (stack_state.slots)
        return 0;
    stack_depth = (int)options_int(OPT_STACK_DEPTH);
    int err;
    size_t bytes = (size_t)options_int(OPT_STACK_STORE_MIB) << 20;
    /* Under a finite RLIMIT_AS, a thirty-second of Oscar's share (mem/region.h). */
    if (region_as_budget() != UINT64_MAX && bytes > region_as_budget() / 32)
        bytes = (size_t)(region_as_budget() / 32);
    uint64_t n = 1;
    while ((n << 1) * sizeof(struct stack_slot) <= bytes)
        n <<= 1;
    stack_state.slots = os_alloc_meta(n * sizeof(struct stack_slot), &err);
    if (!stack_state.slots)
        return err;
    stack_state.slot_mask = n - 1;
    stack_image_init();
    return 0;
}

void stack_image_init(void) {
    if (stack_state.lib_hi)
        return;
    find_own_image();
    /* The module table before any capture: with OSCAR_STACK_DEPTH=0 nothing else fills it,
     * and the SIGSEGV handler never does. */
    module_refresh(true);
}

bool stack_is_ours(uintptr_t pc) { return pc - stack_state.lib_lo < stack_state.lib_hi - stack_state.lib_lo; }

/* The top of the current thread's stack: where the frame chain must end. */
static uintptr_t thread_stack_top(void) {
    if (!stack_top)
        stack_top = os_gettid() == os_getpid() ? (uintptr_t)__libc_stack_end
                                               : (uintptr_t)pthread_self();
    return stack_top;
}

/* Up the stack from (pc, sp, fp), or (pc 0) from the caller of Oscar's entry point: the
 * frame-pointer chain through Oscar's own frames (built with frame pointers) to the first frame
 * of the program, then one .eh_frame step per frame (unwind.h), so code built without frame
 * pointers (libc, Debian's libraries, -O2 programs) is walked too. Oscar's frames are left out
 * (keep_ours: their return addresses come first, for a crash of Oscar's own). */
static int walk(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t *out, int max,
                bool may_refresh, bool keep_ours) {
    int n = 0;
    uintptr_t top = thread_stack_top();
    struct unwind_regs r = {pc, sp, fp, true};
    if (!pc) {
        bool found = false;
        while (fp >= sp && fp + 16 <= top && !(fp & 7)) {
            const uintptr_t *frame = (const uintptr_t *)fp;
            uintptr_t ret = frame[1], next = frame[0];
            if (ret < 4096)
                break;
            if (!stack_is_ours(ret)) {
                r = (struct unwind_regs){ret, fp + 16, next, false};
                found = true;
                break;
            }
            if (keep_ours && n < max)
                out[n++] = ret;
            if (next <= fp || next - fp > (8UL << 20))
                break;
            fp = next;
        }
        if (!found)
            return n;
    }
    /* Only read inside [sp, top): every byte there is mapped stack. A thread on another
     * stack (signal stack, coroutine) keeps just the first frame. */
    if (top - sp > (64UL << 20)) {
        /* On the alternate signal stack: walk it up to the signal frame, then go on from the
         * interrupted context on the thread's own stack. Any other stack (a coroutine's) keeps
         * just its first frame. Reports only (may_refresh false): a capture must not pay a
         * system call per malloc in a program that runs on stacks of its own. */
        stack_t ss;
        bool on_alt = !may_refresh && os_sigaltstack_get(&ss) == 0 && (ss.ss_flags & SS_ONSTACK);
        uintptr_t alt_lo = on_alt ? (uintptr_t)ss.ss_sp : 0, alt_hi = alt_lo + (on_alt ? ss.ss_size : 0);
        if (!on_alt || sp - alt_lo >= alt_hi - alt_lo) {
            if (!stack_is_ours(r.pc) && n < max)
                out[n++] = r.pc;
            return n;
        }
        n = unwind_walk(&r, sp, alt_hi, may_refresh, stack_state.lib_lo, stack_state.lib_hi, out, n, max);
        if (n == max || !r.exact || top - r.sp > (64UL << 20))
            return n; /* (exact: the walk stopped on a signal frame whose context is elsewhere) */
        sp = r.sp;
    }
    return unwind_walk(&r, sp, top, may_refresh, stack_state.lib_lo, stack_state.lib_hi, out, n, max);
}

int stack_walk(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t *out, int max) {
    return walk(pc, fp, sp, out, max, false, false);
}

int stack_walk_with_ours(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t *out, int max) {
    if (max < 1)
        return 0;
    out[0] = pc;
    /* (A fault in a function that had not set its frame up yet misses its caller, nothing
     * worse.) */
    return 1 + walk(0, fp, sp, out + 1, max - 1, false, true);
}

static uint64_t hash_frames(const uintptr_t *pc, int n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= pc[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h | 1; /* never 0 (empty) */
}

static uint32_t store(const uintptr_t *pc, int n) {
    uint64_t h = hash_frames(pc, n);
    for (uint64_t i = 0; i < PROBES; i++) {
        uint64_t idx = (h + i) & stack_state.slot_mask;
        struct stack_slot *s = &stack_state.slots[idx];
        uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);
        if (cur == 0) {
            if (atomic_compare_exchange_strong(&s->hash, &cur, h)) {
                for (int k = 0; k < n; k++)
                    s->pc[k] = pc[k];
                atomic_store_explicit(&s->frames, (uint32_t)n, memory_order_release);
                stats_add(STAT_STACKS_STORED, 1);
                return (uint32_t)idx + 1;
            }
        }
        if (cur != h)
            continue;
        uint32_t m;
        while ((m = atomic_load_explicit(&s->frames, memory_order_acquire)) == 0)
            __builtin_ia32_pause(); /* another thread is writing the same stack */
        if ((int)m != n)
            continue;
        int k = 0;
        while (k < n && s->pc[k] == pc[k])
            k++;
        if (k == n)
            return (uint32_t)idx + 1;
    }
    stats_add(STAT_STACKS_DROPPED, 1);
    return 0;
}

static uint32_t capture(void) {
    uintptr_t pc[STACK_MAX_FRAMES];
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    int n = walk(0, fp, fp, pc, stack_depth, true, false);
    return n ? store(pc, n) : 0;
}

bool stack_has_records(void) { return stack_state.records != NULL; }

struct obj_record *stack_record(uintptr_t page) {
    return &stack_state.records[region_page_index(page)];
}

void stack_record_alloc(struct obj_record *r) {
    atomic_store_explicit(&r->alloc_stack, capture(), memory_order_relaxed);
    atomic_store_explicit(&r->alloc_tid, stack_thread_id(), memory_order_relaxed);
    atomic_store_explicit(&r->free_stack, 0, memory_order_relaxed);
}

void stack_record_free(struct obj_record *r) {
    atomic_store_explicit(&r->free_stack, capture(), memory_order_relaxed);
    atomic_store_explicit(&r->free_tid, stack_thread_id(), memory_order_relaxed);
}

void stack_note_alloc(uintptr_t page) { stack_record_alloc(stack_record(page)); }
void stack_note_free(uintptr_t page) { stack_record_free(stack_record(page)); }

int stack_frames(uint32_t id, uintptr_t *out) {
    if (!id || id - 1 > stack_state.slot_mask)
        return 0;
    struct stack_slot *s = &stack_state.slots[id - 1];
    int n = (int)atomic_load_explicit(&s->frames, memory_order_acquire);
    for (int k = 0; k < n; k++)
        out[k] = s->pc[k];
    return n;
}
