/* Protect mode: the only pointer to a freed object lies in a page of the program's that sits
 * right after a loaded object's zero-filled data (its bss): liboscar.so's ("oscar"), where
 * the kernel merges the two into one line of /proc/self/maps, or libc.so.6's ("libc"). With
 * "apart" the page is marked MADV_DONTDUMP and stays a line of its own, still right after it
 * (as a MADV_DONTFORK page does); with "none" or "readonly" the program makes it inaccessible
 * or read-only while the object is freed, and writable again before it clears the pointer.
 * A mark that takes the anonymous memory after a loaded object's file for that object's
 * (Oscar's own, or the object's gaps and constants) misses the pointer. Seen when a fresh
 * mapping fell into a hole there: this program makes the hole, or finds it (libc's, where
 * the loader unmapped its cache). See protect_common.h.
 *
 * The address after liboscar.so's bss is usually the kernel's [vvar] (then [vvar_vclock],
 * [vdso]): the program moves those pages elsewhere, as CRIU does on restore, keeping their
 * relative places. After that the vDSO glibc found at startup is gone, so the program never
 * asks glibc the time (Oscar makes the system call). Prints "unsupported ..." where the place
 * cannot be had. */
#define _GNU_SOURCE
#include "protect_common.h"
#include <sys/mman.h>

struct line {
    uintptr_t lo, hi;
    char path[256];
};

/* The lines of /proc/self/maps, at most `max`; how many. (Read before anything is moved.) */
static int read_maps(struct line *out, int max) {
    FILE *f = fopen("/proc/self/maps", "r");
    char buf[512];
    int n = 0;
    while (f && n < max && fgets(buf, sizeof buf, f)) {
        unsigned long lo, hi;
        int at = 0;
        if (sscanf(buf, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2)
            continue;
        out[n].lo = lo;
        out[n].hi = hi;
        snprintf(out[n].path, sizeof out[n].path, "%s", at ? buf + at : "");
        out[n].path[strcspn(out[n].path, "\n")] = 0;
        n++;
    }
    if (f)
        fclose(f);
    return n;
}

static struct line maps[4096];

static void unsupported(const char *why) {
    printf("unsupported %s\n", why);
    exit(0);
}

static int has(int argc, char **argv, const char *word) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], word) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int libc = has(argc, argv, "libc");
    int prot = has(argc, argv, "none") ? PROT_NONE : has(argc, argv, "readonly") ? PROT_READ : -1;
    int n = read_maps(maps, 4096);
    int last = -1;
    for (int i = 0; i < n; i++)
        if (strstr(maps[i].path, libc ? "/libc.so" : "liboscar"))
            last = i;
    if (last < 0)
        unsupported(libc ? "no libc.so.6 found" : "not under liboscar.so");
    /* The end of the anonymous memory after its last file line (its bss). */
    int i = last + 1;
    uintptr_t end = maps[last].hi;
    while (i < n && maps[i].lo == end && maps[i].path[0] == 0)
        end = maps[i++].hi;
    /* Move the kernel's special mappings that follow, all at once (not for libc: its hole
     * is found or not). */
    if (!libc && i < n && maps[i].lo == end && maps[i].path[0] == '[') {
        int first = i;
        uintptr_t hi = end;
        while (i < n && maps[i].lo == hi && (strncmp(maps[i].path, "[vvar", 5) == 0 ||
                                             strcmp(maps[i].path, "[vdso]") == 0))
            hi = maps[i++].hi;
        if (hi == end)
            unsupported("a mapping of the kernel's other than the vDSO after liboscar.so");
        char *to = mmap(NULL, hi - end, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (to == MAP_FAILED)
            unsupported("no room to move the vDSO");
        for (int k = first; k < i; k++)
            if (mremap((void *)maps[k].lo, maps[k].hi - maps[k].lo, maps[k].hi - maps[k].lo,
                       MREMAP_MAYMOVE | MREMAP_FIXED, to + (maps[k].lo - end)) == MAP_FAILED)
                unsupported("the kernel refused to move the vDSO");
    }
    void *volatile *page = mmap((void *)end, 4096, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (page == MAP_FAILED || (uintptr_t)page != end)
        unsupported("the address after the object's data is taken");
    if (has(argc, argv, "apart") && madvise((void *)page, 4096, MADV_DONTDUMP) != 0)
        unsupported("madvise(MADV_DONTDUMP) refused");
    if (prot >= 0)
        check_sealed_in(&page[5], (void *)page, 4096, prot);
    else
        check_held_in(&page[5]);
    return 0;
}
