/* symbolize: from a code address to "function (module+0xOFFSET)" for reports, the way
 * AddressSanitizer prints frames, so addr2line and llvm-symbolizer can take the offset.
 * Reads the module's own ELF symbol table (.symtab, else .dynsym) from its file with
 * open/mmap: no allocation, no stdio, usable in the SIGSEGV handler. */
#ifndef OSCAR_SYMBOLIZE_H
#define OSCAR_SYMBOLIZE_H
#include "base/fmt.h"
#include <stdint.h>

/* Append "in NAME (MODULE+0xOFF)" (or "(MODULE+0xOFF)" when no symbol covers pc). */
void symbolize(struct fmt *f, uintptr_t pc);
#endif
