/* off: see off.h. */
#include "modes/off.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "os/os.h"

#include <sys/resource.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);

void off_enter(const char *why, int err) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_OFF);
    fmt_str(&f, why);
    if (err) {
        fmt_str(&f, " (errno ");
        fmt_i64(&f, err);
        fmt_str(&f, ")");
    }
    fmt_str(&f, ": glibc's malloc serves this process, unprotected\n");
    fmt_flush(&f, 2);
    __atomic_store_n(&protect_mode_state, PROTECT_STATE_OFF, __ATOMIC_RELEASE);
}

bool off_for_limits(void) {
    uint64_t limit;
    if (os_rlimit(RLIMIT_AS, &limit) != 0 || limit >= OFF_MIN_AS_SHADOW)
        return false;
    char why[160];
    struct fmt f = FMT_INIT(why);
    fmt_str(&f, "RLIMIT_AS is ");
    fmt_u64(&f, limit >> 20);
    fmt_str(&f, " MiB, less than the ");
    fmt_u64(&f, OFF_MIN_AS_SHADOW >> 20);
    fmt_str(&f, " MiB of address space strict and fast modes need");
    fmt_char(&f, 0);
    off_enter(why, 0);
    return true;
}

void *off_malloc(size_t size) { return __libc_malloc(size); }
void *off_calloc(size_t size) { return __libc_calloc(1, size); }
void *off_aligned(size_t size, size_t align) { return __libc_memalign(align, size); }
void *off_realloc(void *p, size_t size) { return __libc_realloc(p, size); }
void off_free(void *p) { __libc_free(p); }

/* glibc's malloc_usable_size: the chunk's size (the word before p, flags masked) less its
 * header (a chunk glibc mapped for itself: two words; any other: one). */
size_t off_usable_size(void *p) {
    if (!p)
        return 0;
    size_t head = ((const size_t *)p)[-1], chunk = head & ~(size_t)7;
    return head & 2 ? chunk - 2 * sizeof(size_t) : chunk - sizeof(size_t);
}
