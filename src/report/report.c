/* report: see report.h. */
#include "report/report.h"
#include "base/messages.h"
#include "base/fmt.h"
#include "base/options.h"
#include "os/os.h"
#include "report/stack.h"
#include "report/symbolize.h"

#include <signal.h>
#include <stdlib.h>

/* The reports' calls up into the heap layer, each set once at init by the layer that knows
 * (heap/ and modes/ register them before the first report can run); read by the reports,
 * lock-free. Per thread: in_handler, below, TLS. */
static struct {
    struct object_info (*describe_hook)(uintptr_t addr);  /* which object holds an address */
    uintptr_t (*view_origin_hook)(uintptr_t addr);        /* a view's arena page */
    struct obj_record *(*record_hook)(uintptr_t start);   /* an object's recorded stacks */
} report_state;

void report_set_record_hook(struct obj_record *(*record)(uintptr_t)) { report_state.record_hook = record; }

report_describe_fn report_set_describe_hook(report_describe_fn describe) {
    report_describe_fn old = report_state.describe_hook;
    report_state.describe_hook = describe;
    return old;
}
void report_set_view_origin_hook(uintptr_t (*origin)(uintptr_t)) { report_state.view_origin_hook = origin; }

struct object_info report_describe(uintptr_t addr) {
    if (report_state.describe_hook)
        return report_state.describe_hook(addr);
    return (struct object_info){.state = OBJ_NOT_OURS, .start = addr};
}

/* Where reports go: stderr, or OSCAR_REPORT_FILE (so a server that closed stderr still
 * leaves evidence). */
static int report_fd(void) {
    const char *path = options_string(OPT_REPORT_FILE);
    if (!path)
        return 2;
    char name[1024];
    int fd;
    fmt_path_with_pid(path, name, sizeof name);
    return os_open_append(name, &fd) == 0 ? fd : 2;
}

/* Set while report_fault runs (in the SIGSEGV handler): the module table is then not
 * refreshed (that takes the loader's lock, which the faulting thread may hold). */
static __thread bool in_handler __attribute__((tls_model("initial-exec")));

/* The frames, numbered from 0 (symbolize.h: an inlined function is a line of its own).
 * exact0: pc[0] is the faulting instruction, not a return address. */
static void print_frames_at(struct fmt *f, int fd, const uintptr_t *pc, int n, bool exact0) {
    for (int i = 0, line = 0; i < n; i++)
        line += symbolize_frame(f, fd, pc[i], exact0 && i == 0, line, !in_handler);
}

static void print_frames(struct fmt *f, int fd, const uintptr_t *pc, int n) {
    print_frames_at(f, fd, pc, n, false);
}

static void print_stored(struct fmt *f, int fd, const char *what, uint32_t tid, uint32_t id) {
    fmt_str(f, what);
    fmt_str(f, " by thread ");
    fmt_u64(f, tid);
    fmt_str(f, " here:\n");
    uintptr_t pc[STACK_MAX_FRAMES];
    int n = stack_frames(id, pc);
    if (n)
        print_frames(f, fd, pc, n);
    else
        fmt_str(f, "    (stack not recorded: the stack store is full; raise OSCAR_STACK_STORE_MIB)\n");
}

/* The second line for an address whose chunk was reclaimed (reclaim.h). */
#define RECLAIMED_WHY                                                                      \
    "every object around the address was freed long ago; oscar has since reclaimed their " \
    "records, so the object's size and stacks are unknown\n"

/* The free and allocation stacks of a heap object, as AddressSanitizer prints them. */
static void print_history(struct fmt *f, int fd, const struct object_info *o) {
    struct obj_record *r = report_state.record_hook ? report_state.record_hook(o->start) : NULL;
    if (!r && !stack_has_records()) { /* (protect mode: the strict region's table is absent) */
        fmt_str(f, "(protect mode keeps allocation and free stacks only for sampled objects: "
                    "OSCAR_SAMPLE_RATE)\n");
        return;
    }
    if (!stack_depth) {
        fmt_str(f, "(allocation and free stacks are off: OSCAR_STACK_DEPTH=0)\n");
        return;
    }
    enum page_kind k = entry_kind(o->entry);
    if (!r && (k == PK_PACKED || k == PK_PACKED_FREED || k == PK_PACKED_GUARDED)) {
        fmt_str(f, "(no stacks for objects that share a shadow page: OSCAR_MODE=fast, or past the "
                    "mapping-limit warning)\n");
        return;
    }
    if (!r)
        r = stack_record(o->start & ~(OSCAR_PAGE - 1));
    if (o->state != OBJ_LIVE)
        print_stored(f, fd, "freed", atomic_load(&r->free_tid), atomic_load(&r->free_stack));
    print_stored(f, fd, o->state == OBJ_LIVE ? "allocated" : "previously allocated",
                 atomic_load(&r->alloc_tid), atomic_load(&r->alloc_stack));
}

