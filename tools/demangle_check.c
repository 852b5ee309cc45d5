/* demangle_check: report/demangle.c on a list of names, one a line on stdin; prints each
 * demangled, or unchanged where the demangler gives no answer (as a report would print it).
 * An argument: the output buffer's size (default 4096). tests/test_demangle.py builds it and
 * compares its output with c++filt's:
 *     gcc -O2 -I src tools/demangle_check.c src/report/demangle.c -o /tmp/demangle_check
 *     nm -D --defined-only /usr/lib/x86_64-linux-gnu/libstdc++.so.6 | awk '{print $3}' \
 *         | /tmp/demangle_check */
#include "report/demangle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    static char line[65536];
    char out[4096];
    size_t cap = argc > 1 ? (size_t)atoi(argv[1]) : sizeof out; /* (a smaller buffer) */
    if (cap > sizeof out)
        cap = sizeof out;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        fputs(demangle(line, out, cap) ? out : line, stdout);
        fputc('\n', stdout);
    }
    return 0;
}
