/* object: from any address in the shadow region to the object it belongs to. Used by the
 * free path and the fault handler; reads only the page table, never allocates. */
#ifndef OSCAR_OBJECT_H
#define OSCAR_OBJECT_H
#include "mem/region.h"

enum object_state {
    OBJ_NOT_OURS,      /* outside the shadow region */
    OBJ_NEVER,         /* in the region, but no object was ever handed out there */
    OBJ_LIVE,
    OBJ_FREED,         /* revoked */
    OBJ_QUARANTINED,   /* freed, shadow not yet revoked */
    OBJ_POISON,        /* the poison window: a pointer read from a freed packed object */
    OBJ_RECLAIMED,     /* freed long ago: its chunk's records are reclaimed (reclaim.h),
                        * so its start, size and stacks are unknown */
};

struct object_info {
    enum object_state state;
    bool large;
    uintptr_t start; /* the object's address as handed out */
    size_t size;     /* requested size */
    uint64_t entry;  /* the page entry of the object's first page */
};

struct object_info object_describe(uintptr_t addr);
#endif
