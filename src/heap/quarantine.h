/* quarantine: freed small objects whose shadow could not be revoked because the process is
 * at the kernel's mapping limit. Their slots stay claimed (never reused), their page
 * entries say QUARANTINED (so a second free is still a double free), and they are revoked
 * when the mapping count allows again. Slow path only (degraded mode), under one lock. */
#ifndef OSCAR_QUARANTINE_H
#define OSCAR_QUARANTINE_H
#include <stdbool.h>
#include <stdint.h>

int quarantine_init(void);
/* Remember a quarantined shadow page; false if the list is full (the object then stays
 * quarantined for the life of the process: safe, only its slot is lost). */
bool quarantine_push(uintptr_t page);
/* Revoke what can be revoked now. */
void quarantine_drain(void);
void quarantine_lock(void);
void quarantine_unlock(void);
#endif
