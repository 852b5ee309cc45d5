/* export_context: swapcontext and setcontext, noted: a program that switches stacks may run
 * a coroutine whose stack lies above live frames of a suspended context (an array in a frame
 * of the thread's own stack), and protect mode's marks must then read the whole of a stack,
 * not only above its stack pointer (scan/roots.h). libc's functions do the work. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "scan/roots.h"

#include <ucontext.h>

DECLARE(int, swapcontext, ucontext_t *, const ucontext_t *)
DECLARE(int, setcontext, const ucontext_t *)

__attribute__((constructor)) static void find_real_context(void) {
    (void)real_fn_swapcontext();
    (void)real_fn_setcontext();
}

OSCAR_EXPORT int swapcontext(ucontext_t *from, const ucontext_t *to) {
    roots_note_context_switch();
    return real_fn_swapcontext()(from, to);
}

OSCAR_EXPORT int setcontext(const ucontext_t *to) {
    roots_note_context_switch();
    return real_fn_setcontext()(to);
}
