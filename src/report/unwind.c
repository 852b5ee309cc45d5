/* unwind: see unwind.h. */
#define _GNU_SOURCE
#include "report/unwind.h"
#include "os/nopark.h"
#include "os/os.h"

#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <ucontext.h>

/* ---- The module table (append-only; entries never move) */

#define MAX_MODULES 512
#define REFRESH_EVERY_NS (50u * 1000 * 1000)
/* More program headers than any linker writes (ld: about 14). */
#define MAX_PHDRS 64

/* The module table's state. Entries are added only by a refresh, and a refresh runs under
 * refresh_state.refreshing (a try-lock: a thread that finds it taken goes on with the table
 * as it is); readers (module_of) take no lock. The refresh's own fields are apart, in
 * refresh_state: an object with any non-zero initialiser goes whole into .data (the file),
 * and this one (150 KiB) stays in .bss. */
static struct {
    struct module modules[MAX_MODULES]; /* an entry is written before module_count covers it */
    _Atomic bool module_gone[MAX_MODULES]; /* unloaded since it was added (set by a refresh) */
    _Atomic int module_count;              /* published with release by a refresh */
    bool seen_now[MAX_MODULES];            /* a refresh's scratch, under `refreshing` */
    char maps_buf[8192];                   /* /proc/self/maps, read under `refreshing` */
} modules_state;
static struct {
    atomic_flag refreshing;           /* cleared in a fork child (unwind_after_fork) */
    _Atomic uint64_t last_refresh_ns; /* written by a refresh, relaxed */
    /* The loader's counts of modules loaded and unloaded so far (dl_phdr_info's dlpi_adds
     * and dlpi_subs), read from the first module: the walk stops there. Written by a
     * refresh, relaxed. */
    _Atomic uint64_t seen_adds, seen_subs;
} refresh_state = {.refreshing = ATOMIC_FLAG_INIT, .seen_adds = UINT64_MAX};

const struct module *module_of(uintptr_t pc) {
    int n = atomic_load_explicit(&modules_state.module_count, memory_order_acquire);
    for (int i = n - 1; i >= 0; i--) /* newest first: a module loaded where one was unloaded */
        if (pc - modules_state.modules[i].lo < modules_state.modules[i].hi - modules_state.modules[i].lo &&
            !atomic_load_explicit(&modules_state.module_gone[i], memory_order_relaxed))
            return &modules_state.modules[i];
    return NULL;
}

/* A module's headers are read by copy, not in place: the loader's list keeps the vDSO where
 * the kernel put it at startup (its name too lies in it), and a program may have moved it
 * since (CRIU's restore does; protect_shape_after_bss "vdso"), or unmapped a module it no
 * longer calls. Such a module is left out, as is a vDSO whose old place now holds something
 * else than its ELF header. */
static bool headers_readable(const struct dl_phdr_info *info, ElfW(Phdr) *out) {
    static const unsigned char magic[SELFMAG] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3};
    unsigned char ident[SELFMAG];
    if (info->dlpi_addr == (uintptr_t)getauxval(AT_SYSINFO_EHDR) &&
        (os_read_own(ident, info->dlpi_addr, SELFMAG) != 0 || memcmp(ident, magic, SELFMAG)))
        return false;
    return os_read_own(out, (uintptr_t)info->dlpi_phdr, info->dlpi_phnum * sizeof *out) == 0;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    const uint8_t *eh = NULL;
    ElfW(Phdr) phdrs[MAX_PHDRS];
    if (info->dlpi_phnum > MAX_PHDRS || !headers_readable(info, phdrs))
        return 0;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &phdrs[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        }
    }
    if (hi <= lo)
        return 0;
    int n = atomic_load_explicit(&modules_state.module_count, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        if (modules_state.modules[i].lo == lo && modules_state.modules[i].hi == hi &&
            modules_state.modules[i].bias == info->dlpi_addr &&
            modules_state.modules[i].eh_hdr == eh &&
            (!*name || !strncmp(modules_state.modules[i].path, name, MODULE_PATH_MAX - 1)) &&
            !atomic_load_explicit(&modules_state.module_gone[i], memory_order_relaxed)) {
            modules_state.seen_now[i] = true;
            return 0;
        }
    }
    if (n == MAX_MODULES)
        return 1;
    struct module *m = &modules_state.modules[n];
    m->lo = lo;
    m->hi = hi;
    m->bias = info->dlpi_addr;
    m->eh_hdr = eh;
    if (!*name) /* the main program */
        os_readlink("/proc/self/exe", m->path, sizeof m->path);
    else if (strchr(name, '/')) {
        size_t l = strlen(name);
        if (l >= sizeof m->path)
            l = sizeof m->path - 1;
        memcpy(m->path, name, l);
        m->path[l] = 0;
    } else {
        m->path[0] = 0; /* the vdso */
    }
    modules_state.seen_now[n] = true;
    atomic_store_explicit(&modules_state.module_count, n + 1, memory_order_release);
    return 0;
}