/* The stack of the bad call itself (free, realloc...), from here up. */
static void print_current(struct fmt *f, int fd, const char *what) {
    fmt_str(f, what);
    fmt_str(f, " by thread ");
    fmt_u64(f, stack_thread_id());
    fmt_str(f, " here:\n");
    uintptr_t pc[STACK_MAX_FRAMES], fp = (uintptr_t)__builtin_frame_address(0);
    print_frames(f, fd, pc, stack_walk(0, fp, fp, pc, STACK_MAX_FRAMES));
}

static const char *const caller_name[] = {"free", "realloc", "malloc_usable_size"};

/* "0xADDR is located N bytes inside of M-byte region [0xS,0xE)" (AddressSanitizer's words). */
/* "0xADDR is located N bytes WHERE M-byte region [0xS,0xE)" then end (AddressSanitizer's
 * words): where is "inside of", "to the left of" or "to the right of". */
static void locate(struct fmt *f, uintptr_t addr, const struct object_info *o, uint64_t n,
                   const char *where, const char *end) {
    fmt_hex(f, addr);
    fmt_str(f, " is located ");
    fmt_u64(f, n);
    fmt_str(f, " bytes ");
    fmt_str(f, where);
    fmt_char(f, ' ');
    fmt_u64(f, o->size);
    fmt_str(f, "-byte region [");
    fmt_hex(f, o->start);
    fmt_char(f, ',');
    fmt_hex(f, o->start + o->size);
    fmt_str(f, end);
}

static void describe_location(struct fmt *f, uintptr_t addr, const struct object_info *o) {
    locate(f, addr, o, addr - o->start, "inside of", ")\n");
}

void report_bad_pointer(uintptr_t addr, struct object_info o, enum report_caller who) {
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    int fd = report_fd();
    bool at_start = o.start == addr;
    enum page_kind api_kind = o.state == OBJ_LIVE || o.state == OBJ_FREED ? entry_kind(o.entry)
                                                                          : PK_NONE;
    if (api_kind == PK_ARENA || api_kind == PK_VIEW) {
        msg_start(&f, api_kind == PK_VIEW ? MSG_FREE_VIEW : MSG_FREE_ARENA);
        fmt_hex(&f, addr);
        fmt_str(&f, api_kind == PK_VIEW ? " (a custom-allocator view: revoke it with "
                                          "oscar_view_revoke)"
                                        : " (custom-allocator arena memory: give it back "
                                          "with oscar_arena_free)");
        fmt_char(&f, '\n');
        describe_location(&f, addr, &o);
        fmt_str(&f, "the bad pointer was passed to ");
        fmt_str(&f, caller_name[who]);
        fmt_str(&f, "()\n");
        print_current(&f, fd, "bad free");
        print_history(&f, fd, &o);
        fmt_flush(&f, fd);
        abort();
    }
    switch (o.state) {
    case OBJ_FREED:
    case OBJ_DEFERRED:
        if (at_start) {
            msg_start(&f, MSG_DOUBLE_FREE);
            fmt_hex(&f, addr);
        } else {
            msg_start(&f, MSG_FREE_INTERIOR);
            fmt_hex(&f, addr);
            fmt_str(&f, " (interior pointer)");
        }
        break;
    case OBJ_LIVE:
        msg_start(&f, MSG_FREE_INTERIOR);
        fmt_hex(&f, addr);
        fmt_str(&f, " (interior pointer)");
        break;
    case OBJ_NEVER:
        msg_start(&f, MSG_FREE_NEVER_ALLOCATED);
        fmt_hex(&f, addr);
        fmt_str(&f, " (never allocated)");
        break;
    case OBJ_POISON:
        msg_start(&f, MSG_FREE_POISON);
        fmt_hex(&f, addr);
        fmt_str(&f, " (pointer read from a freed object)");
        break;
    case OBJ_RECLAIMED:
        msg_start(&f, MSG_DOUBLE_FREE);
        fmt_hex(&f, addr);
        break;
    case OBJ_NOT_OURS:
        msg_start(&f, MSG_FREE_NOT_OURS);
        fmt_hex(&f, addr);
        fmt_str(&f, " (not allocated by oscar)");
        break;
    }
    fmt_char(&f, '\n');
    if (o.state == OBJ_FREED || o.state == OBJ_DEFERRED || o.state == OBJ_LIVE) {
        describe_location(&f, addr, &o);
        fmt_str(&f, o.state == OBJ_LIVE ? "the region is allocated" : "the region was freed");
        fmt_str(&f, "; the bad pointer was passed to ");
    } else if (o.state == OBJ_RECLAIMED) {
        fmt_str(&f, RECLAIMED_WHY);
        fmt_str(&f, "the bad pointer was passed to ");
    } else {
        fmt_str(&f, "the bad pointer was passed to ");
    }
    fmt_str(&f, caller_name[who]);
    fmt_str(&f, "()\n");
    print_current(&f, fd, (o.state == OBJ_FREED && at_start) || o.state == OBJ_RECLAIMED
                              ? "double free"
                              : "bad free");
    if (o.state == OBJ_FREED || o.state == OBJ_DEFERRED || o.state == OBJ_LIVE)
        print_history(&f, fd, &o);
    fmt_flush(&f, fd);
    abort();
}

