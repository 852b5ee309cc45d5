/* kinds: which family allocated each live object of strict and fast modes (malloc, operator
 * new, operator new[]), for alloc-dealloc-mismatch reports. Two bits per object in two side
 * tables of metadata (no allocation, no lock: atomic or/and on the word): small objects by
 * their canonical slot (a slot holds one live object at a time), large ones by their first
 * page's place in the region. A freed object's bits are cleared before its slot or address can
 * serve again, so every object starts as malloc's: malloc and free never write, and read
 * nothing until the first operator new of the process. Protect mode has its own heap and no
 * kinds (docs/reports.md). */
#ifndef OSCAR_KINDS_H
#define OSCAR_KINDS_H
#include "report/report.h"

/* Size the tables (after region_init and canon_init; they are reserved on the first
 * operator new, and if that is refused no kinds are recorded: every object reads as malloc's
 * and nothing is reported). 0. */
int kinds_init(void);
/* Set when the first object of another kind than malloc's was recorded. */
extern _Atomic bool kinds_used;
/* The live object at a (its first page's entry e, of kind PK_SMALL, PK_PACKED or PK_LARGE)
 * was just allocated by `kind`. */
void kinds_set(uintptr_t a, uint64_t e, enum alloc_kind kind);
/* The family that allocated the live object at a; kinds_take also forgets it (the object is
 * being freed). */
enum alloc_kind kinds_get(uintptr_t a, uint64_t e);
enum alloc_kind kinds_take(uintptr_t a, uint64_t e);
#endif
