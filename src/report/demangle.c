/* demangle: see demangle.h.
 *
 * Two passes over a table of nodes on the stack. The parser (recursive descent over the
 * grammar of the Itanium C++ ABI, section 5.1) builds the tree: names, types, template
 * arguments and lists are nodes that refer to each other by index, so that a substitution
 * (S_, S0_, ...) or a template parameter (T_, T0_, ...) is simply the index of a node seen
 * before. The printer then writes the tree out the way c++filt does; a type is printed in two
 * halves (the part left of the declarator and the part right of it), which is what puts the
 * `*` of a pointer to function inside `void (*)(int)`.
 *
 * Everything is bounded: the name's length (MAX_INPUT), the nodes (MAX_NODES), the
 * substitutions, the recursion depth of both passes (MAX_DEPTH) and the printer's work
 * (MAX_STEPS: a substitution may be printed many times). Past any bound, and at any part of the
 * grammar not handled here, the result is "no answer", never a partial or wrong name. */
#include "report/demangle.h"

#include <stdint.h>

#define MAX_INPUT 4096
#define MAX_NODES 1280
#define MAX_SUBS 256
#define MAX_TARGS 64
#define MAX_DEPTH 128
#define MAX_STEPS 100000

enum kind {
    K_NULL,     /* index 0: no node */
    K_NAME,     /* a source name: a = offset, b = length in the input */
    K_ANON,     /* (anonymous namespace) */
    K_BUILTIN,  /* a = index in builtins */
    K_STD,      /* an abbreviation St, Sa, Sb, Ss, Si, So, Sd: a = index in std_subs */
    K_OP,       /* operator name: a = index in operators */
    K_CONV,     /* conversion operator: a = type */
    K_LITOP,    /* operator"" name: a = name */
    K_NESTED,   /* a::b */
    K_TEMPLATE, /* a<list b> */
    K_LIST,     /* a cell of a list: a = item, b = next cell */
    K_CTOR,     /* constructor (q = 0) or destructor (q = 1) of the class named a */
    K_ABI,      /* a[abi:tag], tag at b, length c */
    K_FUNC,     /* function a returning b (0: not printed), parameters list c, q = qualifiers */
    K_FTYPE,    /* function type: returns a, parameters list b, q = qualifiers */
    K_PTR,      /* a* */
    K_LREF,     /* a& */
    K_RREF,     /* a&& */
    K_QUAL,     /* a const, volatile, restrict (q) */
    K_POSTFIX,  /* a _Complex (q = 0), a _Imaginary (q = 1) */
    K_ARRAY,    /* a [dimension at b, length c] */
    K_PTRMEM,   /* pointer to member of class a, of type b */
    K_LOCAL,    /* a::b, a a function's encoding */
    K_STRLIT,   /* string literal (the entity of a local name) */
    K_SPECIAL,  /* specials[q] a */
    K_CTORVT,   /* construction vtable for b-in-a */
    K_CLONE,    /* a [clone suffix at b, length c] */
    K_LAMBDA,   /* {lambda(list a)#b} */
    K_UNNAMED,  /* {unnamed type#b} */
    K_INTLIT,   /* an integer of type a, digits at b, length c, q = negative */
    K_PACK,     /* an argument pack: list a */
    K_PACKEXP,  /* a pack expansion of a */
};

enum { Q_CONST = 1, Q_VOLATILE = 2, Q_RESTRICT = 4, Q_LREF = 8, Q_RREF = 16, Q_NOEXCEPT = 32 };

struct node {
    uint8_t k, q;
    uint16_t a, b, c;
};

struct dm {
    const char *s;
    int pos, len;
    bool fail;
    int depth, steps;
    int nn, nsubs, ntargs;
    uint8_t enc_quals; /* the qualifiers of the last nested name of an encoding */
    int in_conv;       /* inside a conversion operator's type (T_ there refers forward) */
    char *out;
    size_t olen, cap;
    char last; /* the last character written, even if taken back since (as c++filt has it) */
    uint16_t pack, pack_index; /* the pack being expanded, and which of its elements */
    uint16_t subs[MAX_SUBS];
    uint16_t targs[MAX_TARGS];
    struct node n[MAX_NODES];
};

/* ---- tables */

struct builtin {
    char code[3];
    const char *name;
};
static const struct builtin builtins[] = {
    {"v", "void"}, {"w", "wchar_t"}, {"b", "bool"}, {"c", "char"}, {"a", "signed char"},
    {"h", "unsigned char"}, {"s", "short"}, {"t", "unsigned short"}, {"i", "int"},
    {"j", "unsigned int"}, {"l", "long"}, {"m", "unsigned long"}, {"x", "long long"},
    {"y", "unsigned long long"}, {"n", "__int128"}, {"o", "unsigned __int128"}, {"f", "float"},
    {"d", "double"}, {"e", "long double"}, {"g", "__float128"}, {"z", "..."},
    {"Dd", "decimal64"}, {"De", "decimal128"}, {"Df", "decimal32"}, {"Dh", "half"},
    {"Di", "char32_t"}, {"Ds", "char16_t"}, {"Du", "char8_t"}, {"Da", "auto"},
    {"Dc", "decltype(auto)"}, {"Dn", "decltype(nullptr)"},
};
enum { B_VOID = 0, B_BOOL = 2, B_INT = 8 };

/* Integer literals printed as a number with a suffix (others: "(type)N"). */
static const struct {
    char code;
    const char *suffix;
} int_suffixes[] = {{'i', ""}, {'j', "u"}, {'l', "l"}, {'m', "ul"}, {'x', "ll"}, {'y', "ull"}};

