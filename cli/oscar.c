/* oscar: run a program under the Oscar allocator.
 *   oscar run [--] PROGRAM [ARGS...]   preload liboscar.so (after any existing LD_PRELOAD)
 *   oscar --help | --version | options --markdown
 * The settings shown come from src/base/options.def, the same table the library parses. */
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

static void usage(FILE *out) {
    fprintf(out,
            "usage: oscar run [--] PROGRAM [ARGS...]   run PROGRAM with Oscar as its malloc\n"
            "       oscar --help | --version\n"
            "       oscar options --markdown           the settings as a Markdown table\n\n"
            "Oscar catches heap use-after-free and double free: every object lives on a\n"
            "shadow page of its own, revoked when it is freed.\n\n"
            "Settings (environment variables):\n");
    for (size_t i = 0; i < NROWS; i++) {
        char range[64], def[64];
        range_text(&rows[i], range, sizeof range);
        default_text(&rows[i], def, sizeof def);
        fprintf(out, "  %-18s %s (default %s; %s)\n", rows[i].env, rows[i].desc, def, range);
    }
    fprintf(out, "\nThe library is found in OSCAR_LIBRARY, next to this program, or at its\n"
                 "installed location.\n");
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

static int run(int argc, char **argv) {
    int i = 0;
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (i >= argc) {
        fprintf(stderr, "oscar: run: no program given\n");
        usage(stderr);
        return 2;
    }
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
    fprintf(stderr, "oscar: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
