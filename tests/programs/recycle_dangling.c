/* Strict and fast mode's address recycling (issue 17, item 9): once the shadow region is used
 * up (run with a tiny OSCAR_VA_GIB), old addresses are handed out again only where no pointer
 * into them remains. An object is freed and a pointer to it is kept ONLY in (argv[1]):
 *   global  a global variable;
 *   stack   a variable of main's frame;
 *   heap    a live heap object;
 *   thread  another thread's stack, while that thread sleeps in read(2);
 *   register  a register (r12) of a thread spinning in a loop (x86-64 only);
 *   tls     a __thread variable (main's);
 *   mmap    an anonymous private mapping of the program's own;
 *   mmap_lowered  the same, made after the program lowered its RLIMIT_AS (and forked, which
 *           makes Oscar give back what it reserved and never used, its metadata's tops too),
 *           placed where Oscar's metadata was (a read-write anonymous mapping before, a hole
 *           after): a mapping the kernel may well hand out there by itself (prints
 *           meta_hole 1 when such a hole was found);
 *   pastend a one-past-the-end pointer (in a global);
 *   altstack  a local of a signal handler running on an alternate signal stack (in a thread
 *           blocked in read(2) inside the handler);
 *   heap_swapped, large_swapped  a live small (canonical heap) or large object whose page is
 *           pushed out to swap (MADV_PAGEOUT) before the churn and every 8192 allocations of
 *           it (prints swapped_out 1 when mincore saw it out at least once: swap is on);
 *   none    nowhere (the control: its addresses are recycled).
 * Then argv[2] objects churn through a small ring (the region is used up and recycled many
 * times over), and no new object may ever cover the page of the held pointer. Then the pointer
 * is dropped and up to argv[3] more objects churn: its 2 MiB-aligned window must be handed out
 * again (the addresses are not kept out of use for ever).
 *
 * The program's own checks never hold the address: only its page number, xor-ed with MASK (so
 * that neither it nor a copy of it points anywhere). Prints held_hits, reused_after (or
 * "never_reused") and OK. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#define MASK 0x5a5a5a5a5a5a5a5aULL
#define RING 64

static void *volatile global_hold;         /* (a) */
static void **volatile box;                /* (c): a live object that holds the pointer */
static _Atomic uint64_t handoff;           /* (d): the masked address, for the thread */
static atomic_int thread_has_it;
static int wake[2];
static __thread void *volatile tls_hold;  /* (f) */
static void *volatile *volatile own_map;   /* (g): a mapping of the program's own */
static void *volatile *volatile large_box; /* large_swapped: a live large object */
static atomic_int stop_spinning;           /* (d) */
static void *volatile altstack_mem;        /* (i) */
static const char *where_g = "none";
static size_t own_map_len = 1 << 20;
static int swapped_seen;

/* Overwrites the dead stack below the caller, where stale copies of the pointer may lie:
 * every byte (a page-aligned pointer's low byte is 0 already). */
__attribute__((noinline)) static void scrub_stack(void) {
    volatile uint64_t buf[64 * 1024 / 8];
    for (size_t i = 0; i < sizeof buf / sizeof *buf; i++)
        buf[i] = 0;
}

/* (d): r12 = the pointer while spinning, computed and cleared inside the asm from the masked
 * value: no copy of the raw address ever reaches this thread's memory. */
static void *spinner(void *arg) {
    (void)arg;
    uint64_t m;
    while (!(m = atomic_exchange(&handoff, 0)))
        ;
    uint64_t mask = MASK;
    atomic_store(&thread_has_it, 1);
#if defined(__x86_64__)
    __asm__ volatile("mov %[m], %%r12\n\t"
                     "xor %[mask], %%r12\n\t"
                     "1:\n\t"
                     "pause\n\t"
                     "cmpl $0, %[stop]\n\t"
                     "je 1b\n\t"
                     "xor %%r12, %%r12\n\t"
                     :
                     : [m] "r"(m), [mask] "r"(mask), [stop] "m"(stop_spinning)
                     : "r12", "memory", "cc");
#else
    (void)mask;
    while (!atomic_load(&stop_spinning))
        ;
#endif
    scrub_stack(); /* (the park signal's frames below this one saved r12) */
    return NULL;
}

/* (i): the handler's local holds the pointer while it waits in read(2) on the altstack. */
static void on_usr1(int sig) {
    (void)sig;
    void *volatile local = (void *)(uintptr_t)(atomic_exchange(&handoff, 0) ^ MASK);
    atomic_store(&thread_has_it, 1);
    char c;
    while (read(wake[0], &c, 1) < 0)
        ;
    local = NULL;
    (void)local;
}

