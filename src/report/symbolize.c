/* symbolize: see symbolize.h. */
#define _GNU_SOURCE
#include "report/symbolize.h"
#include "os/os.h"

#include <dlfcn.h>
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

void symbolize(struct fmt *f, uintptr_t pc) {
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1((void *)pc, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) {
        fmt_str(f, "(<unknown module>)");
        return;
    }
    char path[512];
    const char *name = map->l_name;
    if (!name || !*name) { /* the main program (dladdr would give argv[0]) */
        os_readlink("/proc/self/exe", path, sizeof path);
        name = path;
    }
    uintptr_t vaddr = pc - map->l_addr;
    size_t len = 0;
    int err;
    char *file = os_map_file(name[0] == '/' ? name : "/proc/self/exe", &len, &err);
    const char *fn = file ? lookup(file, len, vaddr - 1) : NULL; /* pc is a return address */
    if (fn) {
        fmt_str(f, "in ");
        fmt_str(f, fn);
        fmt_char(f, ' ');
    } else if (info.dli_sname) {
        fmt_str(f, "in ");
        fmt_str(f, info.dli_sname);
        fmt_char(f, ' ');
    }
    if (file)
        os_unmap(file, len);
    fmt_char(f, '(');
    fmt_str(f, name);
    fmt_char(f, '+');
    fmt_hex(f, vaddr);
    fmt_char(f, ')');
}
