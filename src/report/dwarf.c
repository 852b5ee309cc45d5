/* dwarf: see dwarf.h. */
#define _GNU_SOURCE
#include "report/dwarf.h"
#include "os/os.h"

#include <elf.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* ---- A bounds-checked reader: any read past the end sets bad and returns 0. */

struct rd {
    const uint8_t *p, *end;
    bool bad;
};

static struct rd rd_make(const void *p, size_t n) {
    return (struct rd){(const uint8_t *)p, (const uint8_t *)p + n, false};
}

static bool rd_need(struct rd *r, size_t n) {
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        r->p = r->end;
        return false;
    }
    return true;
}

static uint64_t rd_uint(struct rd *r, int n) {
    if (!rd_need(r, (size_t)n))
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

static uint64_t rd_uleb(struct rd *r) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (!rd_need(r, 1))
            return 0;
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

static int64_t rd_sleb(struct rd *r) {
    int64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
        if (!rd_need(r, 1))
            return 0;
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

static const char *rd_cstr(struct rd *r) {
    const uint8_t *s = r->p;
    while (r->p < r->end && *r->p)
        r->p++;
    if (r->p >= r->end) {
        r->bad = true;
        return NULL;
    }
    r->p++;
    return (const char *)s;
}

static void rd_skip(struct rd *r, uint64_t n) {
    if (rd_need(r, n))
        r->p += n;
}

/* ---- Compressed sections (SHF_COMPRESSED, ELFCOMPRESS_ZLIB): a small inflater (RFC 1950/1951)
 * writing into a buffer the caller mapped; no allocation, tables on the stack. */

struct bits {
    const uint8_t *p, *end;
    uint32_t buf;
    int n;
    bool bad;
};

static int getbits(struct bits *b, int need) {
    while (b->n < need) {
        if (b->p >= b->end) {
            b->bad = true;
            return 0;
        }
        b->buf |= (uint32_t)*b->p++ << b->n;
        b->n += 8;
    }
    int v = (int)(b->buf & ((1u << need) - 1));
    b->buf >>= need;
    b->n -= need;
    return v;
}

struct huff {
    uint16_t count[16];  /* codes of each length */
    uint16_t symbol[320]; /* symbols ordered by code */
};

/* Canonical Huffman table from code lengths; false when over-subscribed. */
static bool huff_build(struct huff *h, const uint8_t *len, int n) {
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (int i = 0; i < n; i++)
        h->count[len[i]]++;
    h->count[0] = 0;
    int left = 1;
    for (int l = 1; l < 16; l++) {
        left <<= 1;
        left -= h->count[l];
        if (left < 0)
            return false;
    }
    offs[1] = 0;
    for (int l = 1; l < 15; l++)
        offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (int i = 0; i < n; i++)
        if (len[i])
            h->symbol[offs[len[i]]++] = (uint16_t)i;
    return true;
}

static int huff_decode(struct bits *b, const struct huff *h) {
    int code = 0, first = 0, index = 0;
    for (int l = 1; l < 16; l++) {
        code |= getbits(b, 1);
        int count = h->count[l];
        if (code - first < count)
            return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
        if (b->bad)
            return -1;
    }
    return -1;
}

static const uint16_t len_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                      35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                      3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
                                       193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
                                       6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                       7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

static bool inflate_codes(struct bits *b, const struct huff *lit, const struct huff *dist,
                          uint8_t *out, size_t cap, size_t *pos) {
    for (;;) {
        int sym = huff_decode(b, lit);
        if (sym < 0)
            return false;
        if (sym < 256) {
            if (*pos >= cap)
                return false;
            out[(*pos)++] = (uint8_t)sym;
        } else if (sym == 256) {
            return true;
        } else {
            sym -= 257;
            if (sym >= 29)
                return false;
            size_t len = len_base[sym] + (size_t)getbits(b, len_extra[sym]);
            int ds = huff_decode(b, dist);
            if (ds < 0 || ds >= 30)
                return false;
            size_t d = dist_base[ds] + (size_t)getbits(b, dist_extra[ds]);
            if (b->bad || d > *pos || len > cap - *pos)
                return false;
            for (size_t i = 0; i < len; i++, (*pos)++)
                out[*pos] = out[*pos - d];
        }
    }
}

/* Inflate the zlib stream [in, in + n) into out[0..cap); true when exactly cap bytes came out. */
static bool zlib_inflate(const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
    if (n < 2 || (in[0] & 0x0f) != 8 || ((in[0] << 8) | in[1]) % 31 != 0 || (in[1] & 0x20))
        return false;
    struct bits b = {in + 2, in + n, 0, 0, false};
    size_t pos = 0;
    struct huff lit, dist;
    uint8_t lens[320];
    int last;
    do {
        last = getbits(&b, 1);
        int type = getbits(&b, 2);
        if (b.bad)
            return false;
        if (type == 0) { /* stored */
            b.buf = 0;
            b.n = 0;
            if (b.end - b.p < 4)
                return false;
            size_t len = (size_t)b.p[0] | (size_t)b.p[1] << 8;
            b.p += 4;
            if ((size_t)(b.end - b.p) < len || len > cap - pos)
                return false;
            memcpy(out + pos, b.p, len);
            pos += len;
            b.p += len;
            continue;
        }
        if (type == 1) { /* fixed codes */
            int i = 0;
            for (; i < 144; i++) lens[i] = 8;
            for (; i < 256; i++) lens[i] = 9;
            for (; i < 280; i++) lens[i] = 7;
            for (; i < 288; i++) lens[i] = 8;
            huff_build(&lit, lens, 288);
            for (i = 0; i < 30; i++) lens[i] = 5;
            huff_build(&dist, lens, 30);
        } else if (type == 2) { /* dynamic codes */
            static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
            int nlen = getbits(&b, 5) + 257, ndist = getbits(&b, 5) + 1, ncode = getbits(&b, 4) + 4;
            if (b.bad || nlen > 286 || ndist > 30)
                return false;
            uint8_t cl[19] = {0};
            for (int i = 0; i < ncode; i++)
                cl[order[i]] = (uint8_t)getbits(&b, 3);
            struct huff lencode;
            if (!huff_build(&lencode, cl, 19))
                return false;
            int i = 0;
            while (i < nlen + ndist) {
                int sym = huff_decode(&b, &lencode);
                if (sym < 0)
                    return false;
                if (sym < 16) {
                    lens[i++] = (uint8_t)sym;
                    continue;
                }
                int rep, val = 0;
                if (sym == 16) {
                    if (!i)
                        return false;
                    val = lens[i - 1];
                    rep = 3 + getbits(&b, 2);
                } else if (sym == 17) {
                    rep = 3 + getbits(&b, 3);
                } else {
                    rep = 11 + getbits(&b, 7);
                }
                if (i + rep > nlen + ndist)
                    return false;
                while (rep--)
                    lens[i++] = (uint8_t)val;
            }
            if (!huff_build(&lit, lens, nlen) || !huff_build(&dist, lens + nlen, ndist))
                return false;
        } else {
            return false;
        }
        if (!inflate_codes(&b, &lit, &dist, out, cap, &pos))
            return false;
    } while (!last);
    return pos == cap;
}

/* ---- Sections */

struct sect {
    const uint8_t *p;
    size_t n;
};

struct dw {
    struct sect info, abbrev, line, str, line_str, aranges, ranges, rnglists;
};

#define ABBREV_INDEX 2048

/* The resolver's state: all of it under `busy`, a try-lock (dwarf_resolve gives up rather
 * than wait: it runs in reports and signal handlers). The abbreviation index's 8 KiB are in
 * abbrev_index_state, apart: an object with any non-zero initialiser goes whole into .data
 * (the file), a zero one stays in .bss. */
static struct {
    /* code -> offset of its declaration in the unit abbrev_for names (static scratch) */
    uint32_t abbrev_at[ABBREV_INDEX];
} abbrev_index_state;
static struct {
    /* The sections inflated last (a debug file's, by its build id): kept mapped until
     * another file's are needed, so each frame of a report does not inflate them again. */
    struct {
        char id[128];
        struct dw d;  /* only the inflated sections are set */
        void *map;
        size_t map_len;
    } inflated;
    /* The unit's abbreviation offset abbrev_index_state was built for (UINT64_MAX: none). */
    uint64_t abbrev_for;
    atomic_flag busy; /* taken with test-and-set by dwarf_resolve; cleared in a fork child */
} dwarf_state = {.abbrev_for = UINT64_MAX, .busy = ATOMIC_FLAG_INIT};

static bool find_sections(const char *img, size_t len, struct dw *d) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    memset(d, 0, sizeof *d);
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff > len || (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff ||
        eh->e_shstrndx >= eh->e_shnum)
        return false;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    const Elf64_Shdr *names = &sh[eh->e_shstrndx];
    if (names->sh_offset > len || names->sh_size > len - names->sh_offset)
        return false;
    static const struct {
        const char *name;
        size_t off;
    } want[] = {
        {".debug_info", offsetof(struct dw, info)},         {".debug_abbrev", offsetof(struct dw, abbrev)},
        {".debug_line", offsetof(struct dw, line)},         {".debug_str", offsetof(struct dw, str)},
        {".debug_line_str", offsetof(struct dw, line_str)}, {".debug_aranges", offsetof(struct dw, aranges)},
        {".debug_ranges", offsetof(struct dw, ranges)},     {".debug_rnglists", offsetof(struct dw, rnglists)},
    };
    struct dw packed; /* compressed sections: their Elf64_Chdr and stream */
    memset(&packed, 0, sizeof packed);
    size_t inflated_total = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_PROGBITS || sh[i].sh_name >= names->sh_size ||
            sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset)
            continue;
        const char *nm = img + names->sh_offset + sh[i].sh_name;
        size_t room = names->sh_size - sh[i].sh_name;
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            size_t wl = strlen(want[k].name);
            if (room > wl && memcmp(nm, want[k].name, wl + 1) == 0) {
                bool z = (sh[i].sh_flags & SHF_COMPRESSED) != 0;
                struct sect *s = (struct sect *)((char *)(z ? &packed : d) + want[k].off);
                s->p = (const uint8_t *)img + sh[i].sh_offset;
                s->n = sh[i].sh_size;
                if (z) {
                    const Elf64_Chdr *ch = (const Elf64_Chdr *)s->p;
                    if (s->n < sizeof *ch || ch->ch_type != ELFCOMPRESS_ZLIB || ch->ch_size > (1UL << 32))
                        s->p = NULL, s->n = 0;
                    else
                        inflated_total += (ch->ch_size + 15) & ~(size_t)15;
                }
            }
        }
    }
    if (inflated_total) {
        char id[128];
        if (!dwarf_build_id(img, len, id, sizeof id))
            return d->info.n && d->abbrev.n && d->line.n;
        if (strcmp(id, dwarf_state.inflated.id) != 0) {
            if (dwarf_state.inflated.map)
                os_unmap(dwarf_state.inflated.map, dwarf_state.inflated.map_len);
            memset(&dwarf_state.inflated, 0, sizeof dwarf_state.inflated);
            int err;
            uint8_t *out = os_alloc_meta(inflated_total, &err);
            if (!out)
                return d->info.n && d->abbrev.n && d->line.n;
            dwarf_state.inflated.map = out;
            dwarf_state.inflated.map_len = inflated_total;
            memcpy(dwarf_state.inflated.id, id, sizeof id);
            for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
                const struct sect *z = (const struct sect *)((const char *)&packed + want[k].off);
                if (!z->n)
                    continue;
                const Elf64_Chdr *ch = (const Elf64_Chdr *)z->p;
                struct sect *s = (struct sect *)((char *)&dwarf_state.inflated.d + want[k].off);
                if (zlib_inflate(z->p + sizeof *ch, z->n - sizeof *ch, out, ch->ch_size)) {
                    s->p = out;
                    s->n = ch->ch_size;
                }
                out += (ch->ch_size + 15) & ~(size_t)15;
            }
        }
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            const struct sect *z = (const struct sect *)((const char *)&dwarf_state.inflated.d + want[k].off);
            struct sect *s = (struct sect *)((char *)d + want[k].off);
            if (z->n && !s->n)
                *s = *z;
        }
    }
    return d->info.n && d->abbrev.n && d->line.n;
}

