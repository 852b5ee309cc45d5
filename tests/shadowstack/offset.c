/* Built with `oscar cc` only: prints the shadow offset the runtime uses for code built with
 * --offset=random (the fixed one, -2 TiB, when no such code is linked in); argv[1] "write":
 * tries to change it (the page is read-only once the offset is drawn). */
#include <stdio.h>
#include <string.h>

extern long __oscar_pss_offset[];

int main(int argc, char **argv) {
    printf("%ld\n", __oscar_pss_offset[0]);
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "write"))
        __oscar_pss_offset[0] = 0;
    return 0;
}
