/* foreign: see foreign.h. */
#define _GNU_SOURCE
#include "modes/foreign.h"
#include "os/os.h"

#include <unistd.h>

extern void __libc_free(void *p);

/* glibc's chunk header (malloc/malloc.c): the word before the user pointer is the chunk's
 * size with flag bits; IS_MMAPPED marks a chunk glibc mapped for itself. */
#define CHUNK_IS_MMAPPED 2UL
#define CHUNK_FLAGS 7UL
#define PAGE 4096UL

/* Foreign pointers' state. */
static struct {
    /* Where the brk heap starts, read once from /proc/self/stat by the first start_brk (a
     * racing second reader stores the same value): 0 until then or when unknown. */
    uintptr_t start_brk;
} foreign_state;

static bool mapped(uintptr_t page) {
    unsigned char v;
    return os_mincore((void *)page, PAGE, &v) == 0;
}

/* Where the brk heap starts: field 47 (start_brk) of /proc/self/stat, read once. 0: unknown. */
static uintptr_t start_brk(void) {
    if (foreign_state.start_brk)
        return foreign_state.start_brk;
    long fd = os_open_read("/proc/self/stat");
    if (fd < 0)
        return 0;
    char buf[1024];
    long n = os_read((int)fd, buf, sizeof buf - 1);
    os_close((int)fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *s = NULL;
    for (long i = 0; i < n; i++)
        if (buf[i] == ')')
            s = buf + i; /* (the command name may hold spaces and parentheses) */
    if (!s)
        return 0;
    /* After ") " comes field 3; start_brk is field 47. */
    int field = 2;
    uintptr_t v = 0;
    for (s++; *s && field < 47; s++)
        if (*s == ' ')
            field++;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uintptr_t)(*s - '0');
    return foreign_state.start_brk = v;
}

static bool in_brk_heap(uintptr_t a) {
    uintptr_t lo = start_brk(), hi = (uintptr_t)sbrk(0);
    return lo && a >= lo + 16 && a < hi && (a & 15) == 0 && mapped((a - 16) & ~(PAGE - 1));
}

/* A chunk glibc mapped for itself: the pointer 16 bytes into a page, the header before it
 * saying IS_MMAPPED with a whole number of pages, and the chunk mapped to its end. */
static bool mmapped_chunk(uintptr_t a, size_t *size) {
    if ((a & (PAGE - 1)) != 16 || !mapped(a - 16))
        return false;
    size_t sz = *(const size_t *)(a - 8);
    size_t bytes = sz & ~CHUNK_FLAGS;
    if (!(sz & CHUNK_IS_MMAPPED) || bytes < PAGE || (bytes & (PAGE - 1)) ||
        !mapped(a - 16 + bytes - PAGE))
        return false;
    *size = bytes;
    return true;
}

bool foreign_is_libcs(const void *p, size_t *usable) {
    uintptr_t a = (uintptr_t)p;
    size_t bytes;
    if (!a)
        return false;
    if (mmapped_chunk(a, &bytes)) {
        *usable = bytes - 16;
        return true;
    }
    if (in_brk_heap(a)) {
        size_t sz = *(const size_t *)(a - 8), chunk = sz & ~CHUNK_FLAGS;
        if (chunk < 32 || a - 16 + chunk > (uintptr_t)sbrk(0))
            return false; /* (not a chunk's start) */
        *usable = chunk - 8;
        return true;
    }
    return false;
}

void foreign_free(void *p) { __libc_free(p); }