static const char *sect_str(const struct sect *s, uint64_t off) {
    if (off >= s->n || !memchr(s->p + off, 0, s->n - off))
        return NULL;
    return (const char *)s->p + off;
}

/* ---- Forms */

enum {
    F_addr = 0x01, F_block2 = 0x03, F_block4 = 0x04, F_data2 = 0x05, F_data4 = 0x06,
    F_data8 = 0x07, F_string = 0x08, F_block = 0x09, F_block1 = 0x0a, F_data1 = 0x0b,
    F_flag = 0x0c, F_sdata = 0x0d, F_strp = 0x0e, F_udata = 0x0f, F_ref_addr = 0x10,
    F_ref1 = 0x11, F_ref2 = 0x12, F_ref4 = 0x13, F_ref8 = 0x14, F_ref_udata = 0x15,
    F_indirect = 0x16, F_sec_offset = 0x17, F_exprloc = 0x18, F_flag_present = 0x19,
    F_strx = 0x1a, F_addrx = 0x1b, F_ref_sup4 = 0x1c, F_strp_sup = 0x1d, F_data16 = 0x1e,
    F_line_strp = 0x1f, F_ref_sig8 = 0x20, F_implicit_const = 0x21, F_loclistx = 0x22,
    F_rnglistx = 0x23, F_ref_sup8 = 0x24, F_strx1 = 0x25, F_strx2 = 0x26, F_strx3 = 0x27,
    F_strx4 = 0x28, F_addrx1 = 0x29, F_addrx2 = 0x2a, F_addrx3 = 0x2b, F_addrx4 = 0x2c,
    F_GNU_ref_alt = 0x1f20, F_GNU_strp_alt = 0x1f21,
};

