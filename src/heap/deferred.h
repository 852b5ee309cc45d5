/* deferred: freed small objects whose shadow could not be revoked because the process is
 * at the kernel's mapping limit. Their slots stay claimed (never reused), their page
 * entries say DEFERRED (so a second free is still a double free), and they are revoked
 * when the mapping count allows again. Slow path only (degraded mode), under one lock. */
#ifndef OSCAR_DEFERRED_H
#define OSCAR_DEFERRED_H
#include <stdbool.h>
#include <stdint.h>

int deferred_init(void);
/* Remember a shadow page whose revocation is deferred; false if the list is full (the
 * object then stays unrevoked for the life of the process: safe, only its slot is lost). */
bool deferred_push(uintptr_t page);
/* Revoke what can be revoked now. */
void deferred_drain(void);
void deferred_lock(void);
void deferred_unlock(void);
void deferred_fork_child(void); /* after deferred_unlock in a fork's child */
#endif