static int read_counts(struct dl_phdr_info *info, size_t size, void *arg) {
    uint64_t *c = arg;
    os_nopark_test_pause(); /* (OSCAR_TEST_REVOKE_SPIN_US: a fork lands in here) */
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c[0] = info->dlpi_adds;
        c[1] = info->dlpi_subs;
    }
    return 1;
}

static void cache_flush(void);

void unwind_iterate_modules(int (*fn)(struct dl_phdr_info *, size_t, void *), void *arg) {
    os_nopark_enter();
    dl_iterate_phdr(fn, arg);
    os_nopark_leave();
}

/* Under `refreshing`. */
static void rebuild(void) {
    int before = atomic_load_explicit(&modules_state.module_count, memory_order_relaxed);
    memset(modules_state.seen_now, 0, sizeof modules_state.seen_now);
    unwind_iterate_modules(add_module, NULL);
    for (int i = 0; i < before; i++)
        if (!modules_state.seen_now[i])
            atomic_store_explicit(&modules_state.module_gone[i], true, memory_order_relaxed);
}

void module_refresh(bool force) {
    uint64_t now = os_monotonic_ns();
    if (!force &&
        now - atomic_load_explicit(&refresh_state.last_refresh_ns, memory_order_relaxed) < REFRESH_EVERY_NS &&
        atomic_load_explicit(&modules_state.module_count, memory_order_relaxed) != 0)
        return;
    if (atomic_flag_test_and_set_explicit(&refresh_state.refreshing, memory_order_acquire))
        return;
    atomic_store_explicit(&refresh_state.last_refresh_ns, now, memory_order_relaxed);
    rebuild();
    atomic_flag_clear_explicit(&refresh_state.refreshing, memory_order_release);
}

/* Bring the table up to date when the loader loaded or unloaded a module since the last look
 * (one dl_iterate_phdr step: its lock, one callback). After an unload the rule cache is
 * emptied: a module loaded at the same addresses must not get the old one's rules. */
static void module_sync(void) {
    uint64_t c[2] = {0, 0};
    unwind_iterate_modules(read_counts, c);
    if (c[0] == atomic_load_explicit(&refresh_state.seen_adds, memory_order_relaxed) &&
        c[1] == atomic_load_explicit(&refresh_state.seen_subs, memory_order_relaxed))
        return;
    if (atomic_flag_test_and_set_explicit(&refresh_state.refreshing, memory_order_acquire))
        return;
    bool unloaded = c[1] != atomic_load_explicit(&refresh_state.seen_subs, memory_order_relaxed);
    rebuild();
    if (unloaded)
        cache_flush();
    atomic_store_explicit(&refresh_state.seen_adds, c[0], memory_order_relaxed);
    atomic_store_explicit(&refresh_state.seen_subs, c[1], memory_order_relaxed);
    atomic_store_explicit(&refresh_state.last_refresh_ns, os_monotonic_ns(), memory_order_relaxed);
    atomic_flag_clear_explicit(&refresh_state.refreshing, memory_order_release);
}