enum { V_NONE, V_UINT, V_STR, V_REF_CU, V_REF_SEC };

struct val {
    int kind;
    uint64_t u;
    const char *s;
};

/* Read one attribute value of `form`; strings are resolved, references tagged. */
static struct val read_form(struct rd *r, const struct dw *d, uint64_t form, int64_t implicit,
                            int version, int addr_size) {
    struct val v = {V_UINT, 0, NULL};
    switch (form) {
    case F_addr: v.u = rd_uint(r, addr_size); break;
    case F_data1: case F_flag: case F_strx1: case F_addrx1: v.u = rd_uint(r, 1); break;
    case F_data2: case F_strx2: case F_addrx2: v.u = rd_uint(r, 2); break;
    case F_strx3: case F_addrx3: v.u = rd_uint(r, 3); break;
    case F_data4: case F_strx4: case F_addrx4: case F_ref_sup4: v.u = rd_uint(r, 4); break;
    case F_data8: case F_ref_sig8: case F_ref_sup8: v.u = rd_uint(r, 8); break;
    case F_data16: rd_skip(r, 16); v.kind = V_NONE; break;
    case F_sdata: v.u = (uint64_t)rd_sleb(r); break;
    case F_udata: case F_strx: case F_addrx: case F_loclistx: case F_rnglistx: v.u = rd_uleb(r); break;
    case F_sec_offset: case F_GNU_strp_alt: case F_strp_sup: v.u = rd_uint(r, 4); break;
    case F_flag_present: v.u = 1; break;
    case F_implicit_const: v.u = (uint64_t)implicit; break;
    case F_string: v.kind = V_STR; v.s = rd_cstr(r); break;
    case F_strp: v.kind = V_STR; v.s = sect_str(&d->str, rd_uint(r, 4)); break;
    case F_line_strp: v.kind = V_STR; v.s = sect_str(&d->line_str, rd_uint(r, 4)); break;
    case F_ref1: v.kind = V_REF_CU; v.u = rd_uint(r, 1); break;
    case F_ref2: v.kind = V_REF_CU; v.u = rd_uint(r, 2); break;
    case F_ref4: v.kind = V_REF_CU; v.u = rd_uint(r, 4); break;
    case F_ref8: v.kind = V_REF_CU; v.u = rd_uint(r, 8); break;
    case F_ref_udata: v.kind = V_REF_CU; v.u = rd_uleb(r); break;
    case F_ref_addr: v.kind = V_REF_SEC; v.u = rd_uint(r, version <= 2 ? addr_size : 4); break;
    case F_GNU_ref_alt: v.kind = V_NONE; rd_skip(r, 4); break;
    case F_block1: v.kind = V_NONE; rd_skip(r, rd_uint(r, 1)); break;
    case F_block2: v.kind = V_NONE; rd_skip(r, rd_uint(r, 2)); break;
    case F_block4: v.kind = V_NONE; rd_skip(r, rd_uint(r, 4)); break;
    case F_block: case F_exprloc: v.kind = V_NONE; rd_skip(r, rd_uleb(r)); break;
    case F_indirect: {
        uint64_t f = rd_uleb(r);
        if (f == F_indirect) {
            r->bad = true;
            break;
        }
        return read_form(r, d, f, 0, version, addr_size);
    }
    default: r->bad = true; v.kind = V_NONE; break;
    }
    if (v.kind == V_STR && !v.s)
        v.kind = V_NONE;
    return v;
}

