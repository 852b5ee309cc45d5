/* options: see options.h. */
#include "base/options.h"
#include "base/fmt.h"
#include "base/messages.h"
#include "os/os.h"

#include <stddef.h>

enum option_kind { BOOL, INT, STRING, CHOICE };

struct option_row {
    const char *env;
    enum option_kind kind;
    long def, min, max;
    const char *choices; /* CHOICE: "a|b|c" */
};

static const struct option_row rows[OPT_COUNT] = {
#define OSCAR_OPTION(id, env, kind, def, min, max, choices, desc) [OPT_##id] = {env, kind, def, min, max, choices},
#include "base/options.def"
#undef OSCAR_OPTION
};

#define STRING_MAX 1024
/* The settings read from the environment. All set once by options_init, which oscar_init
 * runs under its init lock before any other layer reads a setting; read-only after. */
static struct {
    long int_values[OPT_COUNT];          /* each setting's value, the default if unset */
    const char *string_values[OPT_COUNT]; /* string settings: into string_copies, or NULL */
    /* Copies of string settings: programs that set their process title (redis, nginx)
     * write over the environment's memory, and the settings must outlive that. */
    char string_copies[OPT_COUNT][STRING_MAX];
} options_state;

/* Append the n-th name of "a|b|c". */
static void choice_name(struct fmt *f, const char *choices, long n) {
    for (; n > 0 && *choices; choices++)
        n -= *choices == '|';
    for (; *choices && *choices != '|'; choices++)
        fmt_char(f, *choices);
}

/* The index of value among "a|b|c", or -1. */
static long choice_index(const char *choices, const char *value) {
    long i = 0;
    for (const char *c = choices;; i++) {
        const char *v = value;
        while (*v && *c == *v) {
            c++;
            v++;
        }
        if (!*v && (*c == '|' || !*c))
            return i;
        while (*c && *c != '|')
            c++;
        if (!*c)
            return -1;
        c++;
    }
}

static void warn_invalid(const struct option_row *row, const char *value, const char *why) {
    char buf[512];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_BAD_SETTING);
    fmt_str(&f, row->env);
    fmt_char(&f, '=');
    fmt_str(&f, value);
    fmt_str(&f, " is invalid (");
    fmt_str(&f, why);
    fmt_str(&f, "); using default ");
    if (row->kind == CHOICE)
        choice_name(&f, row->choices, row->def);
    else if (row->kind == STRING)
        fmt_str(&f, "unset");
    else
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
        size_t n = 0;
        while (value[n] && n < STRING_MAX - 1)
            n++;
        if (value[n]) {
            warn_invalid(row, value, "longer than 1023 bytes");
            return;
        }
        if (n) {
            for (size_t i = 0; i <= n; i++)
                options_state.string_copies[id][i] = value[i];
            options_state.string_values[id] = options_state.string_copies[id];
        }
        return;
    }
    long v;
    if (row->kind == CHOICE ? (v = choice_index(row->choices, value)) < 0
                            : parse_int(value, row->min, row->max, &v) != 0) {
        char why[128];
        struct fmt f = FMT_INIT(why);
        if (row->kind == CHOICE) {
            fmt_str(&f, "expected one of ");
            fmt_str(&f, row->choices);
        } else if (row->kind == BOOL) {
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
    options_state.int_values[id] = v;
}

/* OSCAR_* names that are not runtime settings but belong to the oscar command. */
static const char *const not_settings[] = {"OSCAR_LIBRARY=", NULL};

/* A misspelt setting must not be silently ignored. */
static void warn_unknown(const char *e) {
    for (int i = 0; not_settings[i]; i++) {
        const char *n = not_settings[i], *p = e;
        while (*n && *n == *p) {
            n++;
            p++;
        }
        if (!*n)
            return;
    }
    char buf[256];
    struct fmt f = FMT_INIT(buf);
    msg_start(&f, MSG_NOT_A_SETTING);
    for (const char *p = e; *p && *p != '='; p++)
        fmt_char(&f, *p);
    fmt_str(&f, " is not an oscar setting (ignored; `oscar --help` lists them)\n");
    fmt_flush(&f, 2);
}

void options_init(char **env) {
    for (int i = 0; i < OPT_COUNT; i++)
        options_state.int_values[i] = rows[i].def;
    /* Secure execution (setuid, setgid, file capabilities): the environment belongs to a
     * less privileged user, who must not name files to write or change how the program
     * runs. Every setting keeps its default, silently, as glibc ignores MALLOC_ settings. */
    if (os_secure())
        return;
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
                goto next;
            }
        }
        warn_unknown(e);
    next:;
    }
}

long options_int(enum option_id id) { return options_state.int_values[id]; }
const char *options_string(enum option_id id) { return options_state.string_values[id]; }
