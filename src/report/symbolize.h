/* symbolize: from a code address to the frame lines of a report, the way AddressSanitizer
 * prints them:
 *     #N 0xPC in FUNCTION FILE:LINE (MODULE+0xOFFSET)
 * FILE:LINE from the module's DWARF (report/dwarf.h; a separate debug file under
 * /usr/lib/debug/.build-id/ is used when the module has none), one line per inlined function
 * (innermost first, all with the same pc) then the function that contains them; without debug
 * information `in FUNCTION (MODULE+0xOFFSET)` from the ELF symbol table (.symtab, else
 * .dynsym). MODULE+0xOFFSET stays, so addr2line and `oscar symbolize` can redo it offline.
 * The module comes from unwind.h's table (no loader lock), its file is mapped read-only with
 * open/mmap: no allocation, no stdio, usable in the SIGSEGV handler. */
#ifndef OSCAR_SYMBOLIZE_H
#define OSCAR_SYMBOLIZE_H
#include "base/fmt.h"
#include <stdbool.h>
#include <stdint.h>

/* Print (and flush to fd) the lines of frame pc, numbered from index; returns how many.
 * exact: pc is the faulting instruction itself, not a return address. may_refresh: the
 * module table may be refreshed (false inside a signal handler). */
int symbolize_frame(struct fmt *f, int fd, uintptr_t pc, bool exact, int index, bool may_refresh);
#endif