static const char *const alloc_name[] = {"malloc", "operator new", "operator new []"};
static const char *const dealloc_name[] = {"free", "operator delete", "operator delete []"};

/* The end of a mismatch report: where, both stacks, how to turn the check off. */
static __attribute__((noreturn)) void mismatch_end(struct fmt *f, int fd, uintptr_t addr,
                                                   const struct object_info *o,
                                                   const char *freed_by, const char *setting) {
    describe_location(f, addr, o);
    fmt_str(f, "the region is allocated; it was passed to ");
    fmt_str(f, freed_by);
    fmt_char(f, '\n');
    print_current(f, fd, "deallocated");
    print_history(f, fd, o);
    fmt_str(f, "(");
    fmt_str(f, setting);
    fmt_str(f, "=0 turns this check off)\n");
    fmt_flush(f, fd);
    abort();
}

void report_kind_mismatch(uintptr_t addr, struct object_info o, enum alloc_kind allocated,
                          enum alloc_kind freed_as, enum report_caller who) {
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    int fd = report_fd();
    msg_start(&f, MSG_ALLOC_DEALLOC_MISMATCH);
    fmt_str(&f, alloc_name[allocated]);
    fmt_str(&f, " vs ");
    fmt_str(&f, dealloc_name[freed_as]);
    fmt_str(&f, ") on ");
    fmt_hex(&f, addr);
    fmt_char(&f, '\n');
    mismatch_end(&f, fd, addr, &o, who == CALL_REALLOC ? "realloc" : dealloc_name[freed_as],
                 "OSCAR_ALLOC_DEALLOC_MISMATCH");
}

void report_size_mismatch(uintptr_t addr, struct object_info o, size_t allocated, size_t size,
                          bool exact) {
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    int fd = report_fd();
    msg_start(&f, MSG_NEW_DELETE_TYPE_MISMATCH);
    fmt_hex(&f, addr);
    fmt_str(&f, "\nobject passed to delete has wrong type:\n  size of the allocated type:   ");
    if (!exact)
        fmt_str(&f, "at most ");
    fmt_u64(&f, allocated);
    fmt_str(&f, " bytes;\n  size of the deallocated type: ");
    fmt_u64(&f, size);
    fmt_str(&f, " bytes.\n");
    mismatch_end(&f, fd, addr, &o, "a sized operator delete", "OSCAR_NEW_DELETE_TYPE_MISMATCH");
}

/* An address where nothing was allocated, within a page below the start (left) or above the
 * end (right) of an object: *near is that object. */
static bool beside_object(uintptr_t addr, struct object_info *near, bool *left) {
    uintptr_t above = (addr | (OSCAR_PAGE - 1)) + 1, below = (addr & ~(OSCAR_PAGE - 1)) - 1;
    struct object_info o = report_describe(above);
    if ((o.state == OBJ_LIVE || o.state == OBJ_FREED) && o.start > addr &&
        o.start - addr <= OSCAR_PAGE) {
        *near = o;
        *left = true;
        return true;
    }
    o = report_describe(below);
    if ((o.state == OBJ_LIVE || o.state == OBJ_FREED) && o.start + o.size <= addr &&
        addr - (o.start + o.size) < OSCAR_PAGE) {
        *near = o;
        *left = false;
        return true;
    }
    return false;
}

