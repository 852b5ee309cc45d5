/* liboscar_pss.so: the runtime of parallel shadow stacks (docs/shadow-stacks.md).
 * Code built with `oscar cc` copies each return address to its slot + OSCAR_PSS_OFFSET at entry
 * and compares (check mode) or restores it (overwrite mode) before each return. This library maps
 * that shadow region for every stack the program runs on:
 *   - the main thread's stack (sized to RLIMIT_STACK), from a constructor that runs before any
 *     instrumented one (this library is a dependency of every instrumented object);
 *   - every thread (pthread_create is intercepted: the start routine is wrapped and maps the
 *     shadow of the new thread's stack, glibc's or the user's, before calling the program's);
 *   - alternate signal stacks (sigaltstack) and makecontext stacks (both intercepted), and any
 *     other stack through oscar_pss_register_stack().
 * Each shadow is MAP_NORESERVE (pages cost memory only once written) with a guard page at each
 * end where the neighbourhood is free. The check's failure path, __oscar_pss_fail, prints the
 * report with write(2) only and dies with SIGABRT. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <setjmp.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include "oscar_pss.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define PSS_FIXED_OFFSET (-0x21f3b5c7080L) /* about -2.12 TiB: the rewriter's DEFAULT_OFFSET */
/* Offsets are a whole number of pages minus PSS_SKEW, and code built with the GS base (a page
 * multiple: the offset + PSS_SKEW) addresses the copy as %gs:-0x80(%rsp). With %gs:(%rsp), the
 * entry's store to the copy and the return's load of the return address, (%rsp), looked like the
 * same stack slot to this machine's CPU (AMD Zen; its stack-slot tracking apparently goes by
 * base register and displacement, not by segment): check mode's `cmp` stalled (Lua's
 * strings.lua +72%; +75% still with a skewed base and displacement 0; +8% with -0x80). The
 * skew also keeps bits 0-11 of the copy's address apart from the return address's (Intel's
 * "4K aliasing"). The shadow of [lo, hi) is mapped at [lo, hi) + the offset rounded up to a
 * page: the copies of the lowest PSS_SKEW bytes of a stack fall into the guard page below (a
 * frame that low is about to overflow its stack anyway). */
#define PSS_SKEW 0x80L
#define PAGE 4096UL
#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif
#define MAX_SHADOWS 1024
#define MAIN_STACK_CAP (4UL << 30)

/* The offset code built with --offset=random reads (one page, read-only once chosen). Such code
 * also defines __oscar_pss_uses_random (pss_rewrite.py): only then is an offset drawn, and the
 * shadows are mapped at both offsets (objects built with the fixed one may be linked in too). */
__attribute__((aligned(4096), visibility("default"))) long __oscar_pss_offset[PAGE / sizeof(long)] = {
    PSS_FIXED_OFFSET};
/* The same, for the runtime's own code (no interposition, no GOT). */
extern __typeof(__oscar_pss_offset) pss_gs_offset
    __attribute__((alias("__oscar_pss_offset"), visibility("hidden")));
extern char __oscar_pss_uses_random __attribute__((weak));
/* Defined (weak) by code that addresses the copy as %gs:(%rsp) (the default, pss_rewrite.py's
 * "gs"): the GS base holds the offset (set with WRGSBASE below; threads and fork children
 * inherit it). Without FSGSBASE (a CPU or kernel older than Linux 5.9) such code cannot run. */
extern char __oscar_pss_uses_gs __attribute__((weak));
__attribute__((visibility("default"))) const char __oscar_pss_abi_gs = 1;
/* Every instrumented object refers to this symbol (pss_rewrite.py's ABI_SYMBOL): code built for
 * another fixed offset fails to link or load instead of faulting. */
__attribute__((visibility("default"))) const char __oscar_pss_abi_21f3b5c7000 = 1;
static long offsets[2] = {PSS_FIXED_OFFSET, 0};

/* Where the shadow of a stack is mapped for code offset OFF (a page boundary). */
static long map_offset(long off) { return off + PSS_SKEW; }
static int noffsets = 1;

struct shadow {
    uintptr_t lo, hi; /* the stack range covered (shadow = range + offset) */
};
static struct shadow shadows[MAX_SHADOWS];
static int nshadows;
static pthread_mutex_t shadows_lock = PTHREAD_MUTEX_INITIALIZER;


/* ---- signal-safe output ---- */

