/* options: see options.h. */
#include "options.h"
#include "fmt.h"

#include <stddef.h>

enum option_kind { BOOL, INT, STRING };

struct option_row {
    const char *env;
    enum option_kind kind;
    long def, min, max;
};

static const struct option_row rows[OPT_COUNT] = {
#define OSCAR_OPTION(id, env, kind, def, min, max, desc) [OPT_##id] = {env, kind, def, min, max},
#include "options.def"
#undef OSCAR_OPTION
};

static long int_values[OPT_COUNT];
static const char *string_values[OPT_COUNT];

static void warn_invalid(const struct option_row *row, const char *value, const char *why) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    fmt_str(&f, "oscar: warning: ");
    fmt_str(&f, row->env);
    fmt_char(&f, '=');
    fmt_str(&f, value);
    fmt_str(&f, " is invalid (");
    fmt_str(&f, why);
    fmt_str(&f, "); using default ");
    fmt_i64(&f, row->def);
    fmt_char(&f, '\n');
    fmt_flush(&f, 2);
}

/* Parse a decimal integer in [min, max]; returns 0 on success. */
static int parse_int(const char *s, long min, long max, long *out) {
    long v = 0;
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000000L)
            return -1;
        v = v * 10 + (*s - '0');
    }
    if (neg)
        v = -v;
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static void parse_one(enum option_id id, const char *value) {
    const struct option_row *row = &rows[id];
    if (row->kind == STRING) {
        if (*value)
            string_values[id] = value;
        return;
    }
    long v;
    if (parse_int(value, row->min, row->max, &v) != 0) {
        char why[128];
        struct fmt f = FMT_INIT(why);
        if (row->kind == BOOL) {
            fmt_str(&f, "expected 0 or 1");
        } else {
            fmt_str(&f, "expected an integer from ");
            fmt_i64(&f, row->min);
            fmt_str(&f, " to ");
            fmt_i64(&f, row->max);
        }
        why[f.len < sizeof why ? f.len : sizeof why - 1] = 0;
        warn_invalid(row, value, why);
        return;
    }
    int_values[id] = v;
}

void options_init(char **env) {
    for (int i = 0; i < OPT_COUNT; i++)
        int_values[i] = rows[i].def;
    for (; env && *env; env++) {
        const char *e = *env;
        if (e[0] != 'O' || e[1] != 'S' || e[2] != 'C' || e[3] != 'A' || e[4] != 'R' || e[5] != '_')
            continue;
        for (int i = 0; i < OPT_COUNT; i++) {
            const char *n = rows[i].env, *p = e;
            while (*n && *n == *p) {
                n++;
                p++;
            }
            if (!*n && *p == '=') {
                parse_one((enum option_id)i, p + 1);
                break;
            }
        }
    }
}

long options_int(enum option_id id) { return int_values[id]; }
const char *options_string(enum option_id id) { return string_values[id]; }
