/* off: a process Oscar could not set itself up in. Under a tight RLIMIT_AS (a shell's
 * `ulimit -v`) its reservations did not fit beside the program: at 512 MiB strict and fast
 * modes ran out of addresses (malloc returned NULL, a fork's child aborted: limits_shapes
 * work), at 128 MiB every mode aborted at its first allocation ("oscar: fatal: cannot
 * reserve ..."), where glibc served the program. Now Oscar says so once and glibc's malloc
 * serves the program, unprotected: it runs as it does without Oscar. The mode is chosen at
 * initialisation, before Oscar hands out any object, so every pointer the program frees is
 * glibc's. (A limit the program lowers later, below what Oscar has reserved, is not this:
 * maplimit.c gives back what it can.) */
#ifndef OSCAR_MODES_OFF_H
#define OSCAR_MODES_OFF_H
#include "base/core.h"
#include "modes/protect.h"

/* Strict and fast modes need at least this much address space (RLIMIT_AS) at start. */
#define OFF_MIN_AS_SHADOW (768ULL << 20)

/* Is Oscar off in this process (protect_mode_state, after protect_on())? */
static inline bool off_now(void) {
    return __atomic_load_n(&protect_mode_state, __ATOMIC_RELAXED) == PROTECT_STATE_OFF;
}

/* From oscar_init (the init lock held): says why, once, and turns Oscar off. */
void off_enter(const char *why, int err);
/* Strict and fast modes: false, or (RLIMIT_AS below OFF_MIN_AS_SHADOW) Oscar is now off. */
bool off_for_limits(void);

void *off_malloc(size_t size);
void *off_calloc(size_t size);
void *off_aligned(size_t size, size_t align);
void *off_realloc(void *p, size_t size);
void off_free(void *p);
size_t off_usable_size(void *p);
#endif