bool report_fault(uintptr_t addr, bool write, uintptr_t pc, uintptr_t fp, uintptr_t sp) {
    struct object_info o = report_describe(addr);
    if (o.state != OBJ_FREED && o.state != OBJ_NEVER && o.state != OBJ_POISON &&
        o.state != OBJ_RECLAIMED)
        return false;
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    int fd = report_fd();
    struct object_info near;
    bool left = false, beside = o.state == OBJ_NEVER && beside_object(addr, &near, &left);
    msg_start(&f, beside                 ? MSG_HEAP_BUFFER_OVERFLOW
                  : o.state != OBJ_NEVER ? MSG_USE_AFTER_FREE
                                         : MSG_WILD_ACCESS);
    fmt_hex(&f, addr);
    fmt_str(&f, write ? " (WRITE)\n" : " (READ)\n");
    if (beside) {
        locate(&f, addr, &near, left ? near.start - addr : addr - (near.start + near.size),
               left ? "to the left of" : "to the right of",
               near.state == OBJ_LIVE ? ")\n" : "), which was freed\n");
    } else if (o.state == OBJ_FREED && entry_kind(o.entry) == PK_VIEW) {
        describe_location(&f, addr, &o);
        fmt_str(&f, "the region is a custom-allocator view of ");
        fmt_hex(&f, report_state.view_origin_hook ? report_state.view_origin_hook(o.start) : 0);
        fmt_str(&f, " (oscar_view_create); it was revoked (oscar_view_revoke)\n");
    } else if (o.state == OBJ_FREED && entry_kind(o.entry) == PK_ARENA) {
        describe_location(&f, addr, &o);
        fmt_str(&f, "the region is a custom-allocator arena; it was freed (oscar_arena_free)\n");
    } else if (o.state == OBJ_FREED && report_state.record_hook && report_state.record_hook(o.start)) {
        describe_location(&f, addr, &o);
        fmt_str(&f, "the region was freed; its page is revoked (a sampled object: "
                    "OSCAR_SAMPLE_RATE, OSCAR_SAMPLE_FIRST)\n");
    } else if (o.state == OBJ_FREED) {
        describe_location(&f, addr, &o);
        fmt_str(&f, "the region was freed; its shadow page is revoked\n");
    } else if (o.state == OBJ_RECLAIMED) {
        fmt_str(&f, RECLAIMED_WHY);
    } else if (o.state == OBJ_POISON) {
        fmt_str(&f, "the address is oscar's poison: a pointer read from a freed object was "
                    "followed (freed objects sharing a shadow page are filled with it)\n");
    } else {
        fmt_str(&f, "the address is inside oscar's heap but no object was ever allocated "
                    "there (wild or overflowed pointer)\n");
    }
    fmt_str(&f, write ? "WRITE" : "READ");
    fmt_str(&f, " by thread ");
    fmt_i64(&f, os_gettid());
    fmt_str(&f, " here:\n");
    uintptr_t pcs[STACK_MAX_FRAMES];
    in_handler = true;
    print_frames_at(&f, fd, pcs, stack_walk(pc, fp, sp, pcs, STACK_MAX_FRAMES), pc != 0);
    if (o.state == OBJ_FREED)
        print_history(&f, fd, &o);
    else if (beside)
        print_history(&f, fd, &near);
    in_handler = false;
    fmt_flush(&f, fd);
    return true;
}

void report_crash(int sig, uintptr_t addr, uintptr_t pc, uintptr_t fp, uintptr_t sp) {
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    int fd = report_fd();
    msg_start(&f, MSG_CRASH);
    fmt_str(&f, sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
    fmt_str(&f, " on address ");
    fmt_hex(&f, addr);
    fmt_str(&f, " in oscar's own code, thread ");
    fmt_i64(&f, os_gettid());
    fmt_str(&f, "\nunless the program passed oscar that address (a bad pointer given to a "
                "function oscar wraps), this is a bug of oscar's: please report it with "
                "these frames:\n");
    uintptr_t pcs[STACK_MAX_FRAMES];
    in_handler = true;
    print_frames_at(&f, fd, pcs, stack_walk_with_ours(pc, fp, sp, pcs, STACK_MAX_FRAMES), true);
    in_handler = false;
    fmt_flush(&f, fd);
    if (fd != 2)
        os_close(fd);
}

void report_api_error(const char *fn, uintptr_t addr, const char *code, const char *why) {
    char buf[1024];
    struct fmt f = FMT_INIT(buf);
    int fd = report_fd();
    msg_start(&f, MSG_API_ERROR);
    fmt_str(&f, fn);
    fmt_char(&f, '(');
    fmt_hex(&f, addr);
    fmt_str(&f, "): ");
    fmt_str(&f, code);
    fmt_str(&f, ": ");
    fmt_str(&f, why);
    fmt_char(&f, '\n');
    print_current(&f, fd, "called");
    struct object_info o = report_describe(addr);
    enum page_kind k = entry_kind(o.entry);
    if ((o.state == OBJ_LIVE || o.state == OBJ_FREED) && (k == PK_ARENA || k == PK_VIEW)) {
        describe_location(&f, addr, &o);
        print_history(&f, fd, &o);
    }
    fmt_flush(&f, fd);
    if (fd != 2)
        os_close(fd);
}

void report_fatal(const char *what, int err) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_FATAL);
    fmt_str(&f, what);
    fmt_str(&f, " (errno ");
    fmt_i64(&f, err);
    fmt_str(&f, ")\n");
    fmt_flush(&f, 2);
    abort();
}