/* ---- Units and abbreviations */

struct unit {
    uint64_t off;      /* of the unit header in .debug_info */
    uint64_t end;      /* one past the unit */
    uint64_t die_off;  /* of its first DIE */
    uint64_t abbrev_off;
    int version, addr_size;
};

static bool read_unit(const struct dw *d, uint64_t off, struct unit *u) {
    struct rd r = rd_make(d->info.p, d->info.n);
    if (off >= d->info.n)
        return false;
    r.p += off;
    uint64_t len = rd_uint(&r, 4);
    if (r.bad || len >= 0xfffffff0u || len > (uint64_t)(r.end - r.p))
        return false; /* 64-bit DWARF is not read */
    u->off = off;
    u->end = off + 4 + len;
    u->version = (int)rd_uint(&r, 2);
    if (u->version >= 5) {
        uint8_t type = (uint8_t)rd_uint(&r, 1);
        u->addr_size = (int)rd_uint(&r, 1);
        u->abbrev_off = rd_uint(&r, 4);
        if (type == 2 /* type */ || type == 6 /* split type */)
            rd_skip(&r, 8 + 4);
        else if (type == 4 || type == 5) /* skeleton, split compile */
            rd_skip(&r, 8);
    } else {
        u->abbrev_off = rd_uint(&r, 4);
        u->addr_size = (int)rd_uint(&r, 1);
    }
    u->die_off = (uint64_t)(r.p - d->info.p);
    return !r.bad && u->version >= 2 && u->version <= 5 && u->addr_size == 8 &&
           u->abbrev_off < d->abbrev.n;
}

/* The abbreviation index (abbrev_index_state): static scratch, guarded by the caller's
 * try-lock (dwarf_resolve). */

static void skip_abbrev_specs(struct rd *r) {
    for (;;) {
        uint64_t name = rd_uleb(r), form = rd_uleb(r);
        if (form == F_implicit_const)
            rd_sleb(r);
        if (r->bad || (!name && !form))
            return;
    }
}

static void index_abbrevs(const struct dw *d, uint64_t off) {
    if (dwarf_state.abbrev_for == off)
        return;
    memset(abbrev_index_state.abbrev_at, 0, sizeof abbrev_index_state.abbrev_at);
    struct rd r = rd_make(d->abbrev.p + off, d->abbrev.n - off);
    for (;;) {
        uint64_t at = (uint64_t)(r.p - d->abbrev.p);
        uint64_t code = rd_uleb(&r);
        if (r.bad || !code)
            break;
        if (code < ABBREV_INDEX)
            abbrev_index_state.abbrev_at[code] = (uint32_t)at + 1; /* 0: no such code */
        rd_uleb(&r); /* tag */
        rd_skip(&r, 1);
        skip_abbrev_specs(&r);
    }
    dwarf_state.abbrev_for = off;
}

/* A reader at the declaration of `code` in the abbreviation table at abbrev_off (after its code). */
static bool find_abbrev(const struct dw *d, uint64_t abbrev_off, uint64_t code, struct rd *out) {
    struct rd r = rd_make(d->abbrev.p, d->abbrev.n);
    if (dwarf_state.abbrev_for == abbrev_off && code < ABBREV_INDEX) {
        if (!abbrev_index_state.abbrev_at[code])
            return false;
        r.p += abbrev_index_state.abbrev_at[code] - 1;
        rd_uleb(&r);
        *out = r;
        return !r.bad;
    }
    r.p += abbrev_off;
    for (;;) { /* another unit's table (a cross-unit reference): a linear search */
        uint64_t c = rd_uleb(&r);
        if (r.bad || !c)
            return false;
        if (c == code) {
            *out = r;
            return true;
        }
        rd_uleb(&r);
        rd_skip(&r, 1);
        skip_abbrev_specs(&r);
    }
}

/* ---- DIEs */

enum {
    TAG_compile_unit = 0x11, TAG_subprogram = 0x2e, TAG_inlined_subroutine = 0x1d,
    TAG_partial_unit = 0x3c, TAG_skeleton_unit = 0x4a,
    AT_name = 0x03, AT_stmt_list = 0x10, AT_low_pc = 0x11, AT_high_pc = 0x12,
    AT_comp_dir = 0x1b, AT_abstract_origin = 0x31, AT_specification = 0x47, AT_ranges = 0x55,
    AT_call_file = 0x58, AT_call_line = 0x59, AT_linkage_name = 0x6e, AT_rnglists_base = 0x74,
    AT_MIPS_linkage_name = 0x2007,
};

struct die {
    uint64_t off; /* section offset */
    uint64_t tag;
    bool children;
    const char *name, *linkage_name;
    uint64_t low_pc, high_pc, ranges, stmt_list, call_file, call_line, rnglists_base;
    bool has_low, has_high, high_is_len, has_ranges, ranges_is_index, has_stmt;
    int origin_kind; /* V_REF_CU / V_REF_SEC of abstract_origin or specification */
    uint64_t origin;
    const char *comp_dir;
};