static void out(const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(2, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void out_hex(uintptr_t v) {
    char buf[19], *p = buf + sizeof buf;
    *--p = 0;
    do {
        *--p = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    *--p = 'x';
    *--p = '0';
    out(p);
}

__attribute__((noreturn)) static void die(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGABRT, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGABRT);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGABRT);
    _exit(134);
}

__attribute__((noreturn)) static void fatal_map(uintptr_t lo, uintptr_t hi, long off, int err) {
    out("oscar: cannot map the shadow stack of ");
    out_hex(lo);
    out("-");
    out_hex(hi);
    out(" at ");
    out_hex(lo + (uintptr_t)map_offset(off));
    out(err == EEXIST ? " (address in use)\n" : " (mmap failed)\n");
    die();
}

/* ---- shadow regions ---- */

static int covered(uintptr_t lo, uintptr_t hi) {
    for (int i = 0; i < nshadows; i++)
        if (shadows[i].lo <= lo && hi <= shadows[i].hi)
            return 1;
    return 0;
}

/* A stack that overlaps a registered one without lying inside it replaces it: that memory is
 * no stack any more (stacks of live threads never overlap). */
static void drop_overlapping(uintptr_t lo, uintptr_t hi) {
    for (int i = 0; i < nshadows;) {
        if (shadows[i].lo < hi && lo < shadows[i].hi) {
            for (int k = 0; k < noffsets; k++)
                munmap((void *)(shadows[i].lo + map_offset(offsets[k])),
                       shadows[i].hi - shadows[i].lo);
            shadows[i] = shadows[--nshadows];
        } else {
            i++;
        }
    }
}

static void map_at(uintptr_t lo, uintptr_t hi, long off);

static void map_shadow_locked(uintptr_t lo, uintptr_t hi) {
    lo &= ~(PAGE - 1);
    hi = (hi + PAGE - 1) & ~(PAGE - 1);
    if (hi <= lo || covered(lo, hi))
        return;
    drop_overlapping(lo, hi);
    for (int k = 0; k < noffsets; k++)
        map_at(lo, hi, offsets[k]);
    if (nshadows < MAX_SHADOWS)
        shadows[nshadows++] = (struct shadow){lo, hi};
}

static void map_at(uintptr_t lo, uintptr_t hi, long off) {
    uintptr_t slo = lo + (uintptr_t)map_offset(off);
    void *p = mmap((void *)slo, hi - lo, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || (uintptr_t)p != slo) {
        int err = p == MAP_FAILED ? errno : EEXIST;
        if (p != MAP_FAILED)
            munmap(p, hi - lo);
        fatal_map(lo, hi, off, err);
    }
    /* Guard pages where nothing else is: a contiguous overflow of the shadow faults. */
    mmap((void *)(slo - PAGE), PAGE, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    mmap((void *)(slo + (hi - lo)), PAGE, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
}

void oscar_pss_register_stack(void *base, size_t size) {
    pthread_mutex_lock(&shadows_lock);
    map_shadow_locked((uintptr_t)base, (uintptr_t)base + size);
    pthread_mutex_unlock(&shadows_lock);
}

/* The [stack] line of /proc/self/maps, read without stdio. */
static int main_stack_top(uintptr_t *top) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    static char buf[8192];
    size_t have = 0;
    int found = -1;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = 0;
            if (strstr(line, "[stack]")) {
                char *dash = strchr(line, '-');
                uintptr_t v = 0;
                for (char *c = dash + 1; *c && *c != ' '; c++)
                    v = v * 16 + (uintptr_t)(*c <= '9' ? *c - '0' : *c - 'a' + 10);
                *top = v;
                found = 0;
            }
            line = nl + 1;
        }
        have = strlen(line);
        memmove(buf, line, have);
    }
    close(fd);
    return found;
}

/* ---- the GS base ---- */

/* How code built with GS addressing finds its copies: GS_HARDWARE, the GS base holds the offset
 * (+ PSS_SKEW), set with WRGSBASE; GS_PATCHED, the CPU or kernel lacks FSGSBASE (or
 * OSCAR_PSS_GS=patch asks for this path): arch_prctl(ARCH_SET_GS) cannot set the base, because
 * the kernel refuses any base outside the user half (EPERM) and the offset is negative, so each
 * module's GS instructions are rewritten at load time into calls of its thunks
 * (__oscar_pss_gs_patch, called by the module's first constructor: pss_rewrite.py). The GS base
 * is then set (arch_prctl, which takes a user-half base) to GS_POISON, where every address
 * %gs:-0x80(%rsp) is non-canonical: code that still uses the GS base faults at once instead of
 * keeping its copy in its own red zone. */