static void *altstack_thread(void *arg) {
    (void)arg;
    stack_t ss = {.ss_sp = altstack_mem, .ss_size = 1 << 16, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    while (!atomic_load(&handoff))
        usleep(1000);
    raise(SIGUSR1);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    return NULL;
}

/* heap_swapped, large_swapped: push the page holding the pointer out to swap. */
static void page_out(void) {
    void *box_page = NULL;
    if (!strcmp(where_g, "heap_swapped"))
        box_page = (void *)((uintptr_t)&box[3] & ~4095UL);
    else if (!strcmp(where_g, "large_swapped"))
        box_page = (void *)((uintptr_t)&large_box[70000] & ~4095UL);
    if (!box_page)
        return;
    madvise(box_page, 4096, MADV_PAGEOUT);
    unsigned char in = 1;
    if (mincore(box_page, 4096, &in) == 0 && !(in & 1))
        swapped_seen = 1;
}

static void *holder(void *arg) {
    (void)arg;
    while (!atomic_load(&handoff))
        usleep(1000);
    void *volatile local = (void *)(uintptr_t)(atomic_exchange(&handoff, 0) ^ MASK);
    atomic_store(&thread_has_it, 1);
    char c;
    while (read(wake[0], &c, 1) < 0) /* sleeps in the kernel: parked there */
        ;
    local = NULL;
    return (void *)local;
}

#define MAX_RANGES 4096
struct range {
    uintptr_t lo, hi;
};

/* The read-write private anonymous mappings without a name (where Oscar's metadata lies). */
static int rw_anonymous(struct range *out) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof line, f) && n < MAX_RANGES) {
        unsigned long lo, hi, inode;
        char perms[8];
        int name = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &inode, &name) < 4)
            continue;
        if (!strcmp(perms, "rw-p") && inode == 0 && (line[name] == '\n' || !line[name]))
            out[n++] = (struct range){lo, hi};
    }
    if (f)
        fclose(f);
    return n;
}

/* mmap_lowered: lowers RLIMIT_AS to just above what the process has mapped, forks (Oscar
 * gives back its unused reservations there), and maps own_map in a hole the metadata left. */
