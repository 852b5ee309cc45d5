/* alloc: the allocator's internal API, one function per operation. export.c and
 * export_cxx.c forward the libc and C++ names here; argument checks and errno live there. */
#ifndef OSCAR_ALLOC_H
#define OSCAR_ALLOC_H
#include "report/report.h"
#include <stddef.h>

/* The allocator's initialisation: idempotent, never allocates; the first allocation of the
 * process (or export/'s constructor, or the API) runs it. */
void oscar_init(void);

void *alloc_malloc(size_t size);                  /* NULL + ENOMEM on failure */
void *alloc_calloc(size_t size);                  /* zeroed */
void *alloc_aligned(size_t size, size_t align);   /* align: a power of two */
void alloc_free(void *p, enum report_caller who); /* reports and aborts on a bad pointer */
void *alloc_realloc(void *p, size_t size);
size_t alloc_usable_size(void *p);
/* C++ (export_cxx.c): p was just allocated by operator new or new[] (kind); and the delete
 * of p by `kind`, sized (size: the size the program passed) or not (sized false), align:
 * the aligned forms' alignment (0: none). Mismatches are reported (strict and fast modes:
 * OSCAR_ALLOC_DEALLOC_MISMATCH, OSCAR_NEW_DELETE_TYPE_MISMATCH). */
void alloc_note_kind(void *p, enum alloc_kind kind);
void alloc_delete(void *p, enum alloc_kind kind, bool sized, size_t size, size_t align);
/* malloc_trim: give back to the kernel the freed memory Oscar still holds (kept pages of
 * freed large objects; in fast mode the calling thread's retire queue). 1 if anything was
 * given back, else 0. Protect mode gives nothing back here (0). */
int alloc_trim(void);
#endif