/* ---- A module from /proc/self/maps: for a report in the SIGSEGV handler (no loader lock), when
 * a pc is in no module of the table (a library loaded since the last capture). */

static uintptr_t parse_hex(const char **p) {
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v << 4 | (uintptr_t)d;
    }
}

/* One line "start-end perms offset dev inode   path"; false when it is not one. */
static bool parse_maps_line(const char *l, uintptr_t *start, uintptr_t *end, uintptr_t *off,
                            bool *readable, const char **path) {
    *start = parse_hex(&l);
    if (*l++ != '-')
        return false;
    *end = parse_hex(&l);
    if (*l++ != ' ' || !l[0] || !l[1] || !l[2] || !l[3])
        return false;
    *readable = l[0] == 'r';
    l += 4;
    if (*l++ != ' ')
        return false;
    *off = parse_hex(&l);
    for (int field = 0; field < 2; field++) { /* dev, inode */
        while (*l == ' ')
            l++;
        while (*l && *l != ' ')
            l++;
    }
    while (*l == ' ')
        l++;
    *path = l;
    return true;
}

static const struct module *module_from_maps_locked(uintptr_t pc) {
    long fd = os_open_read("/proc/self/maps");
    if (fd < 0)
        return NULL;
    char path0[MODULE_PATH_MAX] = "";
    uintptr_t start0 = 0, end0 = 0;
    bool readable0 = false, found = false;
    size_t have = 0;
    for (;;) {
        long n = os_read((int)fd, modules_state.maps_buf + have, sizeof modules_state.maps_buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        modules_state.maps_buf[have] = 0;
        char *line = modules_state.maps_buf, *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = 0;
            uintptr_t start, end, off;
            bool readable;
            const char *path;
            if (parse_maps_line(line, &start, &end, &off, &readable, &path)) {
                if (path[0] == '/' && off == 0 && strlen(path) < sizeof path0) {
                    memcpy(path0, path, strlen(path) + 1);
                    start0 = start, end0 = end, readable0 = readable;
                }
                if (pc >= start && pc < end) {
                    found = path[0] == '/' && !strcmp(path, path0) && readable0;
                    goto done;
                }
            }
            line = nl + 1;
        }
        have = (size_t)(modules_state.maps_buf + have - line);
        memmove(modules_state.maps_buf, line, have);
        if (have == sizeof modules_state.maps_buf - 1)
            have = 0; /* a line longer than the buffer: dropped */
    }
done:
    os_close((int)fd);
    if (!found)
        return NULL;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)start0;
    if (end0 - start0 < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > end0 - start0)
        return NULL;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(start0 + eh->e_phoff);
    uintptr_t bias = 0;
    bool have_bias = false;
    for (int i = 0; i < eh->e_phnum && !have_bias; i++)
        if (ph[i].p_type == PT_LOAD) {
            bias = start0 - ((ph[i].p_vaddr - ph[i].p_offset) & ~(uintptr_t)(OS_PAGE - 1));
            have_bias = true;
        }
    if (!have_bias)
        return NULL;
    struct dl_phdr_info info = {.dlpi_addr = bias, .dlpi_name = path0, .dlpi_phdr = ph,
                                .dlpi_phnum = eh->e_phnum};
    int before = atomic_load_explicit(&modules_state.module_count, memory_order_relaxed);
    add_module(&info, sizeof info, NULL);
    int after = atomic_load_explicit(&modules_state.module_count, memory_order_relaxed);
    return after > before && pc - modules_state.modules[after - 1].lo <
                                 modules_state.modules[after - 1].hi - modules_state.modules[after - 1].lo
               ? &modules_state.modules[after - 1]
               : NULL;
}