static void *map_where_meta_was(void) {
    static struct range before[MAX_RANGES], after[MAX_RANGES];
    int nb = rw_anonymous(before);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long vm_kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &vm_kib) == 1)
            break;
    if (f)
        fclose(f);
    struct rlimit rl = {.rlim_cur = ((rlim_t)vm_kib << 10) + (32 << 20),
                        .rlim_max = RLIM_INFINITY};
    check(setrlimit(RLIMIT_AS, &rl) == 0, "RLIMIT_AS lowered");
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int st;
    check(pid > 0 && waitpid(pid, &st, 0) == pid, "fork");
    int na = rw_anonymous(after);
    own_map_len = 64 << 10;
    for (int i = 0; i < nb; i++)
        for (uintptr_t a = before[i].lo; a + own_map_len <= before[i].hi; a += own_map_len) {
            bool mapped = false;
            for (int j = 0; j < na && !mapped; j++)
                mapped = a < after[j].hi && a + own_map_len > after[j].lo;
            if (mapped)
                continue;
            void *m = mmap((void *)a, own_map_len, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (m == (void *)a) {
                printf("meta_hole 1\n");
                return m;
            }
            if (m != MAP_FAILED)
                munmap(m, own_map_len);
        }
    printf("meta_hole 0\n");
    return mmap(NULL, own_map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* Frees an object, keeps its pointer where `where` says, returns its masked page number
 * (*window: the masked number of its 2 MiB-aligned window). */
__attribute__((noinline)) static uint64_t setup(const char *where, void *volatile *stack_slot,
                                                uint64_t *window) {
    char *v = malloc(3000); /* (a size the churn uses: no ready page of its class stays behind) */
    strcpy(v, "dangling");
    free(v);
    uint64_t page = ((uintptr_t)v >> 12) ^ MASK;
    *window = ((uintptr_t)v >> 21) ^ MASK;
    if (!strcmp(where, "global"))
        global_hold = v;
    else if (!strcmp(where, "stack"))
        *stack_slot = v + 8; /* (an interior pointer) */
    else if (!strcmp(where, "heap") || !strcmp(where, "heap_swapped"))
        box[3] = v;
    else if (!strcmp(where, "large_swapped"))
        large_box[70000] = v;
    else if (!strcmp(where, "tls"))
        tls_hold = v;
    else if (!strcmp(where, "mmap") || !strcmp(where, "mmap_lowered"))
        own_map[own_map_len / 16] = v;
    else if (!strcmp(where, "pastend"))
        global_hold = v + 3000; /* (one past the end) */
    else if (!strcmp(where, "thread") || !strcmp(where, "register") ||
             !strcmp(where, "altstack")) {
        atomic_store(&handoff, (uintptr_t)v ^ MASK);
        while (!atomic_load(&thread_has_it))
            usleep(1000);
    }
    v = NULL;
    return page;
}

/* n objects through the ring (each checked before its free); returns how many covered the
 * page (2^shift bytes) whose masked number is page, stopping at the first if first_only (*at:
 * the allocation that did first, counted from 1). */
__attribute__((noinline)) static long churn(long n, uint64_t page, int shift, bool first_only,
                                            long *at) {
    static unsigned char *ring[RING];
    static size_t len[RING];
    static uint64_t seed = 12345;
    long hits = 0;
    for (long i = 0; i < n; i++) {
        int k = (int)(i % RING);
        if (ring[k]) {
            check(ring[k][0] == (unsigned char)k && ring[k][len[k] - 1] == (unsigned char)k,
                  "churned object intact");
            free(ring[k]);
        }
        if (i % 8192 == 0)
            page_out();
        uint64_t r = rng_next(&seed);
        len[k] = 2100 + r % 1900; /* (one object a page in fast mode too) */
        ring[k] = malloc(len[k]);
        if (!ring[k]) {
            printf("FAIL malloc returned NULL at %ld\n", i);
            exit(2);
        }
        ring[k][0] = ring[k][len[k] - 1] = (unsigned char)k;
        uint64_t lo = (uintptr_t)ring[k] >> shift;
        uint64_t hi = ((uintptr_t)ring[k] + len[k] - 1) >> shift;
        uint64_t p = page ^ MASK; /* (a page number: points nowhere) */
        if (p >= lo && p <= hi) {
            hits++;
            if (at && !*at)
                *at = i + 1;
            if (first_only)
                break;
        }
    }
    return hits;
}

int main(int argc, char **argv) {
    test_init();
    const char *where = argc > 1 ? argv[1] : "none";
    long n1 = argc > 2 ? atol(argv[2]) : 600000, n2 = argc > 3 ? atol(argv[3]) : 1200000;
    where_g = where;
    pthread_t t;
    bool threaded = !strcmp(where, "thread") || !strcmp(where, "register") ||
                    !strcmp(where, "altstack");
    check(pipe(wake) == 0, "pipe");
    if (!strcmp(where, "altstack")) {
        altstack_mem = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_usr1;
        sa.sa_flags = SA_ONSTACK;
        sigaction(SIGUSR1, &sa, NULL);
    }
    if (threaded)
        check(pthread_create(&t, NULL,
                             !strcmp(where, "thread")     ? holder
                             : !strcmp(where, "register") ? spinner
                                                          : altstack_thread,
                             NULL) == 0,
              "thread started");
    if (!strcmp(where, "mmap"))
        own_map = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!strcmp(where, "mmap_lowered"))
        own_map = map_where_meta_was();
    if (!strcmp(where, "large_swapped")) {
        large_box = malloc(1 << 20);
        memset((void *)large_box, 0, 1 << 20);
    }
    box = malloc(200 * sizeof(void *));
    memset((void *)box, 0, 200 * sizeof(void *));
    churn(12000, 0, 12, false, NULL); /* past the box's chunks (a thread's slice of addresses) */
    void *volatile stack_slot = NULL; /* (b) */
    uint64_t window, page = setup(where, &stack_slot, &window);
    churn(2048, 0, 12, false, NULL); /* the victim's neighbours are freed too */
    scrub_stack();
    long first = 0;
    long held = churn(n1, page, 12, false, &first);
    printf("held_hits %ld\n", held);
    if (strstr(where, "_swapped"))
        printf("swapped_out %d\n", swapped_seen);
    if (held)
        printf("held_first_hit %ld\n", first);
    if (strcmp(where, "none"))
        check(held == 0, "no new object on the page of a held pointer");
    /* Drop it. */
    global_hold = NULL;
    stack_slot = NULL;
    box[3] = NULL;
    tls_hold = NULL;
    if (own_map)
        own_map[own_map_len / 16] = NULL;
    if (large_box)
        large_box[70000] = NULL;
    if (!strcmp(where, "register"))
        atomic_store(&stop_spinning, 1);
    else if (threaded)
        check(write(wake[1], "x", 1) == 1, "wake");
    if (threaded)
        pthread_join(t, NULL);
    if (altstack_mem)
        munmap(altstack_mem, 1 << 16); /* (its dead frames hold stale copies) */
    scrub_stack();
    long at = 0;
    churn(n2, window, 21, true, &at);
    if (at)
        printf("reused_after %ld\n", at);
    else
        printf("never_reused\n");
    check(at != 0, "the addresses around it are handed out again once the pointer is dropped");
    free((void *)box);
    free((void *)large_box);
    return test_finish();
}
