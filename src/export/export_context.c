/* export_context: swapcontext and setcontext, noted: a program that switches stacks may run
 * a coroutine whose stack lies above live frames of a suspended context (an array in a frame
 * of the thread's own stack), and protect mode's marks must then read the whole of a stack,
 * not only above its stack pointer (scan/roots.h). And the stacks the program gives its
 * threads (pthread_attr_setstack, pthread_attr_setstackaddr), noted: its data may lie beside
 * them in one mapping. libc's functions do the work. */
#define _GNU_SOURCE
#include "base/core.h"
#include "export/real.h"
#include "scan/roots.h"

#include <pthread.h>
#include <ucontext.h>

DECLARE(int, swapcontext, ucontext_t *, const ucontext_t *)
DECLARE(int, setcontext, const ucontext_t *)

DECLARE(int, pthread_attr_setstack, pthread_attr_t *, void *, size_t)
DECLARE(int, pthread_attr_setstackaddr, pthread_attr_t *, void *)

__attribute__((constructor)) static void find_real_context(void) {
    (void)real_fn_swapcontext();
    (void)real_fn_setcontext();
    (void)real_fn_pthread_attr_setstack();
    (void)real_fn_pthread_attr_setstackaddr();
}

OSCAR_EXPORT int pthread_attr_setstack(pthread_attr_t *attr, void *addr, size_t size) {
    int r = real_fn_pthread_attr_setstack()(attr, addr, size);
    if (r == 0)
        roots_note_user_stack((uintptr_t)addr, (uintptr_t)addr + size);
    return r;
}

/* (Deprecated: addr is the stack's top, its size the attribute's: noted from top - 1.) */
OSCAR_EXPORT int pthread_attr_setstackaddr(pthread_attr_t *attr, void *addr) {
    int r = real_fn_pthread_attr_setstackaddr()(attr, addr);
    if (r == 0)
        roots_note_user_stack((uintptr_t)addr - 1, (uintptr_t)addr);
    return r;
}

OSCAR_EXPORT int swapcontext(ucontext_t *from, const ucontext_t *to) {
    roots_note_context_switch();
    return real_fn_swapcontext()(from, to);
}

OSCAR_EXPORT int setcontext(const ucontext_t *to) {
    roots_note_context_switch();
    return real_fn_setcontext()(to);
}
