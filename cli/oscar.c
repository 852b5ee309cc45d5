/* oscar: run a program under the Oscar allocator.
 *   oscar run [OPTIONS] [--] PROGRAM [ARGS...]   preload liboscar.so (after any existing
 *                                               LD_PRELOAD); each option sets an OSCAR_* variable
 *   oscar --help | --version | options --markdown
 * The settings and the run options (--mode=..., --stats, --stack-depth=N, ...) come from
 * src/base/options.def, the same table the library parses: a row OSCAR_STACK_DEPTH is the
 * option --stack-depth. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef OSCAR_VERSION
#define OSCAR_VERSION "unknown"
#endif
#ifndef OSCAR_INSTALLED_LIB
#define OSCAR_INSTALLED_LIB ""
#endif

struct option_row {
    const char *env, *kind;
    long def, min, max;
    const char *choices, *desc;
};
static const struct option_row rows[] = {
#define OSCAR_OPTION(id, env, kind, def, min, max, choices, desc) {env, #kind, def, min, max, choices, desc},
#include "base/options.def"
#undef OSCAR_OPTION
};
#define NROWS (sizeof rows / sizeof rows[0])

static void range_text(const struct option_row *r, char *buf, size_t cap) {
    if (!strcmp(r->kind, "STRING"))
        snprintf(buf, cap, "path");
    else if (!strcmp(r->kind, "CHOICE")) {
        /* "a|b" reads "a or b" (and keeps Markdown tables intact). */
        size_t n = 0;
        for (const char *c = r->choices; *c && n + 5 < cap; c++) {
            if (*c == '|') {
                memcpy(buf + n, " or ", 4);
                n += 4;
            } else {
                buf[n++] = *c;
            }
        }
        buf[n] = 0;
    }
    else if (!strcmp(r->kind, "BOOL"))
        snprintf(buf, cap, "0 or 1");
    else
        snprintf(buf, cap, "%ld..%ld", r->min, r->max);
}

static void default_text(const struct option_row *r, char *buf, size_t cap) {
    if (!strcmp(r->kind, "STRING"))
        snprintf(buf, cap, "unset");
    else if (!strcmp(r->kind, "CHOICE")) {
        const char *c = r->choices;
        for (long n = r->def; n > 0 && *c; c++)
            n -= *c == '|';
        snprintf(buf, cap, "%.*s", (int)strcspn(c, "|"), c);
    }
    else
        snprintf(buf, cap, "%ld", r->def);
}

/* The run option of a row: OSCAR_STACK_DEPTH is --stack-depth (without the dashes here). */
static void flag_name(const struct option_row *r, char *buf, size_t cap) {
    const char *e = r->env + (strncmp(r->env, "OSCAR_", 6) ? 0 : 6);
    size_t n = 0;
    for (; *e && n + 1 < cap; e++)
        buf[n++] = *e == '_' ? '-' : (char)(*e >= 'A' && *e <= 'Z' ? *e - 'A' + 'a' : *e);
    buf[n] = 0;
}