/* Parse the DIE at r (a unit's DIE area); r moves past it. code 0 (end of siblings): tag 0. */
static bool read_die(const struct dw *d, const struct unit *u, struct rd *r, struct die *e) {
    memset(e, 0, sizeof *e);
    e->off = (uint64_t)(r->p - d->info.p);
    uint64_t code = rd_uleb(r);
    if (r->bad)
        return false;
    if (!code)
        return true;
    struct rd a;
    if (!find_abbrev(d, u->abbrev_off, code, &a))
        return false;
    e->tag = rd_uleb(&a);
    e->children = rd_uint(&a, 1) != 0;
    for (;;) {
        uint64_t name = rd_uleb(&a), form = rd_uleb(&a);
        int64_t implicit = form == F_implicit_const ? rd_sleb(&a) : 0;
        if (a.bad)
            return false;
        if (!name && !form)
            break;
        struct val v = read_form(r, d, form, implicit, u->version, u->addr_size);
        if (r->bad)
            return false;
        switch (name) {
        case AT_name: if (v.kind == V_STR) e->name = v.s; break;
        case AT_linkage_name: case AT_MIPS_linkage_name:
            if (v.kind == V_STR) e->linkage_name = v.s;
            break;
        case AT_comp_dir: if (v.kind == V_STR) e->comp_dir = v.s; break;
        case AT_low_pc: if (form == F_addr) { e->low_pc = v.u; e->has_low = true; } break;
        case AT_high_pc:
            e->high_pc = v.u;
            e->has_high = v.kind == V_UINT && form != F_addrx && form != F_addrx1 &&
                          form != F_addrx2 && form != F_addrx3 && form != F_addrx4;
            e->high_is_len = form != F_addr;
            break;
        case AT_ranges:
            e->ranges = v.u;
            e->has_ranges = true;
            e->ranges_is_index = form == F_rnglistx;
            break;
        case AT_rnglists_base: e->rnglists_base = v.u; break;
        case AT_stmt_list: e->stmt_list = v.u; e->has_stmt = true; break;
        case AT_call_file: e->call_file = v.u; break;
        case AT_call_line: e->call_line = v.u; break;
        case AT_abstract_origin: case AT_specification:
            if (v.kind == V_REF_CU || v.kind == V_REF_SEC) {
                e->origin_kind = v.kind;
                e->origin = v.kind == V_REF_CU ? u->off + v.u : v.u;
            }
            break;
        }
    }
    return true;
}

/* Does the address range list at `off` contain pc? */
static bool ranges_contain(const struct dw *d, const struct unit *u, const struct die *e,
                           uint64_t base, uint64_t rnglists_base, uint64_t pc) {
    if (u->version >= 5) {
        uint64_t off = e->ranges;
        if (e->ranges_is_index) {
            struct rd t = rd_make(d->rnglists.p, d->rnglists.n);
            if (rnglists_base + 4 * e->ranges + 4 > d->rnglists.n)
                return false;
            t.p += rnglists_base + 4 * e->ranges;
            off = rnglists_base + rd_uint(&t, 4);
        }
        if (off >= d->rnglists.n)
            return false;
        struct rd r = rd_make(d->rnglists.p + off, d->rnglists.n - off);
        for (int guard = 0; guard < 100000 && !r.bad; guard++) {
            uint8_t kind = (uint8_t)rd_uint(&r, 1);
            uint64_t lo, hi;
            switch (kind) {
            case 0: return false; /* end_of_list */
            case 1: rd_uleb(&r); continue; /* base_addressx: unknown without .debug_addr */
            case 2: rd_uleb(&r); rd_uleb(&r); continue; /* startx_endx */
            case 3: rd_uleb(&r); rd_uleb(&r); continue; /* startx_length */
            case 4: lo = base + rd_uleb(&r); hi = base + rd_uleb(&r); break;
            case 5: base = rd_uint(&r, 8); continue;
            case 6: lo = rd_uint(&r, 8); hi = rd_uint(&r, 8); break;
            case 7: lo = rd_uint(&r, 8); hi = lo + rd_uleb(&r); break;
            default: return false;
            }
            if (pc >= lo && pc < hi)
                return true;
        }
        return false;
    }
    if (e->ranges >= d->ranges.n)
        return false;
    struct rd r = rd_make(d->ranges.p + e->ranges, d->ranges.n - e->ranges);
    while (!r.bad) {
        uint64_t lo = rd_uint(&r, 8), hi = rd_uint(&r, 8);
        if (r.bad || (!lo && !hi))
            return false;
        if (lo == UINT64_MAX) {
            base = hi;
            continue;
        }
        if (pc >= base + lo && pc < base + hi)
            return true;
    }
    return false;
}

static bool die_contains(const struct dw *d, const struct unit *u, const struct die *e,
                         uint64_t cu_base, uint64_t rnglists_base, uint64_t pc) {
    if (e->has_ranges)
        return ranges_contain(d, u, e, cu_base, rnglists_base, pc);
    if (e->has_low && e->has_high) {
        uint64_t hi = e->high_is_len ? e->low_pc + e->high_pc : e->high_pc;
        return pc >= e->low_pc && pc < hi;
    }
    return false;
}

/* The name of a function DIE, following abstract_origin / specification (also across units). */
static const char *die_name(const struct dw *d, const struct unit *u, const struct die *e) {
    struct die cur = *e;
    struct unit cu = *u;
    for (int hop = 0; hop < 6; hop++) {
        if (cur.linkage_name) /* (C++: the whole name, demangled by symbolize.c) */
            return cur.linkage_name;
        if (cur.name)
            return cur.name;
        if (!cur.origin_kind)
            return NULL;
        uint64_t target = cur.origin;
        if (target < cu.die_off || target >= cu.end) { /* another unit: find its header */
            uint64_t off = 0;
            struct unit t;
            bool found = false;
            while (off < d->info.n && read_unit(d, off, &t)) {
                if (target >= t.die_off && target < t.end) {
                    found = true;
                    break;
                }
                off = t.end;
            }
            if (!found)
                return NULL;
            cu = t;
        }
        struct rd r = rd_make(d->info.p, cu.end);
        r.p += target;
        if (!read_die(d, &cu, &r, &cur) || !cur.tag)
            return NULL;
    }
    return NULL;
}

