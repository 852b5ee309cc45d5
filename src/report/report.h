/* report: every message Oscar prints about the user's program. One function per error
 * kind; each formats on the stack, writes with write(2) and (for errors) ends the program
 * with the signal the user expects. No allocation, no stdio, no locks: these run inside
 * free() and inside the SIGSEGV handler. */
#ifndef OSCAR_REPORT_H
#define OSCAR_REPORT_H
#include "mem/region.h"

/* What a report knows of the object an address belongs to (heap/object.c finds it). */
enum object_state {
    OBJ_NOT_OURS,      /* outside the shadow region */
    OBJ_NEVER,         /* in the region, but no object was ever handed out there */
    OBJ_LIVE,
    OBJ_FREED,         /* revoked */
    OBJ_DEFERRED,   /* freed, shadow not yet revoked */
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

enum report_caller { CALL_FREE, CALL_REALLOC, CALL_USABLE_SIZE };

/* free/realloc given a pointer that is not the start of a live object: double free,
 * interior pointer, never allocated, not ours. Prints and aborts. */
__attribute__((noreturn)) void report_bad_pointer(uintptr_t addr, struct object_info o,
                                                  enum report_caller who);
/* The families of allocation and deallocation (alloc-dealloc-mismatch): malloc and free
 * (and every other C function), operator new and delete, operator new[] and delete[]. */
enum alloc_kind { KIND_MALLOC = 0, KIND_NEW = 1, KIND_NEW_ARRAY = 2 };
/* The live object o (at addr) allocated by `allocated` is freed by the deallocation of
 * another family (alloc-dealloc-mismatch), or by a sized delete of `size` bytes that are not
 * the object's `allocated` (new-delete-type-mismatch; not exact: only the size of its class
 * is known, fast mode's shared pages). Print both stacks and abort. */
__attribute__((noreturn)) void report_kind_mismatch(uintptr_t addr, struct object_info o,
                                                    enum alloc_kind allocated,
                                                    enum alloc_kind freed_as,
                                                    enum report_caller who);
__attribute__((noreturn)) void report_size_mismatch(uintptr_t addr, struct object_info o,
                                                    size_t allocated, size_t size, bool exact);
/* A fault in the shadow region (from the SIGSEGV handler). Prints; the caller then lets
 * the fault kill the program. Returns false if the fault is not one of ours. */
bool report_fault(uintptr_t addr, bool write, uintptr_t pc, uintptr_t fp, uintptr_t sp);
/* A fault (sig) at pc inside Oscar's own code, about to kill the program with the default
 * action (from the SIGSEGV handler): says so, with Oscar's frames and the program's. */
void report_crash(int sig, uintptr_t addr, uintptr_t pc, uintptr_t fp, uintptr_t sp);
/* Which object an address belongs to, and the origin of a custom-allocator view: the heap
 * layer knows, and registers them at init (heap/object.c, heap/views.c). Before that, every
 * address is OBJ_NOT_OURS. */
typedef struct object_info (*report_describe_fn)(uintptr_t addr);
/* (Returns the hook it replaces, NULL for none: protect mode's asks sample.c's about the
 * addresses outside its heap.) */
report_describe_fn report_set_describe_hook(report_describe_fn describe);
void report_set_view_origin_hook(uintptr_t (*view_origin)(uintptr_t addr));
struct object_info report_describe(uintptr_t addr);
/* Where the stacks of an object kept outside the region are (heap/sample.c): NULL for the
 * others. */
struct obj_record;
void report_set_record_hook(struct obj_record *(*record)(uintptr_t start));
/* A misuse of the custom-allocator API (heap/views.c): one line, the caller's stack and the
 * object's history. */
void report_api_error(const char *fn, uintptr_t addr, const char *code, const char *why);
/* Oscar itself cannot go on (e.g. no address space at start). Prints and aborts. */
__attribute__((noreturn)) void report_fatal(const char *what, int err);
#endif
