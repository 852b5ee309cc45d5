/* Parallel shadow stacks (`oscar cc`): the runtime's API for programs that switch stacks by
 * themselves (coroutines with their own assembly, green threads). Code built with `oscar cc`
 * keeps a copy of each return address at a fixed distance from it; a stack the runtime does not
 * know about (the main thread's, pthread_create's, sigaltstack's and makecontext's are known)
 * must be registered before instrumented code runs on it. Link: liboscar_pss.so (added by
 * `oscar cc`). docs/shadow-stacks.md has the design. */
#ifndef OSCAR_PSS_H
#define OSCAR_PSS_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Maps the shadow of [base, base + size). Idempotent; a stack overlapping a registered one
 * replaces it. Dies with "oscar: cannot map the shadow stack ..." when its address is taken. */
void oscar_pss_register_stack(void *base, size_t size);
#ifdef __cplusplus
}
#endif
#endif
