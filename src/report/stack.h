/* stack: where each object was allocated and freed.
 *
 * Capture walks the frame-pointer chain through Oscar's own frames (liboscar is built with
 * frame pointers) to the allocator's caller, then every frame of the program by its .eh_frame
 * rules (report/unwind.h), so code without frame pointers (libc, -O2 programs) is walked too;
 * the walk never reads outside the current thread's stack, so it cannot fault. Each distinct stack is kept
 * once in a lock-free hash table of fixed size (OSCAR_STACK_STORE_MIB); an object's record
 * (16 bytes next to its page entry, out of band) holds the ids of its allocation and free
 * stacks and the threads. When the store is full, new stacks are not recorded and reports
 * say so. Everything here is allocation-free and signal-safe. */
#ifndef OSCAR_STACK_H
#define OSCAR_STACK_H
#include "base/core.h"

#define STACK_MAX_FRAMES 32

struct obj_record {
    _Atomic uint32_t alloc_stack, free_stack; /* 0: not recorded */
    _Atomic uint32_t alloc_tid, free_tid;
};

extern int stack_depth; /* OSCAR_STACK_DEPTH; 0 = off */

int stack_init(void);
/* The stack store alone, for records kept elsewhere (heap/sample.c): stack_init calls it. */
int stack_store_init(void);
/* liboscar's own image (so that every walk leaves Oscar's frames out) and the module table,
 * without the store: protect mode's reports walk stacks even when nothing is recorded.
 * stack_store_init calls it; at init (it asks the loader). */
void stack_image_init(void);
/* Record who allocated / freed the object of record r. */
void stack_record_alloc(struct obj_record *r);
void stack_record_free(struct obj_record *r);
/* Record who allocated / freed the object whose first page is `page`. */
void stack_note_alloc(uintptr_t page);
void stack_note_free(uintptr_t page);
/* Are the region's records there (stack_init ran: strict and fast modes)? */
bool stack_has_records(void);
/* The record of the object whose first page is `page`. */
struct obj_record *stack_record(uintptr_t page);
/* The frames of a stored stack; returns how many. */
int stack_frames(uint32_t id, uintptr_t *out);
/* Walk the stack from (pc, fp, sp) as the current thread sees it (pc 0: from the caller of
 * Oscar's entry point), skipping Oscar's frames; for reports (no module-table refresh, which
 * takes the loader's lock). pc, when given, is frame 0 itself (the faulting instruction). */
int stack_walk(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t *out, int max);
/* The same walk from a fault at pc inside Oscar, Oscar's own frames kept (its crash report):
 * pc, then the return addresses of Oscar's frames by their frame pointers, then the
 * program's frames as stack_walk finds them. */
int stack_walk_with_ours(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t *out, int max);
/* This thread's kernel id (cached); the fork child handler calls stack_after_fork. */
uint32_t stack_thread_id(void);
void stack_after_fork(void);
/* Is pc inside liboscar? */
bool stack_is_ours(uintptr_t pc);
#endif
