/* protect_reports: what protect mode's reports need beyond its heap (modes/protect.c and
 * heap/protect_heap.c own the heap; this file only teaches the report layer about it). */
#ifndef OSCAR_MODES_PROTECT_REPORTS_H
#define OSCAR_MODES_PROTECT_REPORTS_H

/* From oscar_init, right after protect_select chose protect mode (under the init lock):
 *   - liboscar's image and the module table (report/stack.h), so that the stacks of protect
 *     mode's reports (double free, invalid free, mismatches) leave Oscar's frames out;
 *   - a fault at the heap's edges (below its first page, above its last: protect mode puts no
 *     guard pages between objects, so these are the only overflows that fault) is described
 *     and reported as the shadow region's are: a heap-buffer-overflow to the left or right of
 *     the object, or a wild access inside the heap, instead of a bare SIGSEGV. The hooks ask the
 *     ones they replace (heap/sample.c's) about every other address. */
void protect_reports_init(void);
#endif