enum { GS_UNSET, GS_HARDWARE, GS_PATCHED };
static int gs_state;
#define GS_POISON 0x7fff00000000L
#ifndef ARCH_SET_GS
#define ARCH_SET_GS 0x1001
#endif

/* The environment as the executable's .preinit_array entry sees it (start.c): glibc sets
 * `environ` only in libc's own initialization, which comes later. */
static char **preinit_envp;

static int gs_forced_patch(void) {
    char **env = environ ? environ : preinit_envp;
    for (; env && *env; env++)
        if (strcmp(*env, "OSCAR_PSS_GS=patch") == 0)
            return 1;
    return 0;
}

static void gs_setup(long base) {
    if (gs_state != GS_UNSET)
        return;
    if ((getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE) && !gs_forced_patch()) {
        __asm__ volatile("wrgsbase %0" ::"r"(base) : "memory");
        gs_state = GS_HARDWARE;
        return;
    }
    gs_state = GS_PATCHED;
    syscall(SYS_arch_prctl, ARCH_SET_GS, GS_POISON); /* best effort: a guard, not a need */
}

static int initialized;

static void pss_init(void) {
    if (initialized)
        return;
    initialized = 1;
    if (&__oscar_pss_uses_random) {
        /* A page-aligned offset in [-40 TiB, -3 TiB): the shadows land between the executable
         * and its heap (~85 TiB) and the stacks and libraries (~127 TiB); 33 random bits. */
        uint64_t r = 0;
        if (syscall(SYS_getrandom, &r, sizeof r, 0) != (long)sizeof r)
            r = (uint64_t)syscall(SYS_gettid) * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)&r;
        long span = (37L << 40) / (long)PAGE;
        offsets[1] = -(3L << 40) - (long)(r % (uint64_t)span) * (long)PAGE - PSS_SKEW;
        noffsets = 2;
        __oscar_pss_offset[0] = offsets[1];
        mprotect(__oscar_pss_offset, PAGE, PROT_READ);
    }
    /* The GS base is the offset of the code built with "gs" addressing (+ PSS_SKEW, which the
     * code's displacement takes off again): the random one when some code asked for it, the
     * fixed one otherwise (both are mapped below). */
    long base = (noffsets == 2 ? offsets[1] : PSS_FIXED_OFFSET) + PSS_SKEW;
    gs_setup(base);
    uintptr_t top;
    if (main_stack_top(&top) != 0) {
        /* No [stack] line: use the current frame's page and the limit below it. */
        top = ((uintptr_t)__builtin_frame_address(0) + (1UL << 20)) & ~(PAGE - 1);
    }
    struct rlimit rl;
    size_t size = 8UL << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0)
        size = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > MAIN_STACK_CAP ? MAIN_STACK_CAP
                                                                           : rl.rlim_cur;
    if (size < (1UL << 20))
        size = 1UL << 20;
    oscar_pss_register_stack((void *)(top - size - PAGE), size + PAGE);
}

__attribute__((constructor(101))) static void pss_constructor(void) {
    pss_init();
    /* Resolve the unwinder now, so the report needs no lazy binding later. Not in pss_init:
     * from the executable's .preinit_array, backtrace's dlopen would run libc's own
     * initialization early, while `environ` is still NULL, and the program would start without
     * an environment. */
    void *frames[2];
    backtrace(frames, 2);
}

/* From the executable's .preinit_array entry (start.c), before every library's constructor. */
__attribute__((visibility("default"))) void __oscar_pss_preinit(char **envp) {
    preinit_envp = envp;
    pss_init();
}

/* The encodings pss_rewrite.py's GS sites assemble to (movq %r11, %gs:-0x80(%rsp) and
 * movq %gs:-0x80(%rsp), %r11), and what they become: call rel32 to the thunk, then a nop. */
static const unsigned char GS_STORE[6] = {0x65, 0x4c, 0x89, 0x5c, 0x24, 0x80};
static const unsigned char GS_LOAD[6] = {0x65, 0x4c, 0x8b, 0x5c, 0x24, 0x80};

__attribute__((noreturn)) static void fatal_patch(uintptr_t at, const char *why) {
    out("oscar: cannot set the shadow stack's offset in the GS base (no FSGSBASE) nor patch the "
        "code at ");
    out_hex(at);
    out(" (");
    out(why);
    out("); build with oscar cc --offset=immediate\n");
    die();
}

