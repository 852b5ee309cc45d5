/* symbolize: see symbolize.h. */
#define _GNU_SOURCE
#include "report/symbolize.h"
#include "os/os.h"
#include "report/demangle.h"
#include "report/dwarf.h"
#include "report/unwind.h"

#include <elf.h>
#include <link.h>
#include <string.h>

/* The name of the function of a mapped ELF file that contains vaddr, or NULL. */
static const char *lookup(const char *file, size_t len, uintptr_t vaddr) {
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)file;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > len)
        return NULL;
    const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(file + eh->e_shoff);
    const char *best = NULL;
    uintptr_t best_start = 0;
    for (int want = SHT_SYMTAB; want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0) {
        for (int i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum)
                continue;
            const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
            if (sh[i].sh_offset + sh[i].sh_size > len || strs->sh_offset + strs->sh_size > len)
                continue;
            const ElfW(Sym) *sym = (const ElfW(Sym) *)(file + sh[i].sh_offset);
            size_t n = sh[i].sh_size / sizeof *sym;
            for (size_t k = 0; k < n; k++) {
                if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_value ||
                    sym[k].st_name >= strs->sh_size)
                    continue;
                uintptr_t start = sym[k].st_value, end = start + sym[k].st_size;
                if (vaddr >= start && (vaddr < end || (!sym[k].st_size && start > best_start)) &&
                    start >= best_start) {
                    best = file + strs->sh_offset + sym[k].st_name;
                    best_start = start;
                }
            }
        }
        if (best)
            return best;
    }
    return NULL;
}

/* The separate debug file of a stripped module (Debian's -dbgsym packages), by build id. */
static char *map_debug_file(const char *img, size_t len, size_t *dlen) {
    char id[128], path[200];
    int n = dwarf_build_id(img, len, id, sizeof id);
    if (n < 2)
        return NULL;
    struct fmt p = FMT_INIT(path);
    fmt_str(&p, "/usr/lib/debug/.build-id/");
    fmt_char(&p, id[0]);
    fmt_char(&p, id[1]);
    fmt_char(&p, '/');
    fmt_str(&p, id + 2);
    fmt_str(&p, ".debug");
    fmt_char(&p, 0);
    int err;
    return os_map_file(path, dlen, &err);
}

static void frame_head(struct fmt *f, int index, uintptr_t pc) {
    fmt_str(f, "    #");
    fmt_u64(f, (uint64_t)index);
    fmt_char(f, ' ');
    fmt_hex(f, pc);
    fmt_char(f, ' ');
}

static void frame_tail(struct fmt *f, int fd, const char *module, uintptr_t off) {
    fmt_char(f, '(');
    fmt_str(f, module);
    fmt_char(f, '+');
    fmt_hex(f, off);
    fmt_str(f, ")\n");
    fmt_flush(f, fd);
}

/* "in NAME ", a C++ name demangled as c++filt prints it (std::vector<int,
 * std::allocator<int> >::push_back(int const&)), or as it is when the demangler has no answer.
 * A name too long for the rest of the line's buffer is written on its own, so the line keeps
 * its file:line and module. */
static void frame_name(struct fmt *f, int fd, const char *name) {
    char text[2048];
    if (name[0] == '_' && name[1] == 'Z' && demangle(name, text, sizeof text))
        name = text;
    size_t len = 0;
    while (name[len])
        len++;
    fmt_str(f, "in ");
    if (f->len + len + 512 > f->cap) {
        fmt_flush(f, fd);
        struct fmt whole = {(char *)name, len, len};
        fmt_flush(&whole, fd);
    } else {
        fmt_str(f, name);
    }
    fmt_char(f, ' ');
}

int symbolize_frame(struct fmt *f, int fd, uintptr_t pc, bool exact, int index, bool may_refresh) {
    const struct module *m = module_of(pc);
    if (!m && may_refresh) {
        module_refresh(true);
        m = module_of(pc);
    }
    if (!m && !may_refresh)
        m = module_from_maps(pc);
    if (!m) {
        frame_head(f, index, pc);
        fmt_str(f, "(<unknown module>)\n");
        fmt_flush(f, fd);
        return 1;
    }
    const char *module = m->path[0] ? m->path : "[vdso]";
    uintptr_t vaddr = pc - m->bias, at = exact ? vaddr : vaddr - 1; /* a return address: the call */
    size_t len = 0, dlen = 0;
    int err;
    char *file = m->path[0] ? os_map_file(m->path, &len, &err) : NULL;
    char *debug = NULL;
    const char *sym = file ? lookup(file, len, at) : NULL;
    struct dwarf_frame fr[DWARF_MAX_FRAMES];
    int n = file ? dwarf_resolve(file, len, at, fr, DWARF_MAX_FRAMES) : 0;
    if (file && !n && (debug = map_debug_file(file, len, &dlen)) != NULL) {
        n = dwarf_resolve(debug, dlen, at, fr, DWARF_MAX_FRAMES);
        if (!sym)
            sym = lookup(debug, dlen, at);
    }
    if (!n) {
        fr[0] = (struct dwarf_frame){NULL, NULL, NULL, NULL, 0};
        n = 1;
    }
    for (int k = 0; k < n; k++) {
        /* The outermost is the symbol table's name; inlined functions have their DWARF
         * name (C++: the linkage name, both demangled). */
        const char *name = k == n - 1 && sym ? sym : fr[k].func;
        frame_head(f, index + k, pc);
        if (name)
            frame_name(f, fd, name);
        if (fr[k].file && fr[k].line) {
            if (fr[k].dir && fr[k].file[0] != '/') {
                if (fr[k].base && fr[k].dir[0] != '/') {
                    fmt_str(f, fr[k].base);
                    fmt_char(f, '/');
                }
                fmt_str(f, fr[k].dir);
                fmt_char(f, '/');
            }
            fmt_str(f, fr[k].file);
            fmt_char(f, ':');
            fmt_u64(f, fr[k].line);
            fmt_char(f, ' ');
        }
        frame_tail(f, fd, module, vaddr);
    }
    if (debug)
        os_unmap(debug, dlen);
    if (file)
        os_unmap(file, len);
    return n;
}
