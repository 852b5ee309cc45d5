/* dwarf: from a code address to function, file and line, reading the DWARF of a module's
 * file (mapped read-only by the caller): .debug_aranges to find the compilation unit,
 * .debug_info/.debug_abbrev for the function and the inlined subroutines that contain the
 * address, .debug_line for the line (DWARF 2 to 5, 32-bit format, as gcc and clang write it).
 *
 * No allocation and no locks: every table lives in the mapped file, and the one scratch table
 * (the abbreviation index of a unit) is static, taken with a try-lock; a second report running
 * at the same moment in another thread gets no file:line rather than waiting. Every read is
 * bounds-checked against its section, so a corrupt file gives no answer, never a fault. */
#ifndef OSCAR_DWARF_H
#define OSCAR_DWARF_H
#include <stddef.h>
#include <stdint.h>

/* Frames one pc resolves to: its function and the inlined calls in it (a std::vector of
 * std::string's destructor alone is eleven deep); deeper ones are left out, innermost first. */
#define DWARF_MAX_FRAMES 16

struct dwarf_frame {
    const char *func; /* NULL: unknown (the caller then uses the symbol table) */
    const char *base; /* NULL or the compilation directory, when dir is relative */
    const char *dir;  /* NULL or the directory of file */
    const char *file; /* NULL: no line information */
    unsigned line;
};

/* Resolve the ELF virtual address vaddr inside the ELF image [img, img + len). Fills out[] from
 * the innermost inlined function outward to the function that contains it (its func may be
 * NULL) and returns how many frames (0: no debug information covers vaddr). */
int dwarf_resolve(const char *img, size_t len, uint64_t vaddr, struct dwarf_frame *out, int max);

/* The fork child: a report another thread was resolving at fork never ends there. */
void dwarf_after_fork(void);

/* The GNU build id of the ELF image as lowercase hex (for /usr/lib/debug/.build-id/xx/rest.debug);
 * returns its length in bytes, 0 when there is none. */
int dwarf_build_id(const char *img, size_t len, char *hex, size_t cap);
#endif