/* Called by each module's highest-priority constructor (pss_rewrite.py's
 * __oscar_pss_gs_register) with its table of sites and its two thunks. With the GS base set by
 * WRGSBASE there is nothing to do; otherwise every site is rewritten, the module's code pages
 * made writable for the time of it (they become private copies: the cost of this path, with a
 * call and a return more at each entry and return). */
__attribute__((visibility("default"))) void __oscar_pss_gs_patch(const int32_t *start,
                                                                 const int32_t *stop,
                                                                 void *store, void *load) {
    pss_init();
    if (gs_state != GS_PATCHED || start >= stop)
        return;
    pthread_mutex_lock(&shadows_lock);
    /* Only the sites still to patch: the executable's are patched by its preinit entry
     * already when its own first constructor registers them again, and its code must not
     * lose PROT_EXEC then (a thread a library's constructor started may be running it). */
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (const int32_t *e = start; e < stop; e++) {
        uintptr_t at = (uintptr_t)e + (uintptr_t)(intptr_t)*e;
        if (((const unsigned char *)at)[0] == 0xe8)
            continue;
        lo = at < lo ? at : lo;
        hi = at + 6 > hi ? at + 6 : hi;
    }
    if (hi == 0) {
        pthread_mutex_unlock(&shadows_lock);
        return;
    }
    lo &= ~(PAGE - 1);
    hi = (hi + PAGE - 1) & ~(PAGE - 1);
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
        fatal_patch(lo, errno == EACCES ? "mprotect: permission denied" : "mprotect failed");
    for (const int32_t *e = start; e < stop; e++) {
        unsigned char *at = (unsigned char *)e + *e;
        const unsigned char *thunk;
        if (memcmp(at, GS_STORE, 6) == 0)
            thunk = store;
        else if (memcmp(at, GS_LOAD, 6) == 0)
            thunk = load;
        else if (at[0] == 0xe8 && at[5] == 0x90)
            continue; /* patched already */
        else
            fatal_patch((uintptr_t)at, "unexpected instruction");
        int32_t rel = (int32_t)((intptr_t)thunk - (intptr_t)(at + 5));
        at[0] = 0xe8;
        memcpy(at + 1, &rel, 4);
        at[5] = 0x90;
    }
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC) != 0)
        fatal_patch(lo, "mprotect failed");
    pthread_mutex_unlock(&shadows_lock);
}

/* ---- threads ---- */

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void map_current_thread_stack(void) {
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0)
        oscar_pss_register_stack(addr, size);
    pthread_attr_destroy(&attr);
}

static void *pss_thread_start(void *p) {
    struct start s = *(struct start *)p;
    munmap(p, PAGE);
    map_current_thread_stack();
    return s.fn(s.arg);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
            RTLD_NEXT, "pthread_create");
    pss_init();
    /* The start record is handed over in a page of its own (no malloc: this library must not
     * depend on the allocator the program runs with). */
    struct start *s = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    int rc = real(thread, attr, pss_thread_start, s);
    if (rc != 0)
        munmap(s, PAGE);
    return rc;
}

/* ---- alternate signal stacks and makecontext ---- */

int sigaltstack(const stack_t *ss, stack_t *old) {
    if (ss && !(ss->ss_flags & SS_DISABLE) && ss->ss_sp && ss->ss_size)
        oscar_pss_register_stack(ss->ss_sp, ss->ss_size);
    return (int)syscall(SYS_sigaltstack, ss, old);
}

void makecontext(ucontext_t *ucp, void (*fn)(void), int argc, ...) {
    static void (*real)(ucontext_t *, void (*)(void), int, ...);
    if (!real)
        real = (void (*)(ucontext_t *, void (*)(void), int, ...))dlsym(RTLD_NEXT, "makecontext");
    if (ucp->uc_stack.ss_sp && ucp->uc_stack.ss_size)
        oscar_pss_register_stack(ucp->uc_stack.ss_sp, ucp->uc_stack.ss_size);
    /* glibc's x86-64 makecontext reads its arguments as 64-bit words; up to 10 are passed on. */
    uint64_t a[10] = {0};
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc && i < 10; i++)
        a[i] = va_arg(ap, uint64_t);
    va_end(ap);
    real(ucp, fn, argc, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
}

/* ---- the report ---- */

static void out_dec(unsigned v) {
    char buf[12], *p = buf + sizeof buf;
    *--p = 0;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out(p);
}

