/* object: see object.h. */
#include "heap/object.h"
#include "heap/views.h"
#include "mem/canon.h"
#include "heap/packed.h"
#include "heap/large.h"
#include "heap/reclaim.h"
#include "base/size_class.h"

struct object_info object_describe(uintptr_t addr) {
    struct object_info o = {OBJ_NOT_OURS, false, 0, 0, 0};
    if (!region_contains(addr))
        return o;
    o.state = OBJ_NEVER;
    uintptr_t page = addr & ~(OSCAR_PAGE - 1);
    uint64_t e = region_load(page);
    switch (entry_kind(e)) {
    case PK_NONE:
        if (reclaim_is_reclaimed(page)) {
            o.state = OBJ_RECLAIMED; /* every object there was freed long ago */
            o.start = addr;
        }
        return o;
    case PK_READY:
        return o;
    case PK_POISON:
        o.state = OBJ_POISON;
        return o;
    case PK_SMALL:
    case PK_SMALL_FREED:
    case PK_SMALL_GUARDED:
    case PK_DEFERRED: {
        unsigned size = class_size[entry_class(e)];
        uintptr_t start = page + (uintptr_t)entry_slot(e) * size;
        if (addr < start || addr >= start + size)
            return o; /* the rest of the page was never handed out through this shadow */
        o.start = start;
        o.size = entry_small_size(e);
        o.entry = e;
        o.state = entry_kind(e) == PK_SMALL         ? OBJ_LIVE
                  : entry_kind(e) == PK_DEFERRED ? OBJ_DEFERRED
                                                    : OBJ_FREED;
        return o;
    }
    case PK_PACKED:
    case PK_PACKED_FREED:
    case PK_PACKED_GUARDED: {
        unsigned size = class_size[entry_class(e)];
        uintptr_t slot = class_slot_at(addr - page, entry_class(e));
        if (slot >= class_slots(entry_class(e)) ||
            packed_group_of((unsigned)slot, entry_class(e)) != entry_slot(e))
            return o; /* the page's tail, or a slot handed out through another shadow */
        o.start = page + slot * size;
        o.size = size; /* packed objects do not record their requested size */
        o.entry = e;
        o.state = entry_kind(e) != PK_PACKED ||
                          canon_slot_is_free(entry_canon(e), (unsigned)slot)
                      ? OBJ_FREED
                      : OBJ_LIVE;
        if (entry_kind(e) == PK_PACKED && !packed_slot_handed_out(e, (unsigned)slot))
            o.state = OBJ_NEVER; /* (its bit says free only once it was handed out) */
        return o;
    }
    case PK_ARENA:
    case PK_VIEW:
        views_describe(addr, page, e, &o);
        return o;
    case PK_LARGE_TAIL:
        page -= entry_payload(e) << OSCAR_PAGE_SHIFT;
        e = region_load(page);
        /* fall through */
    case PK_LARGE:
    case PK_LARGE_FREED:
    case PK_LARGE_GUARDED:
        if (large_size(e) == 0)
            return o; /* the never-used rest of a carving chunk (large.c) */
        o.large = true;
        o.start = page;
        o.size = large_size(e);
        o.entry = e;
        o.state = entry_kind(e) == PK_LARGE ? OBJ_LIVE : OBJ_FREED;
        return o;
    }
    return o;
}

void object_register_hooks(void) { report_set_describe_hook(object_describe); }