/* "--stack-depth=N", "--stats, --no-stats", "--mode=strict|fast". */
static void flag_synopsis(const struct option_row *r, char *buf, size_t cap) {
    char name[64];
    flag_name(r, name, sizeof name);
    if (!strcmp(r->kind, "BOOL"))
        snprintf(buf, cap, "--%s, --no-%s", name, name);
    else if (!strcmp(r->kind, "CHOICE"))
        snprintf(buf, cap, "--%s=%s", name, r->choices);
    else if (!strcmp(r->kind, "STRING"))
        snprintf(buf, cap, "--%s=PATH", name);
    else
        snprintf(buf, cap, "--%s=N", name);
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: oscar run [OPTIONS] [--] PROGRAM [ARGS...]   run PROGRAM with Oscar as its malloc\n"
            "       oscar gdb [OPTIONS] [--] PROGRAM [ARGS...]   the same under gdb (SIGPWR, Oscar's\n"
            "                                          stops, passed on without stopping)\n"
            "       oscar symbolize [OPTIONS] < REPORT      file:line for a saved report's frames\n"
            "       oscar cc [--mode=check|overwrite] [--offset=fixed|random|immediate] -- gcc|g++ ARGS...\n"
            "                                          build with parallel shadow stacks\n"
            "       oscar --help | --version\n"
            "       oscar options --markdown           the settings as a Markdown table\n\n"
            "Oscar catches heap use-after-free and double free. Modes: strict (every object\n"
            "on a shadow page of its own, revoked when freed), fast (objects share shadow\n"
            "pages), protect (freed objects are zeroed and reused only once a conservative\n"
            "mark finds no pointer to them).\n\n"
            "Options of run and gdb, each setting the environment variable after it for PROGRAM\n"
            "(an option wins over the variable already set; '--opt VALUE' works too):\n");
    for (size_t i = 0; i < NROWS; i++) {
        char flag[256], range[64], def[64];
        flag_synopsis(&rows[i], flag, sizeof flag);
        range_text(&rows[i], range, sizeof range);
        default_text(&rows[i], def, sizeof def);
        fprintf(out, "  %-30s %s (default %s; %s)\n      %s\n", flag, rows[i].env, def, range,
                rows[i].desc);
    }
    fprintf(out, "\nThe library is found in OSCAR_LIBRARY, next to this program, or at its\n"
                 "installed location. Exit status: PROGRAM's own; 2 for a usage error; 126 or\n"
                 "127 when PROGRAM cannot be run. The manual page oscar(1) has reports and examples.\n");
}

static void markdown(void) {
    printf("| setting | default | values | meaning |\n| --- | --- | --- | --- |\n");
    for (size_t i = 0; i < NROWS; i++) {
        char range[64], def[64];
        range_text(&rows[i], range, sizeof range);
        default_text(&rows[i], def, sizeof def);
        printf("| `%s` | %s | %s | %s |\n", rows[i].env, def, range, rows[i].desc);
    }
}

static int readable(const char *p) { return p && *p && access(p, R_OK) == 0; }

/* Where is liboscar.so? OSCAR_LIBRARY, then the build tree, then the install prefix. */
static const char *find_library(char *buf, size_t cap) {
    const char *env = getenv("OSCAR_LIBRARY");
    if (env && *env) {
        if (!readable(env)) {
            fprintf(stderr, "oscar: OSCAR_LIBRARY=%s is not a readable file\n", env);
            return NULL;
        }
        return env;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *dir = dirname(self);
        const char *candidates[] = {"%s/../src/liboscar.so", "%s/../lib/liboscar.so",
                                    "%s/../lib/x86_64-linux-gnu/liboscar.so",
                                    "%s/liboscar.so"};
        for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
            snprintf(buf, cap, candidates[i], dir);
            char real[PATH_MAX];
            if (readable(buf) && realpath(buf, real)) {
                snprintf(buf, cap, "%s", real);
                return buf;
            }
        }
    }
    if (readable(OSCAR_INSTALLED_LIB))
        return OSCAR_INSTALLED_LIB;
    fprintf(stderr, "oscar: cannot find liboscar.so; set OSCAR_LIBRARY to its path\n");
    return NULL;
}

static const struct option_row *find_flag(const char *name, size_t len) {
    for (size_t i = 0; i < NROWS; i++) {
        char flag[64];
        flag_name(&rows[i], flag, sizeof flag);
        if (strlen(flag) == len && !strncmp(flag, name, len))
            return &rows[i];
    }
    return NULL;
}