struct walk {
    int n, printed;
    const char *first_name;
};

/* "    #N 0xADDR in FUNCTION (MODULE+0xOFFSET)", as Oscar's other reports. */
static _Unwind_Reason_Code frame_cb(struct _Unwind_Context *ctx, void *arg) {
    struct walk *w = arg;
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
    if (!ip || w->printed >= 32)
        return _URC_END_OF_STACK;
    if (w->n++ < 2) /* pss_report, __oscar_pss_fail */
        return _URC_NO_REASON;
    Dl_info info;
    int known = dladdr((void *)(ip - 1), &info) != 0 && info.dli_fname;
    out("    #");
    out_dec((unsigned)w->printed);
    out(" ");
    out_hex(ip);
    const char *name = w->printed == 0 ? w->first_name : known ? info.dli_sname : NULL;
    if (name) {
        out(" in ");
        out(name);
    }
    if (known) {
        out(" (");
        out(info.dli_fname);
        out("+");
        out_hex(ip - (uintptr_t)info.dli_fbase);
        out(")");
    }
    out("\n");
    w->printed++;
    return _URC_NO_REASON;
}

static sigjmp_buf walk_fault;
static void on_walk_fault(int sig) { siglongjmp(walk_fault, sig); }

__attribute__((used, noreturn, noinline, visibility("hidden"))) void
pss_report(const char *fn, uintptr_t found, uintptr_t slot, long off);
void pss_report(const char *fn, uintptr_t found, uintptr_t slot, long off) {
    uintptr_t expected = *(uintptr_t *)(slot + (uintptr_t)off);
    out("oscar: return-address overwrite in ");
    out(fn);
    out(" (expected ");
    out_hex(expected);
    out(", found ");
    out_hex(found);
    out(")\n");
    /* The stack along the real return addresses: the slot gets its copy back first, so the
     * unwinder does not follow the attacker's address; a fault while walking frames the
     * overflow may have corrupted further up ends the walk. */
    *(uintptr_t *)slot = expected;
    struct sigaction sa, old_segv, old_bus;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_walk_fault;
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    struct walk w = {0, 0, fn};
    if (sigsetjmp(walk_fault, 1) == 0)
        _Unwind_Backtrace(frame_cb, &w);
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    die();
}

/* Called from the instrumented epilogue, %rdi = the function's name; the failed return's slot
 * is at 8(%rsp). __oscar_pss_fail_random: from code built with the offset in a read-only page;
 * __oscar_pss_fail_gs: from code addressing the copy through the GS base. */
__asm__(".text\n"
        ".globl __oscar_pss_fail\n"
        ".type __oscar_pss_fail, @function\n"
        "__oscar_pss_fail:\n"
        ".cfi_startproc\n"
        "\tmovq 8(%rsp), %rsi\n"
        "\tleaq 8(%rsp), %rdx\n"
        "\tmovabsq $-0x21f3b5c7080, %rcx\n"
        "\tcall pss_report\n"
        "\thlt\n"
        ".cfi_endproc\n"
        ".size __oscar_pss_fail, .-__oscar_pss_fail\n"
        ".globl __oscar_pss_fail_random\n"
        ".type __oscar_pss_fail_random, @function\n"
        "__oscar_pss_fail_random:\n"
        ".cfi_startproc\n"
        "\tmovq 8(%rsp), %rsi\n"
        "\tleaq 8(%rsp), %rdx\n"
        "\tmovq __oscar_pss_offset@GOTPCREL(%rip), %rcx\n"
        "\tmovq (%rcx), %rcx\n"
        "\tcall pss_report\n"
        "\thlt\n"
        ".cfi_endproc\n"
        ".size __oscar_pss_fail_random, .-__oscar_pss_fail_random\n"
        ".globl __oscar_pss_fail_gs\n"
        ".type __oscar_pss_fail_gs, @function\n"
        "__oscar_pss_fail_gs:\n"
        ".cfi_startproc\n"
        "\tmovq 8(%rsp), %rsi\n"
        "\tleaq 8(%rsp), %rdx\n"
        /* The offset of the GS code (the GS base - PSS_SKEW), without rdgsbase, which faults
         * where the code was patched for want of FSGSBASE. */
        "\tmovq pss_gs_offset(%rip), %rcx\n"
        "\tcall pss_report\n"
        "\thlt\n"
        ".cfi_endproc\n"
        ".size __oscar_pss_fail_gs, .-__oscar_pss_fail_gs\n");
