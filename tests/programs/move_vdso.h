/* Moving the kernel's vDSO pages ([vvar], [vvar_vclock], [vdso]) to a fresh place, keeping
 * their relative places, as CRIU does on restore. After it the vDSO glibc found at startup is
 * gone: neither the program nor Oscar may call libc's clock_gettime, gettimeofday or time, or
 * read the loader's record of the vDSO (its headers and name lie in it). Not a program itself
 * (only *.c and *.cc are built). */
#ifndef OSCAR_TEST_MOVE_VDSO_H
#define OSCAR_TEST_MOVE_VDSO_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static inline int vdso_line(const char *path) {
    return strncmp(path, "[vvar", 5) == 0 || strcmp(path, "[vdso]") == 0;
}

/* Moves the run of vDSO lines that starts at `from` (the first run if from is 0); NULL, or
 * why it could not. */
static inline const char *move_vdso_at(uintptr_t from) {
    enum { MAX = 8 };
    uintptr_t lo[MAX], hi[MAX];
    int n = 0;
    char buf[512], path[256];
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && n < MAX && fgets(buf, sizeof buf, f)) {
        unsigned long a, b;
        path[0] = 0;
        if (sscanf(buf, "%lx-%lx %*s %*s %*s %*s %255s", &a, &b, path) < 2 || !vdso_line(path))
            continue;
        if (n ? a != hi[n - 1] : from && a != from)
            break; /* the run ended (or this is not the line asked for) */
        lo[n] = a;
        hi[n++] = b;
    }
    if (f)
        fclose(f);
    if (n == 0)
        return "no vDSO where asked";
    char *to = mmap(NULL, hi[n - 1] - lo[0], PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (to == MAP_FAILED)
        return "no room to move the vDSO";
    for (int k = 0; k < n; k++)
        if (mremap((void *)lo[k], hi[k] - lo[k], hi[k] - lo[k], MREMAP_MAYMOVE | MREMAP_FIXED,
                   to + (lo[k] - lo[0])) == MAP_FAILED)
            return "the kernel refused to move the vDSO";
    return NULL;
}
#endif