/* ---- The line program */

struct line_hdr {
    int version;
    const uint8_t *prog, *end; /* the opcodes */
    uint8_t min_inst, max_ops, default_stmt, line_range, opcode_base;
    int8_t line_base;
    const uint8_t *std_lengths;
    /* DWARF 5: entry formats; DWARF 4: the string lists */
    const uint8_t *dirs, *files;
    uint8_t dir_fmt_n, file_fmt_n;
    const uint8_t *dir_fmt, *file_fmt;
    uint64_t dir_n, file_n;
    const char *comp_dir;
};

static bool read_line_hdr(const struct dw *d, uint64_t off, struct line_hdr *h) {
    if (off >= d->line.n)
        return false;
    struct rd r = rd_make(d->line.p + off, d->line.n - off);
    uint64_t len = rd_uint(&r, 4);
    if (r.bad || len >= 0xfffffff0u || len > (uint64_t)(r.end - r.p))
        return false;
    const uint8_t *unit_end = r.p + len;
    r.end = unit_end;
    h->version = (int)rd_uint(&r, 2);
    if (h->version < 2 || h->version > 5)
        return false;
    if (h->version >= 5) {
        if (rd_uint(&r, 1) != 8)
            return false;
        rd_uint(&r, 1);
    }
    uint64_t hlen = rd_uint(&r, 4);
    if (r.bad || hlen > (uint64_t)(r.end - r.p))
        return false;
    h->prog = r.p + hlen;
    h->end = unit_end;
    h->min_inst = (uint8_t)rd_uint(&r, 1);
    h->max_ops = h->version >= 4 ? (uint8_t)rd_uint(&r, 1) : 1;
    h->default_stmt = (uint8_t)rd_uint(&r, 1);
    h->line_base = (int8_t)rd_uint(&r, 1);
    h->line_range = (uint8_t)rd_uint(&r, 1);
    h->opcode_base = (uint8_t)rd_uint(&r, 1);
    h->std_lengths = r.p;
    if (!h->opcode_base)
        return false;
    rd_skip(&r, h->opcode_base - 1u);
    if (h->version >= 5) {
        h->dir_fmt_n = (uint8_t)rd_uint(&r, 1);
        h->dir_fmt = r.p;
        for (int i = 0; i < h->dir_fmt_n; i++)
            rd_uleb(&r), rd_uleb(&r);
        h->dir_n = rd_uleb(&r);
        h->dirs = r.p;
        for (uint64_t i = 0; i < h->dir_n && !r.bad; i++) {
            struct rd f = rd_make(h->dir_fmt, (size_t)(r.end - h->dir_fmt));
            for (int k = 0; k < h->dir_fmt_n; k++) {
                rd_uleb(&f);
                read_form(&r, d, rd_uleb(&f), 0, 5, 8);
            }
        }
        h->file_fmt_n = (uint8_t)rd_uint(&r, 1);
        h->file_fmt = r.p;
        for (int i = 0; i < h->file_fmt_n; i++)
            rd_uleb(&r), rd_uleb(&r);
        h->file_n = rd_uleb(&r);
        h->files = r.p;
    } else {
        h->dirs = r.p;
        while (!r.bad && r.p < r.end && *r.p)
            rd_cstr(&r);
        rd_skip(&r, 1);
        h->files = r.p;
    }
    return !r.bad && h->line_range && h->prog <= h->end;
}

/* DWARF 5: the path of entry idx of a directory or file table (and its directory index). */
static const char *v5_entry(const struct dw *d, const struct line_hdr *h, bool file, uint64_t idx,
                            uint64_t *dir_idx) {
    const uint8_t *fmt = file ? h->file_fmt : h->dir_fmt;
    int fmt_n = file ? h->file_fmt_n : h->dir_fmt_n;
    uint64_t count = file ? h->file_n : h->dir_n;
    if (idx >= count)
        return NULL;
    struct rd r = rd_make(file ? h->files : h->dirs, (size_t)(h->prog - (file ? h->files : h->dirs)));
    const char *path = NULL;
    for (uint64_t i = 0; i <= idx && !r.bad; i++) {
        struct rd f = rd_make(fmt, (size_t)(h->prog - fmt));
        for (int k = 0; k < fmt_n; k++) {
            uint64_t type = rd_uleb(&f), form = rd_uleb(&f);
            struct val v = read_form(&r, d, form, 0, 5, 8);
            if (i != idx)
                continue;
            if (type == 1 && v.kind == V_STR)
                path = v.s;
            else if (type == 2 && dir_idx)
                *dir_idx = v.u;
        }
    }
    return r.bad ? NULL : path;
}

/* File number `idx` of a line program: its name and directory (NULL when the name is absolute
 * or no directory is known). */
