/* object: from any address in the shadow region to the object it belongs to. Used by the
 * free path and the fault handler; reads only the page table, never allocates. */
#ifndef OSCAR_OBJECT_H
#define OSCAR_OBJECT_H
#include "mem/region.h"
#include "report/report.h" /* struct object_info */


struct object_info object_describe(uintptr_t addr);
/* Registers object_describe as the report layer's describe hook. Called once at init. */
void object_register_hooks(void);
#endif
