/* sample: OSCAR_SAMPLE_RATE=N (protect mode; on by default) gives about one allocation in N a
 * page of its own, the object at the page's end and a guard page after it. free revokes the
 * page, so a later access to the object faults at once and is reported as a use-after-free
 * with its allocation and free stacks: protect mode makes a dangling pointer harmless,
 * sampling makes some of them seen, in production (GWP-ASan's idea on Oscar's revocation).
 *
 * The pages come from one large reservation (SAMPLE_POOL_GIB of address space), taken in
 * order, a chunk of SAMPLE_CHUNK_SLOTS slots at a time. With guard markers (Linux 6.15+:
 * MADV_GUARD_INSTALL, and such pages told apart from swapped-out ones in /proc/self/pagemap,
 * where the mark looks) a chunk is made read-write once and its guard pages are marked in
 * one system call; handing out a slot then costs no system call (the program's first write
 * faults a fresh zero page in) and a free is one madvise that installs a guard marker on the
 * object's page: no kernel mapping is split, the page's memory goes back to the system and
 * every access faults. A chunk whose slots have all been freed is retired (one PROT_NONE
 * mapping over it: its page tables go too). Without guard markers (older kernels,
 * OSCAR_GUARDS=0) each sampled page is mapped and revoked with mmap, as strict mode does.
 *
 * A freed slot's address is never handed out again (a dangling pointer to it keeps
 * faulting): the reservation is used up after SAMPLE_POOL_GIB GiB / 8 KiB samples (4 TiB:
 * 5.4e8 samples; at the default rate of one in 20,000, 1.1e13 allocations, 124 days of a
 * million allocations a second), then sampling stops (stat sample_pool_full). Memory stays
 * bounded meanwhile: the records (size, stacks) of the last SAMPLE_RECORDS sampled objects
 * are kept in a ring (an older one's report then lacks its size and stacks), at most
 * SAMPLE_LIVE_MAX sampled objects are live at once (so the kernel mappings stay bounded: at
 * most two per live sampled object), and retired chunks cost nothing. Objects over a page,
 * and aligned allocations, are never sampled. */
#ifndef OSCAR_SAMPLE_H
#define OSCAR_SAMPLE_H
#include "base/core.h"
#include "report/stack.h"

#define SAMPLE_POOL_GIB 4096     /* address space reserved (halved until the kernel agrees) */
#define SAMPLE_CHUNK_SLOTS 256   /* slots made usable, and retired, together (2 MiB) */
#define SAMPLE_RECORDS 65536     /* records kept (ring): 2 MiB at most */
#define SAMPLE_LIVE_MAX 4096     /* sampled objects live at once, at most */

extern int64_t sample_rate;          /* OSCAR_SAMPLE_RATE; 0: off */
extern uintptr_t sample_lo, sample_hi; /* the pool, [lo, hi); 0, 0 when off */
/* The whole reservation, the pool and its alignment slack: none of it is a root but the
 * sampled objects' own pages (a mark that took the PROT_NONE rest for the program's walked
 * its page tables, 4 TiB, at every mark). */
extern uintptr_t sample_reserved_lo, sample_reserved_hi;

/* Reserve the pool; 0 or an errno (sampling then stays off). */
int sample_init(void);
static inline bool sample_owns(const void *p) {
    return (uintptr_t)p - sample_lo < sample_hi - sample_lo;
}
/* The number of allocations until the next sample (random, mean sample_rate). */
int64_t sample_interval(void);
/* Is the process still in its first OSCAR_SAMPLE_FIRST samplable allocations (every one is
 * sampled)? sample_first_take takes one of them (false: the last was taken meanwhile). */
bool sample_first_open(void);
bool sample_first_take(void);
/* A sampled object of size bytes (zeroed), or NULL (too big, too many live, the pool used up,
 * no memory). */
void *sample_alloc(size_t size);
/* p is sample_owns: free it (revoke its page), or report a bad free (who: enum
 * report_caller) and abort. */
void sample_free(void *p, int who);
/* The kind operator new recorded for live sampled object p (as the heap's ph_set_kind), and
 * taken back with its requested size at its delete (false: p is no live object's start). */
void sample_set_kind(void *p, unsigned kind);
bool sample_take_kind(void *p, unsigned *kind, size_t *size);
/* What a report says of address a in the pool. */
struct object_info sample_object(uintptr_t a);
/* malloc_usable_size of a sampled object (a bad pointer is reported). */
size_t sample_usable_size(void *p, int who);
#endif