static bool line_file(const struct dw *d, const struct line_hdr *h, uint64_t idx, const char **base,
                      const char **dir, const char **name) {
    *base = *dir = NULL;
    *name = NULL;
    if (h->version >= 5) {
        uint64_t di = 0;
        *name = v5_entry(d, h, true, idx, &di);
        if (*name && **name != '/')
            *dir = v5_entry(d, h, false, di, NULL);
        if (*dir && **dir != '/' && di) /* relative to directory 0, the compilation's */
            *base = v5_entry(d, h, false, 0, NULL);
        return *name != NULL;
    }
    if (!idx)
        return false;
    struct rd r = rd_make(h->files, (size_t)(h->prog - h->files));
    uint64_t di = 0;
    for (uint64_t i = 1; i <= idx; i++) {
        if (r.p >= r.end || !*r.p)
            return false;
        *name = rd_cstr(&r);
        di = rd_uleb(&r);
        rd_uleb(&r);
        rd_uleb(&r);
        if (r.bad)
            return false;
    }
    if (**name == '/')
        return true;
    if (!di) {
        *dir = h->comp_dir;
        return true;
    }
    struct rd dr = rd_make(h->dirs, (size_t)(h->files - h->dirs));
    for (uint64_t i = 1; i <= di; i++) {
        if (dr.p >= dr.end || !*dr.p)
            return true;
        *dir = rd_cstr(&dr);
    }
    if (*dir && **dir != '/')
        *base = h->comp_dir;
    return true;
}

/* Run the line program for pc: the file number and line of the row that covers it. */
static bool line_lookup(const struct line_hdr *h, uint64_t pc, uint64_t *file, unsigned *line) {
    struct rd r = rd_make(h->prog, (size_t)(h->end - h->prog));
    uint64_t addr = 0, f = 1, prev_addr = 0, prev_file = 0;
    int64_t ln = 1;
    unsigned prev_line = 0;
    bool have_prev = false;
#define EMIT(a)                                                                 \
    do {                                                                        \
        if (have_prev && prev_addr <= pc && pc < (a)) {                         \
            *file = prev_file;                                                  \
            *line = prev_line;                                                  \
            return true;                                                        \
        }                                                                       \
    } while (0)
    while (r.p < r.end && !r.bad) {
        uint8_t op = (uint8_t)rd_uint(&r, 1);
        if (op >= h->opcode_base) {
            unsigned adj = op - h->opcode_base;
            addr += (uint64_t)(adj / h->line_range) * h->min_inst;
            ln += h->line_base + (int)(adj % h->line_range);
            EMIT(addr);
            prev_addr = addr, prev_file = f, prev_line = (unsigned)ln, have_prev = true;
            continue;
        }
        switch (op) {
        case 0: {
            uint64_t n = rd_uleb(&r);
            if (!n || n > (uint64_t)(r.end - r.p))
                return false;
            const uint8_t *next = r.p + n;
            uint8_t sub = (uint8_t)rd_uint(&r, 1);
            if (sub == 1) { /* end_sequence */
                EMIT(addr);
                addr = 0, f = 1, ln = 1, have_prev = false;
            } else if (sub == 2) {
                addr = rd_uint(&r, 8);
            }
            r.p = next;
            break;
        }
        case 1: /* copy */
            EMIT(addr);
            prev_addr = addr, prev_file = f, prev_line = (unsigned)ln, have_prev = true;
            break;
        case 2: addr += rd_uleb(&r) * h->min_inst; break;
        case 3: ln += rd_sleb(&r); break;
        case 4: f = rd_uleb(&r); break;
        case 5: rd_uleb(&r); break;
        case 6: case 7: case 10: case 11: break;
        case 8: addr += (uint64_t)((255 - h->opcode_base) / h->line_range) * h->min_inst; break;
        case 9: addr += rd_uint(&r, 2); break;
        case 12: rd_uleb(&r); break;
        default:
            for (int i = 0; i < h->std_lengths[op - 1]; i++)
                rd_uleb(&r);
        }
    }
#undef EMIT
    return false;
}

/* ---- Finding the unit */

/* The .debug_info offset of the unit whose aranges cover pc; UINT64_MAX when none. */
static uint64_t aranges_unit(const struct dw *d, uint64_t pc) {
    struct rd r = rd_make(d->aranges.p, d->aranges.n);
    while (r.p < r.end && !r.bad) {
        const uint8_t *set = r.p;
        uint64_t len = rd_uint(&r, 4);
        if (r.bad || len >= 0xfffffff0u || len > (uint64_t)(r.end - r.p))
            break;
        const uint8_t *next = r.p + len;
        rd_uint(&r, 2);
        uint64_t info = rd_uint(&r, 4);
        uint8_t asz = (uint8_t)rd_uint(&r, 1), ssz = (uint8_t)rd_uint(&r, 1);
        if (asz == 8 && !ssz) {
            size_t hdr = (size_t)(r.p - set), al = 16;
            rd_skip(&r, (al - hdr % al) % al);
            while (r.p + 16 <= next) {
                uint64_t lo = rd_uint(&r, 8), n = rd_uint(&r, 8);
                if (!lo && !n)
                    break;
                if (pc >= lo && pc - lo < n)
                    return info;
            }
        }
        r.p = next;
    }
    return UINT64_MAX;
}

/* The unit to search: aranges, else every compile unit's own ranges. */
static bool unit_for(const struct dw *d, uint64_t pc, struct unit *u, struct die *cu) {
    uint64_t off = aranges_unit(d, pc);
    if (off != UINT64_MAX) {
        if (!read_unit(d, off, u))
            return false;
        index_abbrevs(d, u->abbrev_off);
        struct rd r = rd_make(d->info.p, u->end);
        r.p += u->die_off;
        return read_die(d, u, &r, cu) && cu->tag;
    }
    for (off = 0; off < d->info.n && read_unit(d, off, u); off = u->end) {
        index_abbrevs(d, u->abbrev_off);
        struct rd r = rd_make(d->info.p, u->end);
        r.p += u->die_off;
        if (!read_die(d, u, &r, cu) || (cu->tag != TAG_compile_unit && cu->tag != TAG_partial_unit &&
                                        cu->tag != TAG_skeleton_unit))
            continue;
        if (die_contains(d, u, cu, cu->low_pc, cu->rnglists_base, pc))
            return true;
    }
    return false;
}

