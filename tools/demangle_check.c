/* demangle_check: report/demangle.c on a list of names, one a line on stdin; prints each
 * demangled, or unchanged where the demangler gives no answer (as a report would print it).
 * tests/test_demangle.py builds it and compares its output with c++filt's:
 *     gcc -O2 -I src tools/demangle_check.c src/report/demangle.c -o /tmp/demangle_check
 *     nm -D --defined-only /usr/lib/x86_64-linux-gnu/libstdc++.so.6 | awk '{print $3}' \
 *         | /tmp/demangle_check */
#include "report/demangle.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    static char line[65536];
    char out[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        fputs(demangle(line, out, sizeof out) ? out : line, stdout);
        fputc('\n', stdout);
    }
    return 0;
}
