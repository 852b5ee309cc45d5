/* maplimit: the kernel's per-process mapping limit (vm.max_map_count, 65530 by default).
 *
 * We keep an estimate of the process's mappings: the count read from /proc/self/maps at
 * start plus the change each of our own mmaps makes (mapview.h), recounted once the changes
 * since the last count add up to a sixteenth of it (the predictions miss some of the kernel's
 * merges of neighbouring pages), so it never drifts far. When the estimate reaches the soft limit (max_map_count minus
 * OSCAR_MAP_RESERVE) we recount for real; if the process is really that close, Oscar
 * degrades: a free whose revocation would split a mapping defers the revocation instead
 * (its slot is never reused while its shadow stays mapped), and says so once on stderr.
 * Below the soft limit again (with hysteresis), it revokes the deferred shadows. */
#ifndef OSCAR_MAPLIMIT_H
#define OSCAR_MAPLIMIT_H
#include <stdbool.h>

void maplimit_init(void);
/* The heap's "below the limit again" action (heap/deferred.c registers it at init). */
void maplimit_set_relief_hook(void (*hook)(void));
/* In a fork's child, before the program runs again (it is one thread): /proc/self/maps opened
 * for the child itself (no open while its threads may run: os/kept.h). */
void maplimit_fork_child(void);
/* How to park the program's other threads for a moment (scan/world.h: world_try_stop,
 * world_resume; set at init by modes/alloc.c): stop returns 0 when they are parked. */
void maplimit_set_stop_hooks(int (*stop)(void), void (*resume)(void));
/* Our mappings changed by delta (estimate). */
void maplimit_add(long delta);
/* True when a revocation that adds `delta` mappings should be deferred. */
bool maplimit_defer(long delta);
/* An mmap of ours failed with ENOMEM: recount and degrade if that is why. */
void maplimit_on_enomem(void);
/* The program lowered RLIMIT_AS since the last look (a shell's `ulimit -v`): give back what
 * maplimit_on_enomem would, now. fork's prepare calls it before it takes any lock: fast mode's
 * allocations may never fail after the lowering (packed pages), and the fork's copy of the
 * canonical heap, sized before it, then did not fit: the child aborted ("fork: cannot copy
 * the canonical heap for the child"), so a shell under fast mode could not run a command
 * after `ulimit -v 4000000`. One getrlimit a fork. True when something was given back. */
bool maplimit_fit_if_lowered(void);
bool maplimit_degraded(void);
/* True while the estimate is below half the soft limit: room for mappings that save time
 * but never merge with their neighbours (keep.c). */
bool maplimit_plenty(void);
#endif