/* NULL if value is valid for the row, else why not (the library's own words). */
static const char *invalid_value(const struct option_row *r, const char *value, char *why,
                                 size_t cap) {
    if (!strcmp(r->kind, "STRING")) {
        if (strlen(value) > 1023)
            return "longer than 1023 bytes";
        return NULL;
    }
    if (!strcmp(r->kind, "CHOICE")) {
        size_t n = strlen(value);
        for (const char *c = r->choices; *c;) {
            size_t len = strcspn(c, "|");
            if (len == n && n && !strncmp(c, value, n))
                return NULL;
            c += len + (c[len] == '|');
        }
        snprintf(why, cap, "expected one of %s", r->choices);
        return why;
    }
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    int bad = !*value || *end || errno || v < r->min || v > r->max ||
              !((*value >= '0' && *value <= '9') || *value == '-');
    if (!bad)
        return NULL;
    if (!strcmp(r->kind, "BOOL"))
        snprintf(why, cap, "expected 0 or 1");
    else
        snprintf(why, cap, "expected an integer from %ld to %ld", r->min, r->max);
    return why;
}

/* Options before PROGRAM: each sets its OSCAR_* variable. Returns the index of PROGRAM in
 * argv, or -1 after printing the error (or -2 after --help). */
static int parse_run_options(int argc, char **argv) {
    int i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            return i + 1;
        if (a[0] != '-' || !a[1])
            return i;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -2;
        }
        if (a[1] != '-') {
            fprintf(stderr, "oscar: run: unknown option '%s' (`oscar --help` lists them)\n", a);
            return -1;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const char *value = eq ? eq + 1 : NULL;
        const struct option_row *r = find_flag(name, len);
        if (!r && !value && len > 3 && !strncmp(name, "no-", 3)) {
            r = find_flag(name + 3, len - 3);
            if (r && !strcmp(r->kind, "BOOL"))
                value = "0";
            else
                r = NULL;
        }
        if (!r) {
            fprintf(stderr, "oscar: run: unknown option '--%.*s' (`oscar --help` lists them)\n",
                    (int)len, name);
            return -1;
        }
        if (!value) {
            if (!strcmp(r->kind, "BOOL")) {
                value = "1";
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                fprintf(stderr, "oscar: run: option '--%.*s' needs a value (%s)\n", (int)len,
                        name, r->env);
                return -1;
            }
        }
        char why[128];
        const char *bad = invalid_value(r, value, why, sizeof why);
        if (bad) {
            fprintf(stderr, "oscar: run: --%.*s=%s is invalid (%s)\n", (int)len, name, value,
                    bad);
            return -1;
        }
        if (setenv(r->env, value, 1) != 0) {
            perror("oscar: setenv");
            return -1;
        }
    }
    return i;
}

/* The options and PROGRAM of `oscar run` and `oscar gdb`: PROGRAM's index in argv, or -1 -
 * the exit status to return (0 after --help, 2 after an error, said). */
static int program_at(int argc, char **argv, const char *what) {
    int i = parse_run_options(argc, argv);
    if (i == -2)
        return -1;
    if (i < 0)
        return -1 - 2;
    if (i >= argc) {
        fprintf(stderr, "oscar: %s: no program given\n", what);
        usage(stderr);
        return -1 - 2;
    }
    return i;
}

/* oscar gdb [OPTIONS] [--] PROGRAM [ARGS...]: PROGRAM under gdb, with Oscar preloaded into
 * PROGRAM only (gdb's `set environment`: gdb itself runs without it) and SIGPWR passed on
 * without a stop: Oscar's stops of the world park threads with it (protect mode's marks, a
 * fork with threads in every mode), and gdb stopped at each one. A fault stays gdb's to
 * show: a use after free stops there first, and `continue` prints Oscar's report. */
