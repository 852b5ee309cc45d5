/* protect: OSCAR_MODE=protect, the production mode. Freed objects are zeroed and quarantined
 * (heap/protect_heap.h); a conservative mark (scan/mark.h) hands them out again only once no
 * pointer into them remains. The mode is chosen once, at initialisation; alloc.c asks
 * protect_on() first in each operation and forwards here. */
#ifndef OSCAR_MODES_PROTECT_H
#define OSCAR_MODES_PROTECT_H
#include "base/core.h"
#include "modes/alloc.h"
#include "report/report.h"

/* 0 until oscar_init has read the options, then 1 (strict or fast), 2 (protect) or
 * PROTECT_STATE_OFF (Oscar could not set itself up: modes/off.h). */
extern int protect_mode_state;
#define PROTECT_STATE_OFF 3
static inline bool protect_on(void) {
    int m = __atomic_load_n(&protect_mode_state, __ATOMIC_RELAXED);
    if (unlikely(!m)) {
        oscar_init();
        m = __atomic_load_n(&protect_mode_state, __ATOMIC_RELAXED);
    }
    return m == 2;
}

/* From oscar_init, after options_init, under the init lock: records the mode and, in protect
 * mode, sets everything it needs up. True: protect mode, or Oscar off because protect mode
 * could not be set up (the caller initialises nothing else). */
bool protect_select(void);
/* The fork handlers of protect mode (export/'s constructor registers them instead of
 * fork_init's). */
void protect_fork_init(void);
/* At exit: fold the threads' counters into stats. */
void protect_fold_stats(void);

void *protect_malloc(size_t size);
void *protect_calloc(size_t size);
void *protect_aligned(size_t size, size_t align);
void protect_free(void *p, enum report_caller who);
/* operator delete (as: its kind; sized: a sized delete of size bytes) and operator new's
 * record of the kind (OSCAR_ALLOC_DEALLOC_MISMATCH, OSCAR_NEW_DELETE_TYPE_MISMATCH). */
void protect_delete(void *p, enum alloc_kind as, bool sized, size_t size);
void protect_note_kind(void *p, enum alloc_kind kind);
void *protect_realloc(void *p, size_t size);
size_t protect_usable_size(void *p);
/* malloc_trim: a mark, then the memory of empty pages back to the system. 1 if any. */
int protect_trim(void);
#endif
