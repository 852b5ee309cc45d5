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
 * The address after liboscar.so's bss may be the kernel's [vvar] (then [vvar_vclock],
 * [vdso]; in about one run of 300 here): the program moves those pages elsewhere
 * (move_vdso.h). With "vdso" it moves them first, wherever they are: a CI run met the first
 * case, and the program died of its own call to libc's clock; Oscar would have died next, of
 * reading the loader's record of the vDSO. Prints "unsupported ..." where the place cannot be
 * had. */
#define _GNU_SOURCE
#include "move_vdso.h"
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
    if (has(argc, argv, "vdso")) { /* moved first, wherever they are */
        const char *why = move_vdso_at(0);
        if (why)
            unsupported(why);
        n = read_maps(maps, 4096);
    }
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
    /* Move the kernel's vDSO pages that follow (not for libc: its hole is found or not). */
    if (!libc && i < n && maps[i].lo == end && maps[i].path[0] == '[') {
        if (!vdso_line(maps[i].path))
            unsupported("a mapping of the kernel's other than the vDSO after liboscar.so");
        const char *why = move_vdso_at(end);
        if (why)
            unsupported(why);
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