static int gdb(int argc, char **argv) {
    int i = program_at(argc, argv, "gdb");
    if (i < 0)
        return -1 - i;
    char buf[PATH_MAX], env[PATH_MAX + 64];
    const char *lib = find_library(buf, sizeof buf);
    if (!lib)
        return 2;
    snprintf(env, sizeof env, "set environment LD_PRELOAD=%s", lib);
    char **args = calloc((size_t)(argc - i) + 9, sizeof *args);
    if (!args) {
        perror("oscar");
        return 2;
    }
    int n = 0;
    args[n++] = (char *)"gdb";
    args[n++] = (char *)"-q";
    args[n++] = (char *)"-ex";
    args[n++] = env;
    args[n++] = (char *)"-ex";
    args[n++] = (char *)"handle SIGPWR nostop noprint pass";
    args[n++] = (char *)"--args";
    for (int k = i; k < argc; k++)
        args[n++] = argv[k];
    args[n] = NULL;
    execvp("gdb", args);
    fprintf(stderr, "oscar: gdb: cannot run gdb: %s\n", strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

static int run(int argc, char **argv) {
    int i = program_at(argc, argv, "run");
    if (i < 0)
        return -1 - i;
    char buf[PATH_MAX];
    const char *lib = find_library(buf, sizeof buf);
    if (!lib)
        return 2;
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *preload = malloc(len);
    if (!preload) {
        perror("oscar");
        return 2;
    }
    /* Appended after what is already preloaded, so tools like sanitizers stay first. */
    if (old && *old)
        snprintf(preload, len, "%s:%s", old, lib);
    else
        snprintf(preload, len, "%s", lib);
    setenv("LD_PRELOAD", preload, 1);
    execvp(argv[i], argv + i);
    fprintf(stderr, "oscar: cannot run %s: %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

/* oscar cc [--mode=check|overwrite] -- gcc ARGS...: parallel shadow stacks (docs/shadow-stacks.md).
 * The driver is shadowstack/oscar-cc: in the build tree or under libexec/oscar. */
static int cc(char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        const char *dir = dirname(self);
        const char *where[] = {"%s/../shadowstack/oscar-cc", "%s/../libexec/oscar/oscar-cc"};
        for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
            snprintf(path, sizeof path, where[i], dir);
            if (access(path, X_OK) == 0) {
                argv[0] = path;
                execv(path, argv);
            }
        }
    }
    fprintf(stderr, "oscar: cc: cannot find the driver oscar-cc next to this program\n");
    return 127;
}

/* oscar symbolize [OPTIONS] < report.txt: file:line for a saved report's frames, offline
 * (tools/oscar-symbolize.py, run with addr2line; installed as libexec/oscar/oscar-symbolize,
 * else found in the source tree this program was built from). */
static int symbolize(char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char src[] = __FILE__; /* <source>/cli/oscar.c */
    const char *src_root = dirname(dirname(src));
    if (n > 0) {
        self[n] = 0;
        snprintf(path, sizeof path, "%s/../libexec/oscar/oscar-symbolize", dirname(self));
        if (access(path, X_OK) != 0)
            snprintf(path, sizeof path, "%s/tools/oscar-symbolize.py", src_root);
        argv[-1] = (char *)"python3"; /* argv is main's argv + 1: "python3 SCRIPT ARGS..." */
        argv[0] = path;
        execvp("python3", argv - 1);
    }
    fprintf(stderr, "oscar: symbolize: cannot run tools/oscar-symbolize.py with python3: %s\n",
            strerror(errno));
    return 127;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("oscar %s\n", OSCAR_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "options") && argc == 3 && !strcmp(argv[2], "--markdown")) {
        markdown();
        return 0;
    }
    if (!strcmp(argv[1], "run"))
        return run(argc - 2, argv + 2);
    if (!strcmp(argv[1], "gdb"))
        return gdb(argc - 2, argv + 2);
    if (!strcmp(argv[1], "cc"))
        return cc(argv + 1);
    if (!strcmp(argv[1], "symbolize"))
        return symbolize(argv + 1);
    fprintf(stderr, "oscar: unknown %s '%s' (`oscar --help` lists them)\n",
            argv[1][0] == '-' ? "option" : "command", argv[1]);
    return 2;
}