static int resolve_locked(const char *img, size_t len, uint64_t pc, struct dwarf_frame *out,
                          int max) {
    struct dw d;
    dwarf_state.abbrev_for = UINT64_MAX; /* the index was another file's (or this one mapped elsewhere) */
    if (max <= 0 || !find_sections(img, len, &d))
        return 0;
    struct unit u;
    struct die cu;
    if (!unit_for(&d, pc, &u, &cu) || !cu.has_stmt)
        return 0;
    struct line_hdr h;
    if (!read_line_hdr(&d, cu.stmt_list, &h))
        return 0;
    h.comp_dir = cu.comp_dir;
    uint64_t cu_base = cu.has_low ? cu.low_pc : 0;

    /* The chain of DIEs that contain pc: a subprogram, then nested inlined subroutines. */
    struct die chain[DWARF_MAX_FRAMES];
    int depth_of[DWARF_MAX_FRAMES];
    int n = 0, depth = 0;
    /* More nested inlined subroutines than chain holds (C++ library code nests a dozen): the
     * outermost are kept (the function the program wrote among them), and the innermost kept
     * one's line is the call site of the first one left out, not the line table's (the
     * innermost's: it would be printed under another function's name). */
    bool cut = false;
    uint64_t cut_file = 0, cut_line = 0;
    struct rd r = rd_make(d.info.p, u.end);
    r.p += u.die_off;
    struct die e;
    if (!read_die(&d, &u, &r, &e)) /* the unit's own DIE */
        return 0;
    depth = e.children ? 1 : 0;
    while (depth > 0 && r.p < r.end) {
        if (!read_die(&d, &u, &r, &e))
            break;
        if (!e.tag) { /* end of a sibling list */
            depth--;
            if (n && depth <= depth_of[0])
                break; /* left the subprogram that contains pc */
            continue;
        }
        /* Preorder: a DIE deeper than the innermost match, before the match's subtree ends,
         * is its descendant. */
        if ((e.tag == TAG_subprogram || e.tag == TAG_inlined_subroutine) && !cut &&
            (n ? depth > depth_of[n - 1] : e.tag == TAG_subprogram) &&
            die_contains(&d, &u, &e, cu_base, cu.rnglists_base, pc)) {
            if (n < DWARF_MAX_FRAMES) {
                chain[n] = e;
                depth_of[n] = depth;
                n++;
            } else { /* (preorder: the first deeper DIE that contains pc is the last one's child) */
                cut = true;
                cut_file = e.call_file;
                cut_line = e.call_line;
            }
        }
        if (e.children)
            depth++;
    }

    /* Innermost first: the line table gives the innermost location; each inlined
     * subroutine's call_file/call_line is its caller's location. */
    uint64_t file = cut_file;
    unsigned line = (unsigned)cut_line;
    bool have_line = cut || line_lookup(&h, pc, &file, &line);
    int k = 0;
    for (int i = n - 1; i >= 0 && k < max; i--, k++) {
        out[k].func = die_name(&d, &u, &chain[i]);
        out[k].base = out[k].dir = out[k].file = NULL;
        out[k].line = 0;
        if (have_line && line && line_file(&d, &h, file, &out[k].base, &out[k].dir, &out[k].file))
            out[k].line = line;
        if (chain[i].tag == TAG_inlined_subroutine) {
            file = chain[i].call_file;
            line = (unsigned)chain[i].call_line;
            have_line = true;
        }
    }
    if (!n && have_line && line) { /* no function DIE, but a line */
        out[0].func = NULL;
        if (line_file(&d, &h, file, &out[0].base, &out[0].dir, &out[0].file)) {
            out[0].line = line;
            k = 1;
        }
    }
    return k;
}

int dwarf_resolve(const char *img, size_t len, uint64_t vaddr, struct dwarf_frame *out, int max) {
    if (atomic_flag_test_and_set_explicit(&dwarf_state.busy, memory_order_acquire))
        return 0; /* another thread is reporting: no file:line rather than waiting */
    int n = resolve_locked(img, len, vaddr, out, max);
    atomic_flag_clear_explicit(&dwarf_state.busy, memory_order_release);
    return n;
}

void dwarf_after_fork(void) { atomic_flag_clear(&dwarf_state.busy); }

int dwarf_build_id(const char *img, size_t len, char *hex, size_t cap) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phoff > len ||
        (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
        return 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_offset > len || ph[i].p_filesz > len - ph[i].p_offset)
            continue;
        struct rd r = rd_make(img + ph[i].p_offset, ph[i].p_filesz);
        while (r.p + 12 <= r.end) {
            uint32_t namesz = (uint32_t)rd_uint(&r, 4), descsz = (uint32_t)rd_uint(&r, 4);
            uint32_t type = (uint32_t)rd_uint(&r, 4);
            const uint8_t *name = r.p;
            rd_skip(&r, (namesz + 3u) & ~3u);
            const uint8_t *desc = r.p;
            rd_skip(&r, (descsz + 3u) & ~3u);
            if (r.bad)
                break;
            if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(name, "GNU", 4) &&
                2u * descsz + 1 <= cap) {
                static const char digits[] = "0123456789abcdef";
                for (uint32_t k = 0; k < descsz; k++) {
                    hex[2 * k] = digits[desc[k] >> 4];
                    hex[2 * k + 1] = digits[desc[k] & 15];
                }
                hex[2 * descsz] = 0;
                return (int)descsz;
            }
        }
    }
    return 0;
}
