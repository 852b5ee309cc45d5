/* packed: several objects per shadow page, Oscar's answer to the kernel's mapping limit.
 *
 * With one shadow page per object, every freed object between two live ones costs a kernel
 * mapping, and vm.max_map_count (65530 by default) runs out. Near the limit (maplimit.h)
 * new small objects come from packed spans instead: a never-used canonical span is mapped
 * whole, its pages at consecutive shadow pages in one mmap (one kernel mapping, which merges
 * with the previous packed span's when they are adjacent), and every slot of every page is
 * handed out through it. A freed slot is never reused while its shadow is mapped (packed
 * spans are never pooled). A shadow page is revoked when all its objects are freed, and the
 * whole span, and its memory, when all of its objects are. The price: a use after free is
 * caught only once every object on its shadow page is freed; a double free is always
 * caught (the slot's free bit). */
#ifndef OSCAR_PACKED_H
#define OSCAR_PACKED_H
#include "heap/thread.h"
#include "mem/canon.h"
#include "mem/region.h"

/* OSCAR_MODE=fast: every small object is packed (not only near the mapping limit). */
extern bool packed_mode;
/* OSCAR_OBJECTS_PER_PAGE: objects per packed shadow page (0: every slot of its page). */
extern unsigned packed_k;
static inline unsigned packed_group_size(unsigned cls) {
    return packed_k && packed_k < class_slots(cls) ? packed_k : class_slots(cls);
}
/* The group of slot `slot` (0 with the default of one group: no division on the free path). */
static inline unsigned packed_group_of(unsigned slot, unsigned cls) {
    return packed_k && packed_k < class_slots(cls) ? slot / packed_k : 0;
}
/* One group per page (the default): slots are handed out in order (canon_note_taken). */
static inline bool packed_one_group(unsigned cls) {
    return !packed_k || packed_k >= class_slots(cls);
}
/* Was slot of the packed page of entry e ever handed out? (Known for one group per page.) */
static inline bool packed_slot_handed_out(uint64_t e, unsigned slot) {
    return !packed_one_group(entry_class(e)) || canon_slot_taken(entry_canon(e), slot);
}
/* Shadow mappings of each packed span of class cls: one per group of slots. */
static inline unsigned packed_groups(unsigned cls) {
    return (class_slots(cls) + packed_group_size(cls) - 1) / packed_group_size(cls);
}
/* Reserve the poison window that freed packed objects are filled with pointers into. */
void packed_init(void);
/* Map a new packed span for class cls into c's packed range; false when out of memory. */
bool packed_refill(struct thread_cache *tc, unsigned cls);
/* Hand out the next object of c's packed range (which must not be empty). */
uintptr_t packed_take(struct class_cache *c, unsigned cls);
/* Is a (page entry e) the start of a slot of its packed page, and is that slot live? */
bool packed_is_live(uintptr_t a, uint64_t e);
/* Overwrite bytes (a multiple of 8) at a with pointers into the poison window: what a
 * dangling pointer reads from freed memory that is not revoked yet. */
void packed_poison(uintptr_t a, size_t bytes);
/* Fast mode: queue a freed large object (entry e, already marked PK_LARGE_GUARDED and
 * LARGE_FREEING, bytes long) to be revoked with the thread's next batch, which settles it;
 * false: the caller revokes it now. */
bool packed_retire_later(uintptr_t a, uint64_t e, size_t bytes);
/* Revoke the pages waiting on tc's retire queue (when it fills, and when the thread exits). */
void packed_flush_retired(struct thread_cache *tc);
/* malloc_trim: flush the calling thread's retire queue now; true if it held anything. */
bool packed_trim(void);
/* Free the live packed object at a; false if it was freed meanwhile (caller re-checks). */
bool packed_free(uintptr_t a, uint64_t e);
#endif
