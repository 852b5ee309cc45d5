/* report: every message Oscar prints about the user's program. One function per error
 * kind; each formats on the stack, writes with write(2) and (for errors) ends the program
 * with the signal the user expects. No allocation, no stdio, no locks: these run inside
 * free() and inside the SIGSEGV handler. */
#ifndef OSCAR_REPORT_H
#define OSCAR_REPORT_H
#include "heap/object.h"

enum report_caller { CALL_FREE, CALL_REALLOC, CALL_USABLE_SIZE };

/* free/realloc given a pointer that is not the start of a live object: double free,
 * interior pointer, never allocated, not ours. Prints and aborts. */
__attribute__((noreturn)) void report_bad_pointer(uintptr_t addr, struct object_info o,
                                                  enum report_caller who);
/* A fault in the shadow region (from the SIGSEGV handler). Prints; the caller then lets
 * the fault kill the program. Returns false if the fault is not one of ours. */
bool report_fault(uintptr_t addr, bool write, uintptr_t pc, uintptr_t fp, uintptr_t sp);
/* Oscar itself cannot go on (e.g. no address space at start). Prints and aborts. */
__attribute__((noreturn)) void report_fatal(const char *what, int err);
#endif