struct std_sub {
    char code;
    const char *name, *ctor; /* as c++filt prints it; the class's name for a constructor */
};
static const struct std_sub std_subs[] = {
    {'t', "std", "std"},
    {'a', "std::allocator", "allocator"},
    {'b', "std::basic_string", "basic_string"},
    {'s', "std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "basic_string"},
    {'i', "std::basic_istream<char, std::char_traits<char> >", "basic_istream"},
    {'o', "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream"},
    {'d', "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream"},
};

static const struct {
    char code[3];
    const char *name;
} operators[] = {
    {"nw", "new"}, {"na", "new[]"}, {"dl", "delete"}, {"da", "delete[]"}, {"ps", "+"},
    {"ng", "-"}, {"ad", "&"}, {"de", "*"}, {"co", "~"}, {"pl", "+"}, {"mi", "-"}, {"ml", "*"},
    {"dv", "/"}, {"rm", "%"}, {"an", "&"}, {"or", "|"}, {"eo", "^"}, {"aS", "="}, {"pL", "+="},
    {"mI", "-="}, {"mL", "*="}, {"dV", "/="}, {"rM", "%="}, {"aN", "&="}, {"oR", "|="},
    {"eO", "^="}, {"ls", "<<"}, {"rs", ">>"}, {"lS", "<<="}, {"rS", ">>="}, {"eq", "=="},
    {"ne", "!="}, {"lt", "<"}, {"gt", ">"}, {"le", "<="}, {"ge", ">="}, {"ss", "<=>"},
    {"nt", "!"}, {"aa", "&&"}, {"oo", "||"}, {"pp", "++"}, {"mm", "--"}, {"cm", ","},
    {"pm", "->*"}, {"pt", "->"}, {"cl", "()"}, {"ix", "[]"}, {"qu", "?"}, {"aw", "co_await"},
};

static const char *const specials[] = {
    "vtable for ", "VTT for ", "typeinfo for ", "typeinfo name for ",
    "non-virtual thunk to ", "virtual thunk to ", "guard variable for ",
    "TLS init function for ", "TLS wrapper function for ", "transaction clone for ",
    "hidden alias for ",
};
enum { SP_VTABLE, SP_VTT, SP_TYPEINFO, SP_TYPEINFO_NAME, SP_NV_THUNK, SP_V_THUNK, SP_GUARD,
       SP_TLS_INIT, SP_TLS_WRAPPER, SP_TRANSACTION, SP_ALIAS };

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* ---- the parser */

static char peek(const struct dm *d, int k) {
    return d->pos + k < d->len ? d->s[d->pos + k] : 0;
}
static bool eat(struct dm *d, char c) {
    if (peek(d, 0) != c)
        return false;
    d->pos++;
    return true;
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

static uint16_t bad(struct dm *d) {
    d->fail = true;
    return 0;
}

static uint16_t mk(struct dm *d, int k, int q, int a, int b, int c) {
    if (d->fail || d->nn >= MAX_NODES)
        return bad(d);
    struct node *x = &d->n[d->nn];
    x->k = (uint8_t)k;
    x->q = (uint8_t)q;
    x->a = (uint16_t)a;
    x->b = (uint16_t)b;
    x->c = (uint16_t)c;
    return (uint16_t)d->nn++;
}

static void push_sub(struct dm *d, uint16_t x) {
    if (!x || d->fail)
        return;
    if (d->nsubs >= MAX_SUBS) {
        bad(d);
        return;
    }
    d->subs[d->nsubs++] = x;
}

/* A list being built: head and tail cells. */
struct list {
    uint16_t head, tail;
};
static void append(struct dm *d, struct list *l, uint16_t item) {
    uint16_t cell = mk(d, K_LIST, 0, item, 0, 0);
    if (!cell)
        return;
    if (l->tail)
        d->n[l->tail].b = cell;
    else
        l->head = cell;
    l->tail = cell;
}

/* A decimal number; its digits' offset and length (the sign is not in them). */
static bool number(struct dm *d, bool *neg, int *off, int *len) {
    *neg = eat(d, 'n');
    *off = d->pos;
    while (is_digit(peek(d, 0)))
        d->pos++;
    *len = d->pos - *off;
    return *len > 0 && *len <= 40; /* (a literal may be 128 bits: its digits are copied) */
}
static long number_value(struct dm *d, bool allow_neg) {
    bool neg;
    int off, len;
    if (!number(d, &neg, &off, &len) || (neg && !allow_neg) || len > 9) {
        bad(d);
        return -1;
    }
    long v = 0;
    for (int i = 0; i < len; i++)
        v = v * 10 + (d->s[off + i] - '0');
    return neg ? -v : v;
}

/* [<seq-id>] _ : 0 for "_", N+1 for "N_" (base 36 when base36, else decimal). */
static int seq_id(struct dm *d, bool base36) {
    if (eat(d, '_'))
        return 0;
    long v = 0;
    int digits = 0;
    for (;;) {
        char c = peek(d, 0);
        int x;
        if (is_digit(c))
            x = c - '0';
        else if (base36 && is_upper(c))
            x = c - 'A' + 10;
        else
            break;
        v = v * (base36 ? 36 : 10) + x;
        d->pos++;
        if (++digits > 6) {
            bad(d);
            return -1;
        }
    }
    if (!digits || !eat(d, '_')) {
        bad(d);
        return -1;
    }
    return (int)v + 1;
}

static uint16_t parse_type(struct dm *d);
static uint16_t parse_name(struct dm *d, bool tag);
static uint16_t parse_encoding(struct dm *d);

static bool enter(struct dm *d) {
    if (d->fail || ++d->depth > MAX_DEPTH) {
        d->fail = true;
        return false;
    }
    return true;
}
#define LEAVE(d, x) do { uint16_t r_ = (x); (d)->depth--; return (d)->fail ? 0 : r_; } while (0)

static uint16_t source_name(struct dm *d) {
    long n = number_value(d, false);
    if (n <= 0 || n > d->len - d->pos)
        return bad(d);
    int start = d->pos;
    d->pos += (int)n;
    static const char anon[] = "_GLOBAL__N";
    if (n >= 10) {
        int i = 0;
        while (i < 10 && d->s[start + i] == anon[i])
            i++;
        if (i == 10)
            return mk(d, K_ANON, 0, 0, 0, 0);
    }
    return mk(d, K_NAME, 0, start, (int)n, 0);
}

static uint16_t template_param(struct dm *d) {
    if (!eat(d, 'T'))
        return bad(d);
    int i = seq_id(d, false);
    if (d->fail || d->in_conv || i >= d->ntargs)
        return bad(d);
    return d->targs[i];
}

/* S_, S<seq-id>_, or an abbreviation (St, Sa, ...). */
static uint16_t substitution(struct dm *d) {
    if (!eat(d, 'S'))
        return bad(d);
    char c = peek(d, 0);
    if (is_lower(c)) {
        for (int i = 0; i < COUNT(std_subs); i++)
            if (std_subs[i].code == c) {
                d->pos++;
                return mk(d, K_STD, 0, i, 0, 0);
            }
        return bad(d);
    }
    int i = seq_id(d, true);
    if (d->fail || i >= d->nsubs)
        return bad(d);
    return d->subs[i];
}

/* The types up to E (or the end of the name, or a clone suffix), "v" alone being no
 * parameters. */
static uint16_t parameters(struct dm *d, bool until_e) {
    struct list l = {0, 0};
    char c = peek(d, 0);
    if (c == 'v' && (peek(d, 1) == 0 || peek(d, 1) == '.' || peek(d, 1) == 'E')) {
        d->pos++;
        return 0;
    }
    while (!d->fail) {
        c = peek(d, 0);
        if (c == 0 || c == '.' || c == 'E' || (until_e && (c == 'R' || c == 'O') && peek(d, 1) == 'E'))
            break;
        append(d, &l, parse_type(d));
    }
    if (until_e && !l.head && !d->fail)
        return bad(d); /* (a function type has at least "v") */
    return l.head;
}

static uint16_t template_args(struct dm *d, bool tag);

/* L <type> <value> E, L _Z <encoding> E */
static uint16_t literal(struct dm *d) {
    if (!eat(d, 'L'))
        return bad(d);
    if (peek(d, 0) == '_' && peek(d, 1) == 'Z') {
        d->pos += 2;
        uint16_t e = parse_encoding(d);
        return eat(d, 'E') ? e : bad(d);
    }
    uint16_t t = parse_type(d);
    bool neg;
    int off, len;
    if (d->fail || !number(d, &neg, &off, &len) || !eat(d, 'E'))
        return bad(d);
    return mk(d, K_INTLIT, neg, t, off, len);
}

static uint16_t template_args(struct dm *d, bool tag) {
    if (!enter(d))
        return 0;
    if (!eat(d, 'I'))
        LEAVE(d, bad(d));
    struct list l = {0, 0};
    uint16_t items[MAX_TARGS];
    int count = 0;
    while (!d->fail && !eat(d, 'E')) {
        uint16_t x;
        char c = peek(d, 0);
        if (c == 'L') {
            x = literal(d);
        } else if (c == 'J') {
            d->pos++;
            struct list p = {0, 0};
            while (!d->fail && !eat(d, 'E'))
                append(d, &p, peek(d, 0) == 'L' ? literal(d) : parse_type(d));
            x = mk(d, K_PACK, 0, p.head, 0, 0);
        } else if (c == 0 || c == 'X') {
            x = bad(d); /* expressions are not read */
        } else {
            x = parse_type(d);
        }
        append(d, &l, x);
        if (count >= MAX_TARGS)
            LEAVE(d, bad(d));
        items[count++] = x;
    }
    if (tag && !d->fail) {
        for (int i = 0; i < count; i++)
            d->targs[i] = items[i];
        d->ntargs = count;
    }
    LEAVE(d, l.head);
}

/* The class named by a prefix, for its constructors and destructor. */
static uint16_t class_name(struct dm *d, uint16_t x) {
    for (int guard = 0; x && guard < MAX_DEPTH; guard++) {
        struct node *p = &d->n[x];
        if (p->k == K_NESTED)
            x = p->b;
        else if (p->k == K_TEMPLATE)
            x = p->a;
        else if (p->k == K_LOCAL)
            x = p->b;
        else if (p->k == K_ABI)
            x = p->a; /* (c++filt: `failure[abi:cxx11]::failure()`) */
        else
            return x;
    }
    return 0;
}

static uint16_t operator_name(struct dm *d) {
    char c0 = peek(d, 0), c1 = peek(d, 1);
    if (c0 == 'c' && c1 == 'v') {
        d->pos += 2;
        d->in_conv++;
        uint16_t t = parse_type(d);
        d->in_conv--;
        return mk(d, K_CONV, 0, t, 0, 0);
    }
    if (c0 == 'l' && c1 == 'i') {
        d->pos += 2;
        uint16_t x = source_name(d);
        return mk(d, K_LITOP, 0, x, 0, 0);
    }
    for (int i = 0; i < COUNT(operators); i++)
        if (operators[i].code[0] == c0 && operators[i].code[1] == c1) {
            d->pos += 2;
            return mk(d, K_OP, 0, i, 0, 0);
        }
    return bad(d);
}

/* Ul <parameters> E [<number>] _ and Ut [<number>] _ */
static uint16_t unnamed(struct dm *d) {
    d->pos++;
    if (eat(d, 'l')) {
        uint16_t params = parameters(d, true);
        if (d->fail || !eat(d, 'E'))
            return bad(d);
        int n = seq_id(d, false);
        return d->fail ? 0 : mk(d, K_LAMBDA, 0, params, n + 1, 0);
    }
    if (eat(d, 't')) {
        int n = seq_id(d, false);
        return d->fail ? 0 : mk(d, K_UNNAMED, 0, 0, n + 1, 0);
    }
    return bad(d);
}

static uint16_t unqualified_name(struct dm *d, uint16_t prefix) {
    eat(d, 'L'); /* (internal linkage) */
    char c = peek(d, 0), c1 = peek(d, 1);
    uint16_t x;
    if (is_digit(c)) {
        x = source_name(d);
    } else if ((c == 'C' && c1 >= '1' && c1 <= '5') || (c == 'D' && c1 >= '0' && c1 <= '5' && c1 != '3')) {
        d->pos += 2;
        uint16_t cls = class_name(d, prefix);
        if (!cls || (d->n[cls].k != K_NAME && d->n[cls].k != K_STD))
            return bad(d);
        x = mk(d, K_CTOR, c == 'D', cls, 0, 0);
    } else if (c == 'U') {
        x = unnamed(d);
    } else if (is_lower(c)) {
        x = operator_name(d);
    } else {
        return bad(d);
    }
    while (!d->fail && eat(d, 'B')) {
        long n = number_value(d, false);
        if (n <= 0 || n > d->len - d->pos)
            return bad(d);
        x = mk(d, K_ABI, 0, x, d->pos, (int)n);
        d->pos += (int)n;
    }
    return d->fail ? 0 : x;
}

static uint8_t cv_qualifiers(struct dm *d) {
    uint8_t q = 0;
    if (eat(d, 'r'))
        q |= Q_RESTRICT;
    if (eat(d, 'V'))
        q |= Q_VOLATILE;
    if (eat(d, 'K'))
        q |= Q_CONST;
    char c = peek(d, 0);
    if (c == 'r' || c == 'V' || c == 'K')
        bad(d); /* (out of order or twice: not a name a compiler wrote) */
    return q;
}

/* N [<CV-qualifiers>] [<ref-qualifier>] <prefix> <unqualified-name> E */
static uint16_t nested_name(struct dm *d, bool tag) {
    d->pos++;
    uint8_t q = cv_qualifiers(d);
    if (eat(d, 'R'))
        q |= Q_LREF;
    else if (eat(d, 'O'))
        q |= Q_RREF;
    uint16_t so_far = 0;
    bool pushed = false;
    while (!d->fail && !eat(d, 'E')) {
        char c = peek(d, 0), c1 = peek(d, 1);
        if (c == 0)
            return bad(d);
        if (c == 'S' && c1 == 't' && !so_far) {
            d->pos += 2;
            so_far = mk(d, K_STD, 0, 0, 0, 0);
            pushed = false;
            continue;
        }
        if (c == 'S') {
            if (so_far)
                return bad(d);
            so_far = substitution(d);
            pushed = false;
            continue;
        }
        if (c == 'I') {
            if (!so_far)
                return bad(d);
            uint16_t args = template_args(d, tag);
            so_far = mk(d, K_TEMPLATE, 0, so_far, args, 0);
        } else if (c == 'T') {
            if (so_far)
                return bad(d);
            so_far = template_param(d);
        } else if (c == 'D' && (c1 == 't' || c1 == 'T')) {
            return bad(d); /* decltype */
        } else {
            uint16_t u = unqualified_name(d, so_far);
            so_far = so_far ? mk(d, K_NESTED, 0, so_far, u, 0) : u;
        }
        push_sub(d, so_far);
        pushed = true;
    }
    if (d->fail || !so_far || !pushed)
        return bad(d); /* (ending with a substitution: c++filt reads no name there) */
    d->nsubs--; /* the whole name is a substitution only as a type (parse_type) */
    if (tag)
        d->enc_quals = q;
    return so_far;
}

/* Z <encoding> E <entity name> [<discriminator>], Z <encoding> E s [<discriminator>] */
static uint16_t local_name(struct dm *d, bool tag) {
    d->pos++;
    uint16_t enc = parse_encoding(d);
    if (d->fail || !eat(d, 'E'))
        return bad(d);
    if (d->n[enc].k == K_FUNC)
        d->n[enc].b = 0; /* (c++filt leaves out the enclosing function's return type) */
    d->enc_quals = 0;
    uint16_t entity;
    if (eat(d, 's'))
        entity = mk(d, K_STRLIT, 0, 0, 0, 0);
    else if (peek(d, 0) == 'd')
        return bad(d); /* a default argument's scope */
    else
        entity = parse_name(d, tag);
    if (!d->fail && eat(d, '_')) {
        if (eat(d, '_')) {
            long v = number_value(d, false);
            if (v < 0 || !eat(d, '_'))
                return bad(d);
        } else if (is_digit(peek(d, 0))) {
            d->pos++;
        } else {
            return bad(d);
        }
    }
    return mk(d, K_LOCAL, 0, enc, entity, 0);
}

static uint16_t parse_name(struct dm *d, bool tag) {
    if (!enter(d))
        return 0;
    char c = peek(d, 0), c1 = peek(d, 1);
    uint16_t x;
    if (c == 'N')
        LEAVE(d, nested_name(d, tag));
    if (c == 'Z')
        LEAVE(d, local_name(d, tag));
    if (c == 'S' && c1 == 't') {
        d->pos += 2;
        uint16_t std = mk(d, K_STD, 0, 0, 0, 0);
        x = mk(d, K_NESTED, 0, std, unqualified_name(d, 0), 0);
    } else if (c == 'S') {
        x = substitution(d);
        if (peek(d, 0) != 'I')
            LEAVE(d, x);
        uint16_t args = template_args(d, tag);
        LEAVE(d, mk(d, K_TEMPLATE, 0, x, args, 0));
    } else {
        x = unqualified_name(d, 0);
    }
    if (peek(d, 0) == 'I') {
        push_sub(d, x);
        uint16_t args = template_args(d, tag);
        x = mk(d, K_TEMPLATE, 0, x, args, 0);
    }
    LEAVE(d, x);
}

/* F [Y] <return type> <parameters> [<ref-qualifier>] E */
static uint16_t function_type(struct dm *d, uint8_t q) {
    d->pos++;
    eat(d, 'Y');
    uint16_t ret = parse_type(d);
    uint16_t params = parameters(d, true);
    if (eat(d, 'R'))
        q |= Q_LREF;
    else if (eat(d, 'O'))
        q |= Q_RREF;
    if (d->fail || !eat(d, 'E'))
        return bad(d);
    return mk(d, K_FTYPE, q, ret, params, 0);
}

static uint16_t parse_type(struct dm *d) {
    if (!enter(d))
        return 0;
    char c = peek(d, 0), c1 = peek(d, 1);
    uint16_t x;
    for (int i = 0; i < COUNT(builtins); i++) {
        const char *code = builtins[i].code;
        if (code[0] == c && (!code[1] || code[1] == c1)) {
            d->pos += code[1] ? 2 : 1;
            LEAVE(d, mk(d, K_BUILTIN, 0, i, 0, 0));
        }
    }
    switch (c) {
    case 'u': /* a vendor's type */
        d->pos++;
        x = source_name(d);
        break;
    case 'D':
        if (c1 == 'p') {
            d->pos += 2;
            x = mk(d, K_PACKEXP, 0, parse_type(d), 0, 0);
        } else if (c1 == 'x' && peek(d, 2) == 'F') {
            d->pos += 2;
            x = function_type(d, Q_NOEXCEPT);
        } else {
            LEAVE(d, bad(d)); /* decltype, vector types, _FloatN, exception specifications */
        }
        break;
    case 'r':
    case 'V':
    case 'K': {
        uint8_t q = cv_qualifiers(d);
        uint16_t t = parse_type(d);
        if (t && d->n[t].k == K_QUAL) { /* (const of a substitution that is const already) */
            q |= d->n[t].q;
            t = d->n[t].a;
        }
        x = mk(d, K_QUAL, q, t, 0, 0);
        break;
    }
    case 'P':
    case 'R':
    case 'O':
        d->pos++;
        x = parse_type(d);
        x = mk(d, c == 'P' ? K_PTR : c == 'R' ? K_LREF : K_RREF, 0, x, 0, 0);
        break;
    case 'C':
    case 'G':
        d->pos++;
        x = parse_type(d);
        x = mk(d, K_POSTFIX, c == 'G', x, 0, 0);
        break;
    case 'F':
        x = function_type(d, 0);
        break;
    case 'A': {
        d->pos++;
        int off = d->pos, len = 0;
        if (is_digit(peek(d, 0))) {
            if (number_value(d, false) < 0)
                LEAVE(d, 0);
            len = d->pos - off;
        }
        if (!eat(d, '_'))
            LEAVE(d, bad(d)); /* (a dimension given as an expression) */
        uint16_t t = parse_type(d);
        x = mk(d, K_ARRAY, 0, t, off, len);
        break;
    }
    case 'M': {
        d->pos++;
        uint16_t cls = parse_type(d);
        uint16_t member = parse_type(d);
        x = mk(d, K_PTRMEM, 0, cls, member, 0);
        break;
    }
    case 'T':
        x = template_param(d);
        if (peek(d, 0) == 'I') {
            push_sub(d, x);
            uint16_t args = template_args(d, false);
            x = mk(d, K_TEMPLATE, 0, x, args, 0);
        }
        break;
    case 'S':
        if (c1 != 't') {
            x = substitution(d);
            if (peek(d, 0) != 'I')
                LEAVE(d, x); /* (a substitution is not a new candidate) */
            uint16_t args = template_args(d, false);
            x = mk(d, K_TEMPLATE, 0, x, args, 0);
            break;
        }
        x = parse_name(d, false); /* St <unqualified-name> */
        break;
    case 'N':
    case 'Z':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        x = parse_name(d, false);
        break;
    default:
        LEAVE(d, bad(d));
    }
    push_sub(d, x);
    LEAVE(d, x);
}

/* Does a function of this name have its return type in the mangled name? (a template, not a
 * constructor, destructor or conversion operator) */
static bool returns_type(const struct dm *d, uint16_t x) {
    for (int guard = 0; x && guard < MAX_DEPTH; guard++) {
        const struct node *p = &d->n[x];
        if (p->k == K_LOCAL) {
            x = p->b;
            continue;
        }
        if (p->k != K_TEMPLATE)
            return false;
        uint16_t last = p->a;
        while (last && d->n[last].k == K_NESTED)
            last = d->n[last].b;
        while (last && d->n[last].k == K_ABI)
            last = d->n[last].a;
        return !(last && (d->n[last].k == K_CTOR || d->n[last].k == K_CONV));
    }
    return false;
}

/* h <number> _, v <number> _ <number> _ */
static void call_offset(struct dm *d) {
    if (eat(d, 'h')) {
        number_value(d, true);
    } else if (eat(d, 'v')) {
        number_value(d, true);
        if (!eat(d, '_'))
            bad(d);
        number_value(d, true);
    } else {
        bad(d);
    }
    if (!eat(d, '_'))
        bad(d);
}

static uint16_t special_name(struct dm *d) {
    char c = peek(d, 0), c1 = peek(d, 1);
    d->pos += 2;
    if (c == 'T') {
        switch (c1) {
        case 'V': return mk(d, K_SPECIAL, SP_VTABLE, parse_type(d), 0, 0);
        case 'T': return mk(d, K_SPECIAL, SP_VTT, parse_type(d), 0, 0);
        case 'I': return mk(d, K_SPECIAL, SP_TYPEINFO, parse_type(d), 0, 0);
        case 'S': return mk(d, K_SPECIAL, SP_TYPEINFO_NAME, parse_type(d), 0, 0);
        case 'H': return mk(d, K_SPECIAL, SP_TLS_INIT, parse_name(d, false), 0, 0);
        case 'W': return mk(d, K_SPECIAL, SP_TLS_WRAPPER, parse_name(d, false), 0, 0);
        case 'h':
        case 'v':
            d->pos--;
            call_offset(d);
            return mk(d, K_SPECIAL, c1 == 'h' ? SP_NV_THUNK : SP_V_THUNK, parse_encoding(d), 0, 0);
        case 'C': {
            uint16_t derived = parse_type(d);
            if (number_value(d, true), !eat(d, '_'))
                return bad(d);
            uint16_t base = parse_type(d);
            return mk(d, K_CTORVT, 0, derived, base, 0);
        }
        default:
            return bad(d);
        }
    }
    switch (c1) {
    case 'V': return mk(d, K_SPECIAL, SP_GUARD, parse_name(d, false), 0, 0);
    case 'A': return mk(d, K_SPECIAL, SP_ALIAS, parse_encoding(d), 0, 0);
    case 'T':
        if (eat(d, 't'))
            return mk(d, K_SPECIAL, SP_TRANSACTION, parse_encoding(d), 0, 0);
        return bad(d);
    default:
        return bad(d);
    }
}

static uint16_t parse_encoding(struct dm *d) {
    if (!enter(d))
        return 0;
    char c = peek(d, 0);
    if (c == 'T' || (c == 'G' && peek(d, 1) != 0))
        LEAVE(d, special_name(d));
    d->enc_quals = 0;
    uint16_t name = parse_name(d, true);
    uint8_t q = d->enc_quals;
    c = peek(d, 0);
    if (d->fail || c == 0 || c == '.' || c == 'E')
        LEAVE(d, q ? bad(d) : name); /* (a variable has no qualifiers) */
    uint16_t ret = returns_type(d, name) ? parse_type(d) : 0;
    c = peek(d, 0);
    if (ret && (c == 0 || c == '.' || c == 'E'))
        LEAVE(d, bad(d)); /* (a return type, then no parameters, not even "v") */
    uint16_t params = parameters(d, false);
    LEAVE(d, mk(d, K_FUNC, q, name, ret, params));
}

/* .cold, .isra.0, .constprop.0, .part.0, .lto_priv.0, ...: " [clone .suffix]" each */
static uint16_t clone_suffixes(struct dm *d, uint16_t x) {
    while (!d->fail && peek(d, 0) == '.') {
        char c1 = peek(d, 1);
        if (!(is_lower(c1) || is_digit(c1) || c1 == '_'))
            break;
        int start = d->pos;
        d->pos += 2;
        while (is_lower(peek(d, 0)) || is_digit(peek(d, 0)) || peek(d, 0) == '_')
            d->pos++;
        while (peek(d, 0) == '.' && is_digit(peek(d, 1))) {
            d->pos += 2;
            while (is_digit(peek(d, 0)))
                d->pos++;
        }
        x = mk(d, K_CLONE, 0, x, start, d->pos - start);
    }
    return x;
}

/* ---- the printer */

static void put(struct dm *d, const char *s, size_t n) {
    if (d->fail)
        return;
    if (n >= d->cap - d->olen) {
        d->fail = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        d->out[d->olen + i] = s[i];
    d->olen += n;
    if (n)
        d->last = s[n - 1];
}
static void puts_(struct dm *d, const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    put(d, s, n);
}
static char last_char(const struct dm *d) { return d->last; }

static void print(struct dm *d, uint16_t x);
static void print_left(struct dm *d, uint16_t x);
static void print_right(struct dm *d, uint16_t x);

/* The element a pack stands for while a pack expansion prints it, or the node itself. */
static uint16_t resolve(const struct dm *d, uint16_t x) {
    if (d->n[x].k != K_PACK || d->pack != x)
        return x;
    uint16_t cell = d->n[x].a;
    for (int i = 0; cell && i < d->pack_index; i++)
        cell = d->n[cell].b;
    return cell ? d->n[cell].a : 0;
}

static bool is_kind(const struct dm *d, uint16_t x, int k) {
    for (int guard = 0; x && guard < MAX_DEPTH; guard++) {
        x = resolve(d, x);
        if (d->n[x].k == k)
            return true;
        if (d->n[x].k != K_QUAL)
            return false;
        x = d->n[x].a;
    }
    return false;
}

/* Does the type print something right of its declarator? */
static bool has_right(const struct dm *d, uint16_t x) {
    for (int guard = 0; x && guard < MAX_DEPTH; guard++) {
        x = resolve(d, x);
        const struct node *p = &d->n[x];
        switch (p->k) {
        case K_FTYPE:
        case K_ARRAY:
            return true;
        case K_PTR: case K_LREF: case K_RREF: case K_QUAL: case K_POSTFIX:
            x = p->a;
            break;
        case K_PTRMEM:
            x = p->b;
            break;
        default:
            return false;
        }
    }
    return false;
}

/* What a pointer or reference refers to, references to references collapsed as C++ does
 * (`T&&` with T = `int&` is `int&`); *k becomes the kind of the collapsed reference. */
static uint16_t pointee(struct dm *d, uint16_t x, int *k) {
    uint16_t t = d->n[x].a;
    if (*k == K_PTR)
        return t;
    for (int guard = 0; t && guard < MAX_DEPTH; guard++) {
        uint16_t r = resolve(d, t);
        if (d->n[r].k == K_PACK)
            d->fail = true; /* (a reference to a whole pack, outside an expansion) */
        if (d->n[r].k == K_LREF)
            *k = K_LREF;
        else if (d->n[r].k != K_RREF)
            break;
        t = d->n[r].a;
    }
    return t;
}

static void print_quals(struct dm *d, uint8_t q) {
    if (q & Q_CONST)
        puts_(d, " const");
    if (q & Q_VOLATILE)
        puts_(d, " volatile");
    if (q & Q_RESTRICT)
        puts_(d, " restrict");
    if (q & Q_LREF)
        puts_(d, " &");
    if (q & Q_RREF)
        puts_(d, " &&");
}

/* A list's items with ", " between them. As c++filt does, a separator is taken back when
 * nothing is printed after it up to the end of the list (empty argument packs at the end:
 * `shared_ptr<std::allocator<void>>`, with no space before the last `>` either), but kept
 * before an empty pack in the middle (`thread<void (&)(), , void>`). */
static void print_list(struct dm *d, uint16_t cell) {
    size_t trim = (size_t)-1; /* where the run of empty items at the end began */
    bool first = true;
    for (int guard = 0; cell && !d->fail; cell = d->n[cell].b) {
        if (++guard > MAX_NODES) {
            d->fail = true;
            return;
        }
        size_t before = d->olen;
        if (!first)
            puts_(d, ", ");
        first = false;
        size_t mid = d->olen;
        print(d, d->n[cell].a);
        if (d->olen != mid)
            trim = (size_t)-1;
        else if (trim == (size_t)-1 && before != mid)
            trim = before;
    }
    if (trim != (size_t)-1 && !d->fail)
        d->olen = trim;
}

static void print_args(struct dm *d, uint16_t list) {
    if (last_char(d) == '<')
        puts_(d, " ");
    puts_(d, "<");
    print_list(d, list);
    if (last_char(d) == '>')
        puts_(d, " ");
    puts_(d, ">");
}

/* The first argument pack inside a type (for a pack expansion). */
static uint16_t find_pack(const struct dm *d, uint16_t x, int depth) {
    if (!x || depth > 32)
        return 0;
    const struct node *p = &d->n[x];
    switch (p->k) {
    case K_PACK:
        return x;
    case K_PTR: case K_LREF: case K_RREF: case K_QUAL: case K_POSTFIX:
        return find_pack(d, p->a, depth + 1);
    case K_PTRMEM: case K_FTYPE: case K_TEMPLATE: case K_LIST: case K_NESTED: {
        uint16_t r = find_pack(d, p->a, depth + 1);
        return r ? r : find_pack(d, p->b, depth + 1);
    }
    default:
        return 0;
    }
}

static void print_pack_expansion(struct dm *d, uint16_t child) {
    uint16_t pack = find_pack(d, child, 0);
    if (!pack) {
        print(d, child);
        puts_(d, "...");
        return;
    }
    uint16_t saved = d->pack, saved_index = d->pack_index;
    int count = 0;
    for (uint16_t cell = d->n[pack].a; cell && count <= MAX_NODES; cell = d->n[cell].b)
        count++;
    d->pack = pack;
    for (int i = 0; i < count && !d->fail; i++) {
        if (i)
            puts_(d, ", ");
        d->pack_index = (uint16_t)i;
        print(d, child);
    }
    d->pack = saved;
    d->pack_index = saved_index;
}

static void print_number(struct dm *d, long v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < 20);
    put(d, tmp + sizeof tmp - n, (size_t)n);
}

static void print_int_literal(struct dm *d, const struct node *p) {
    const struct node *t = &d->n[p->a];
    if (t->k == K_BUILTIN && t->a == B_BOOL && p->c == 1 && !p->q &&
        (d->s[p->b] == '0' || d->s[p->b] == '1')) {
        puts_(d, d->s[p->b] == '1' ? "true" : "false");
        return;
    }
    const char *suffix = NULL;
    if (t->k == K_BUILTIN && builtins[t->a].code[1] == 0)
        for (int i = 0; i < COUNT(int_suffixes); i++)
            if (int_suffixes[i].code == builtins[t->a].code[0])
                suffix = int_suffixes[i].suffix;
    if (!suffix) {
        puts_(d, "(");
        print(d, p->a);
        puts_(d, ")");
    }
    if (p->q)
        puts_(d, "-");
    put(d, d->s + p->b, p->c);
    if (suffix)
        puts_(d, suffix);
}

static bool step(struct dm *d) {
    if (d->fail || ++d->steps > MAX_STEPS || d->depth >= MAX_DEPTH) {
        d->fail = true;
        return false;
    }
    return true;
}

static void print_left(struct dm *d, uint16_t x) {
    if (!x || !step(d))
        return;
    d->depth++;
    const struct node *p = &d->n[x];
    switch (p->k) {
    case K_NAME:
        put(d, d->s + p->a, p->b);
        break;
    case K_ANON:
        puts_(d, "(anonymous namespace)");
        break;
    case K_BUILTIN:
        puts_(d, builtins[p->a].name);
        break;
    case K_STD:
        puts_(d, std_subs[p->a].name);
        break;
    case K_OP: {
        const char *name = operators[p->a].name;
        puts_(d, "operator");
        if (is_lower(name[0]))
            puts_(d, " ");
        puts_(d, name);
        break;
    }
    case K_CONV:
        puts_(d, "operator ");
        print(d, p->a);
        break;
    case K_LITOP:
        puts_(d, "operator\"\" ");
        print(d, p->a);
        break;
    case K_NESTED:
        print(d, p->a);
        puts_(d, "::");
        print(d, p->b);
        break;
    case K_TEMPLATE:
        print(d, p->a);
        print_args(d, p->b);
        break;
    case K_CTOR:
        if (p->q)
            puts_(d, "~");
        if (d->n[p->a].k == K_STD)
            puts_(d, std_subs[d->n[p->a].a].ctor);
        else
            print(d, p->a);
        break;
    case K_ABI:
        print(d, p->a);
        puts_(d, "[abi:");
        put(d, d->s + p->b, p->c);
        puts_(d, "]");
        break;
    case K_FUNC:
        if (p->b) {
            print_left(d, p->b);
            if (!has_right(d, p->b))
                puts_(d, " ");
        }
        print(d, p->a);
        puts_(d, "(");
        print_list(d, p->c);
        puts_(d, ")");
        if (p->b)
            print_right(d, p->b);
        print_quals(d, p->q);
        break;
    case K_FTYPE:
        print_left(d, p->a);
        puts_(d, " ");
        break;
    case K_PTR:
    case K_LREF:
    case K_RREF: {
        int k = p->k;
        uint16_t t = pointee(d, x, &k);
        print_left(d, t);
        if (is_kind(d, t, K_ARRAY))
            puts_(d, " (");
        else if (is_kind(d, t, K_FTYPE))
            puts_(d, "(");
        puts_(d, k == K_PTR ? "*" : k == K_LREF ? "&" : "&&");
        break;
    }
    case K_QUAL:
        print_left(d, p->a);
        print_quals(d, p->q);
        break;
    case K_POSTFIX:
        print_left(d, p->a);
        puts_(d, p->q ? " _Imaginary" : " _Complex");
        break;
    case K_ARRAY:
        print_left(d, p->a);
        break;
    case K_PTRMEM:
        print_left(d, p->b);
        if (is_kind(d, p->b, K_ARRAY) || is_kind(d, p->b, K_FTYPE))
            puts_(d, "(");
        else
            puts_(d, " ");
        print(d, p->a);
        puts_(d, "::*");
        break;
    case K_LOCAL:
        print(d, p->a);
        puts_(d, "::");
        print(d, p->b);
        break;
    case K_STRLIT:
        puts_(d, "string literal");
        break;
    case K_SPECIAL:
        puts_(d, specials[p->q]);
        print(d, p->a);
        break;
    case K_CTORVT:
        puts_(d, "construction vtable for ");
        print(d, p->b);
        puts_(d, "-in-");
        print(d, p->a);
        break;
    case K_CLONE:
        print(d, p->a);
        puts_(d, " [clone ");
        put(d, d->s + p->b, p->c);
        puts_(d, "]");
        break;
    case K_LAMBDA:
        puts_(d, "{lambda(");
        print_list(d, p->a);
        puts_(d, ")#");
        print_number(d, p->b);
        puts_(d, "}");
        break;
    case K_UNNAMED:
        puts_(d, "{unnamed type#");
        print_number(d, p->b);
        puts_(d, "}");
        break;
    case K_INTLIT:
        print_int_literal(d, p);
        break;
    case K_PACK:
        if (d->pack == x)
            print_left(d, resolve(d, x));
        else
            print_list(d, p->a);
        break;
    case K_PACKEXP:
        print_pack_expansion(d, p->a);
        break;
    default:
        d->fail = true;
    }
    d->depth--;
}

static void print_right(struct dm *d, uint16_t x) {
    if (!x || !step(d))
        return;
    d->depth++;
    const struct node *p = &d->n[x];
    switch (p->k) {
    case K_FTYPE:
        puts_(d, "(");
        print_list(d, p->b);
        puts_(d, ")");
        print_right(d, p->a);
        print_quals(d, p->q);
        if (p->q & Q_NOEXCEPT)
            puts_(d, " noexcept");
        break;
    case K_PTR:
    case K_LREF:
    case K_RREF: {
        int k = p->k;
        uint16_t t = pointee(d, x, &k);
        if (is_kind(d, t, K_ARRAY) || is_kind(d, t, K_FTYPE))
            puts_(d, ")");
        print_right(d, t);
        break;
    }
    case K_QUAL:
    case K_POSTFIX:
        print_right(d, p->a);
        break;
    case K_ARRAY:
        if (last_char(d) != ']')
            puts_(d, " ");
        puts_(d, "[");
        put(d, d->s + p->b, p->c);
        puts_(d, "]");
        print_right(d, p->a);
        break;
    case K_PTRMEM:
        if (is_kind(d, p->b, K_ARRAY) || is_kind(d, p->b, K_FTYPE))
            puts_(d, ")");
        print_right(d, p->b);
        break;
    case K_PACK:
        if (d->pack == x)
            print_right(d, resolve(d, x));
        break;
    default:
        break;
    }
    d->depth--;
}

static void print(struct dm *d, uint16_t x) {
    print_left(d, x);
    print_right(d, x);
}

bool demangle(const char *name, char *out, size_t cap) {
    if (!name || !out || cap < 2 || name[0] != '_' || name[1] != 'Z')
        return false;
    struct dm d;
    d.s = name;
    d.len = 0;
    while (d.len <= MAX_INPUT && name[d.len])
        d.len++;
    if (d.len > MAX_INPUT)
        return false;
    d.pos = 2;
    d.fail = false;
    d.depth = d.steps = 0;
    d.nn = 1; /* (node 0: none) */
    d.nsubs = d.ntargs = 0;
    d.enc_quals = 0;
    d.in_conv = 0;
    d.pack = d.pack_index = 0;
    d.out = out;
    d.olen = 0;
    d.cap = cap;
    d.last = 0;
    d.n[0] = (struct node){0, 0, 0, 0, 0};
    uint16_t top = parse_encoding(&d);
    top = clone_suffixes(&d, top);
    if (d.fail || !top || d.pos != d.len)
        return false;
    d.depth = 0;
    print(&d, top);
    if (d.fail || d.olen >= cap)
        return false;
    out[d.olen] = 0;
    return true;
}