const struct module *module_from_maps(uintptr_t pc) {
    if (atomic_flag_test_and_set_explicit(&refresh_state.refreshing, memory_order_acquire))
        return NULL;
    const struct module *m = module_from_maps_locked(pc);
    atomic_flag_clear_explicit(&refresh_state.refreshing, memory_order_release);
    return m;
}

/* ---- Encoded pointers (.eh_frame_hdr, .eh_frame) */

enum {
    PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03, PE_udata8 = 0x04,
    PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
    PE_pcrel = 0x10, PE_datarel = 0x30, PE_indirect = 0x80, PE_omit = 0xff,
};

static uint64_t uleb(const uint8_t **p) {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    return v;
}

static int64_t sleb(const uint8_t **p) {
    int64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        b = *(*p)++;
        if (shift < 64)
            v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

/* Read a pointer in encoding enc at *p. ok is cleared on an encoding we do not read. */
static uintptr_t read_enc(uint8_t enc, const uint8_t **p, uintptr_t datarel, bool *ok) {
    if (enc == PE_omit)
        return 0;
    const uint8_t *at = *p;
    uintptr_t v;
    switch (enc & 0x0f) {
    case PE_absptr: case PE_udata8: case PE_sdata8: memcpy(&v, at, 8); *p += 8; break;
    case PE_uleb128: v = (uintptr_t)uleb(p); break;
    case PE_sleb128: v = (uintptr_t)sleb(p); break;
    case PE_udata2: { uint16_t x; memcpy(&x, at, 2); v = x; *p += 2; break; }
    case PE_sdata2: { int16_t x; memcpy(&x, at, 2); v = (uintptr_t)(intptr_t)x; *p += 2; break; }
    case PE_udata4: { uint32_t x; memcpy(&x, at, 4); v = x; *p += 4; break; }
    case PE_sdata4: { int32_t x; memcpy(&x, at, 4); v = (uintptr_t)(intptr_t)x; *p += 4; break; }
    default: *ok = false; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case PE_pcrel: v += (uintptr_t)at; break;
    case PE_datarel: v += datarel; break;
    default: *ok = false; return 0;
    }
    if (enc & PE_indirect)
        *ok = false; /* only personality pointers use it: never needed here */
    return v;
}

/* ---- Rules */

enum rule_kind { RULE_NONE = 0, RULE_OK, RULE_END, RULE_SIGNAL, RULE_UNKNOWN };
enum { DW_FP = 6, DW_SP = 7, DW_RA = 16 };

struct rule {
    uint8_t kind, cfa_reg;
    int16_t fp_off; /* rbp saved at CFA + fp_off; 0: not saved here */
    int32_t cfa_off;
};

static uint64_t pack(struct rule r) {
    return (uint64_t)(uint32_t)r.cfa_off | (uint64_t)(uint16_t)r.fp_off << 32 |
           (uint64_t)r.cfa_reg << 48 | (uint64_t)r.kind << 56;
}

static struct rule unpack(uint64_t v) {
    return (struct rule){.cfa_off = (int32_t)(uint32_t)v, .fp_off = (int16_t)(uint16_t)(v >> 32),
                         .cfa_reg = (uint8_t)(v >> 48), .kind = (uint8_t)(v >> 56)};
}

/* The register rules the CFA program leaves; only rbp and the return address matter here. */
enum { RR_SAME = 0, RR_OFFSET, RR_UNDEF, RR_OTHER };

struct cfa_state {
    uint8_t cfa_reg;
    bool cfa_expr;
    int64_t cfa_off;
    uint8_t fp_rule, ra_rule;
    int64_t fp_off, ra_off;
};

struct cie {
    const uint8_t *insns, *end;
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool signal, has_z;
};

static bool parse_cie(const uint8_t *c, struct cie *out) {
    uint32_t len;
    memcpy(&len, c, 4);
    if (len == 0 || len == 0xffffffffu)
        return false;
    const uint8_t *end = c + 4 + len, *p = c + 8;
    uint8_t version = *p++;
    const char *aug = (const char *)p;
    p += strlen(aug) + 1;
    memset(out, 0, sizeof *out);
    out->fde_enc = PE_absptr;
    if (aug[0] == 'e' && aug[1] == 'h')
        p += 8;
    out->code_align = uleb(&p);
    out->data_align = sleb(&p);
    out->ra_reg = version == 1 ? *p++ : uleb(&p);
    const uint8_t *aug_end = NULL;
    for (const char *a = aug; *a; a++) {
        bool ok = true;
        switch (*a) {
        case 'z': {
            uint64_t n = uleb(&p);
            aug_end = p + n;
            out->has_z = true;
            break;
        }
        case 'R': out->fde_enc = *p++; break;
        case 'L': p++; break;
        case 'P': { uint8_t enc = *p++; read_enc(enc & 0x7f, &p, 0, &ok); break; }
        case 'S': out->signal = true; break;
        case 'e': case 'h': break;
        default:
            if (!aug_end)
                return false;
            goto done; /* an unknown augmentation: its data is skipped with 'z' */
        }
    }
done:
    if (aug_end)
        p = aug_end;
    out->insns = p;
    out->end = end;
    return p <= end;
}

static void apply_reg(struct cfa_state *s, uint64_t reg, uint8_t rule, int64_t off) {
    if (reg == DW_FP) {
        s->fp_rule = rule;
        s->fp_off = off;
    } else if (reg == DW_RA) {
        s->ra_rule = rule;
        s->ra_off = off;
    }
}

/* Run CFA instructions [p, end) from location loc until past target. */
static bool run_cfa(const uint8_t *p, const uint8_t *end, const struct cie *cie, uintptr_t loc,
                    uintptr_t target, struct cfa_state *s, const struct cfa_state *initial) {
    struct cfa_state stack[8];
    int sp = 0;
    while (p < end) {
        uint8_t op = *p++, low = op & 0x3f;
        uint64_t reg, delta;
        switch (op >> 6) {
        case 1:
            loc += low * cie->code_align;
            if (loc > target)
                return true;
            continue;
        case 2:
            apply_reg(s, low, RR_OFFSET, (int64_t)uleb(&p) * cie->data_align);
            continue;
        case 3:
            if (low == DW_FP)
                s->fp_rule = initial->fp_rule, s->fp_off = initial->fp_off;
            else if (low == DW_RA)
                s->ra_rule = initial->ra_rule, s->ra_off = initial->ra_off;
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: { bool ok = true; loc = read_enc(cie->fde_enc, &p, 0, &ok); if (!ok) return false; if (loc > target) return true; break; }
        case 0x02: delta = *p; p += 1; goto advance;
        case 0x03: { uint16_t d; memcpy(&d, p, 2); p += 2; delta = d; goto advance; }
        case 0x04: { uint32_t d; memcpy(&d, p, 4); p += 4; delta = d; goto advance; }
        case 0x05: reg = uleb(&p); apply_reg(s, reg, RR_OFFSET, (int64_t)uleb(&p) * cie->data_align); break;
        case 0x06: reg = uleb(&p);
            if (reg == DW_FP)
                s->fp_rule = initial->fp_rule, s->fp_off = initial->fp_off;
            else if (reg == DW_RA)
                s->ra_rule = initial->ra_rule, s->ra_off = initial->ra_off;
            break;
        case 0x07: apply_reg(s, uleb(&p), RR_UNDEF, 0); break;
        case 0x08: apply_reg(s, uleb(&p), RR_SAME, 0); break;
        case 0x09: reg = uleb(&p); uleb(&p); apply_reg(s, reg, RR_OTHER, 0); break;
        case 0x0a: if (sp == 8) return false; stack[sp++] = *s; break;
        case 0x0b: if (!sp) return false; *s = stack[--sp]; break;
        case 0x0c: s->cfa_reg = (uint8_t)uleb(&p); s->cfa_off = (int64_t)uleb(&p); s->cfa_expr = false; break;
        case 0x0d: s->cfa_reg = (uint8_t)uleb(&p); s->cfa_expr = false; break;
        case 0x0e: s->cfa_off = (int64_t)uleb(&p); break;
        case 0x0f: p += uleb(&p); s->cfa_expr = true; break;
        case 0x10: reg = uleb(&p); p += uleb(&p); apply_reg(s, reg, RR_OTHER, 0); break;
        case 0x11: reg = uleb(&p); apply_reg(s, reg, RR_OFFSET, sleb(&p) * cie->data_align); break;
        case 0x12: s->cfa_reg = (uint8_t)uleb(&p); s->cfa_off = sleb(&p) * cie->data_align; s->cfa_expr = false; break;
        case 0x13: s->cfa_off = sleb(&p) * cie->data_align; break;
        case 0x14: reg = uleb(&p); uleb(&p); apply_reg(s, reg, RR_OTHER, 0); break;
        case 0x15: reg = uleb(&p); sleb(&p); apply_reg(s, reg, RR_OTHER, 0); break;
        case 0x16: reg = uleb(&p); p += uleb(&p); apply_reg(s, reg, RR_OTHER, 0); break;
        case 0x2e: uleb(&p); break; /* GNU_args_size */
        case 0x2f: reg = uleb(&p); apply_reg(s, reg, RR_OFFSET, -(int64_t)uleb(&p) * cie->data_align); break;
        default: return false;
        }
        continue;
    advance:
        loc += delta * cie->code_align;
        if (loc > target)
            return true;
    }
    return true;
}

/* The .eh_frame FDE that covers pc, through the binary-search table of .eh_frame_hdr. */
static const uint8_t *find_fde(const uint8_t *hdr, uintptr_t pc) {
    if (!hdr || hdr[0] != 1 || hdr[3] != 0x3b /* datarel | sdata4 */)
        return NULL;
    const uint8_t *p = hdr + 4;
    bool ok = true;
    read_enc(hdr[1], &p, (uintptr_t)hdr, &ok);
    uintptr_t count = read_enc(hdr[2], &p, (uintptr_t)hdr, &ok);
    if (!ok || !count)
        return NULL;
    const int32_t *table = (const int32_t *)p;
    intptr_t rel = (intptr_t)(pc - (uintptr_t)hdr);
    size_t lo = 0, hi = count;
    if (rel < table[0])
        return NULL;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (table[2 * mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    return hdr + table[2 * lo + 1];
}

/* Work out the rule for pc from the module's tables. */
static struct rule compute_rule(const struct module *m, uintptr_t pc) {
    struct rule none = {.kind = RULE_NONE};
    const uint8_t *fde = find_fde(m->eh_hdr, pc);
    if (!fde)
        return none;
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    memcpy(&cie_off, fde + 4, 4);
    if (!len || len == 0xffffffffu || !cie_off)
        return none;
    struct cie cie;
    if (!parse_cie(fde + 4 - cie_off, &cie))
        return none;
    const uint8_t *p = fde + 8, *end = fde + 4 + len;
    bool ok = true;
    uintptr_t begin = read_enc(cie.fde_enc, &p, 0, &ok);
    uintptr_t range = read_enc(cie.fde_enc & 0x0f, &p, 0, &ok);
    if (!ok || pc < begin || pc - begin >= range)
        return none;
    if (cie.has_z)
        p += uleb(&p);
    struct cfa_state s = {.cfa_reg = DW_SP, .cfa_off = 8, .ra_rule = RR_OFFSET, .ra_off = -8};
    if (!run_cfa(cie.insns, cie.end, &cie, begin, UINTPTR_MAX, &s, &s))
        return (struct rule){.kind = RULE_UNKNOWN};
    struct cfa_state initial = s;
    if (!run_cfa(p, end, &cie, begin, pc, &s, &initial))
        return (struct rule){.kind = RULE_UNKNOWN};
    if (cie.signal)
        return (struct rule){.kind = RULE_SIGNAL};
    if (s.ra_rule == RR_UNDEF)
        return (struct rule){.kind = RULE_END};
    if (s.cfa_expr || (s.cfa_reg != DW_SP && s.cfa_reg != DW_FP) || s.ra_rule != RR_OFFSET ||
        s.ra_off != -8 || (s.fp_rule != RR_SAME && s.fp_rule != RR_OFFSET) ||
        s.cfa_off < 0 || s.cfa_off > INT32_MAX || s.fp_off < INT16_MIN || s.fp_off > INT16_MAX ||
        (s.fp_rule == RR_OFFSET && !s.fp_off))
        return (struct rule){.kind = RULE_UNKNOWN};
    return (struct rule){.kind = RULE_OK, .cfa_reg = s.cfa_reg, .cfa_off = (int32_t)s.cfa_off,
                         .fp_off = s.fp_rule == RR_OFFSET ? (int16_t)s.fp_off : 0};
}

/* ---- The rule cache: pc -> packed rule, each entry checked by a hash of both words. */

#define CACHE_SIZE 4096

struct cache_entry {
    _Atomic uint64_t pc, rule, check;
};
/* The rule cache's state. */
static struct {
    /* pc -> rule: entries written by any thread, lock-free (the check word tells a torn
     * entry); emptied by cache_flush */
    struct cache_entry cache[CACHE_SIZE];
} rule_cache_state;

/* The check word: a mixed pc against the rule, so that a reader that sees the words of two
 * racing writers (pc of one, rule of the other) finds a mismatch. */
static inline uint64_t mix(uint64_t pc, uint64_t rule) {
    return ((pc * 0x9e3779b97f4a7c15ULL) ^ rule) | 1;
}

static inline struct cache_entry *cache_slot(uintptr_t pc) {
    return &rule_cache_state.cache[(pc ^ (pc >> 12)) & (CACHE_SIZE - 1)];
}

/* The cache missed: find the module, run its CFA program, remember the rule. */
__attribute__((noinline)) static struct rule rule_slow(uintptr_t pc, bool may_refresh) {
    if (may_refresh)
        module_sync();
    const struct module *m = module_of(pc);
    if (!m && !may_refresh)
        m = module_from_maps(pc);
    if (!m) /* not cached: a module loaded later may cover it */
        return (struct rule){.kind = RULE_NONE};
    struct rule rule = compute_rule(m, pc);
    uint64_t packed = pack(rule);
    struct cache_entry *e = cache_slot(pc);
    atomic_store_explicit(&e->pc, pc, memory_order_relaxed);
    atomic_store_explicit(&e->rule, packed, memory_order_relaxed);
    atomic_store_explicit(&e->check, mix(pc, packed), memory_order_relaxed);
    return rule;
}

static void cache_flush(void) {
    for (size_t i = 0; i < CACHE_SIZE; i++)
        /* (0: never a valid check) */
        atomic_store_explicit(&rule_cache_state.cache[i].check, 0, memory_order_relaxed);
}

void unwind_after_fork(void) {
    atomic_flag_clear(&refresh_state.refreshing); /* a thread that held it does not exist in the child */
}

static inline struct rule rule_for(uintptr_t pc, bool may_refresh) {
    struct cache_entry *e = cache_slot(pc);
    uint64_t k = atomic_load_explicit(&e->pc, memory_order_relaxed);
    uint64_t r = atomic_load_explicit(&e->rule, memory_order_relaxed);
    uint64_t c = atomic_load_explicit(&e->check, memory_order_relaxed);
    if (__builtin_expect(k == pc && c == mix(k, r), 1))
        return unpack(r);
    return rule_slow(pc, may_refresh);
}

static bool in_stack(uintptr_t a, uintptr_t lo, uintptr_t hi) {
    return a >= lo && a <= hi - 8 && !(a & 7);
}

/* The signal frame: out of line (rare), so that the common step keeps a small frame. */
__attribute__((noinline)) static bool signal_step(struct unwind_regs *regs, uintptr_t lo, uintptr_t hi) {
    /* __restore_rt: the handler returned into the kernel's signal frame, whose ucontext sits
     * at sp; the next frame is the interrupted instruction itself. */
    const ucontext_t *uc = (const ucontext_t *)regs->sp;
    if (!in_stack(regs->sp, lo, hi) || !in_stack((uintptr_t)(uc + 1) - 8, lo, hi))
        return false;
    regs->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    regs->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    regs->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    regs->exact = true;
    return regs->pc >= 4096 && regs->sp >= lo && regs->sp < hi;
}

static inline __attribute__((always_inline)) bool step(struct unwind_regs *regs, uintptr_t lo, uintptr_t hi, bool may_refresh) {
    bool exact = regs->exact;
    regs->exact = false;
    /* A return address is one past the call: the call itself may be the function's last
     * instruction (noreturn callee), so the rule is looked up for the byte before. */
    struct rule r = rule_for(exact ? regs->pc : regs->pc - 1, may_refresh);
    uintptr_t sp = regs->sp, fp = regs->fp;
    if (__builtin_expect(r.kind == RULE_OK && r.cfa_reg == DW_FP && r.cfa_off == 16 &&
                         r.fp_off == -16, 1)) {
        /* A frame-pointer frame (most of a -fno-omit-frame-pointer program): the same step
         * as the frame-pointer walk. A branch, not arithmetic on the rule, so the processor
         * runs ahead on the chain of saved rbp while the rule's load confirms it. */
        if (fp < sp || !in_stack(fp, lo, hi - 8))
            return false;
        const uintptr_t *frame = (const uintptr_t *)fp;
        regs->pc = frame[1];
        regs->sp = fp + 16;
        regs->fp = frame[0];
        return regs->pc >= 4096;
    }
    if (r.kind == RULE_OK) {
        uintptr_t cfa = (r.cfa_reg == DW_SP ? sp : fp) + (uintptr_t)(intptr_t)r.cfa_off;
        if (cfa <= sp || !in_stack(cfa - 8, lo, hi))
            return false;
        uintptr_t ra = *(const uintptr_t *)(cfa - 8);
        if (r.fp_off) {
            uintptr_t at = cfa + (uintptr_t)(intptr_t)r.fp_off;
            if (!in_stack(at, lo, hi))
                return false;
            fp = *(const uintptr_t *)at;
        }
        regs->pc = ra;
        regs->sp = cfa;
        regs->fp = fp;
        return ra >= 4096;
    }
    if (r.kind == RULE_END)
        return false;
    if (r.kind == RULE_SIGNAL)
        return signal_step(regs, lo, hi);
    /* No table for this pc (JIT code) or a rule we do not run: the frame pointer. */
    if (fp < sp || !in_stack(fp, lo, hi - 8))
        return false;
    regs->pc = ((const uintptr_t *)fp)[1];
    regs->sp = fp + 16;
    regs->fp = ((const uintptr_t *)fp)[0];
    return regs->pc >= 4096;
}

bool unwind_step(struct unwind_regs *regs, uintptr_t lo, uintptr_t hi, bool may_refresh) {
    return step(regs, lo, hi, may_refresh);
}

int unwind_walk(struct unwind_regs *regs, uintptr_t lo, uintptr_t hi, bool may_refresh,
                uintptr_t skip_lo, uintptr_t skip_hi, uintptr_t *out, int n, int max) {
    struct unwind_regs r = *regs; /* in registers while walking */
    for (int steps = 0; n < max && steps < max + 64; steps++) {
        if (r.pc - skip_lo >= skip_hi - skip_lo)
            out[n++] = r.pc;
        if (n == max || !step(&r, lo, hi, may_refresh))
            break;
    }
    *regs = r;
    return n;
}
