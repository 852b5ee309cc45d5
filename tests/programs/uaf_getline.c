/* Use after free of the line buffer getline() allocated inside libc. */
#define _GNU_SOURCE
#include <string.h>
#include "common.h"

int main(void) {
    test_init();
    static char text[] = "first line of the stream\nsecond line\n";
    FILE *f = fmemopen(text, strlen(text), "r");
    if (!f)
        return 2;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    if (n != 25 || strcmp(line, "first line of the stream\n") != 0)
        return 3;
    fclose(f);
    print_ptr("ptr", line);
    printf("offset 3\n");
    free(line);
    volatile char *q = line + 3;
    print_ptr("access", (const void *)q);
    char c = *q;
    printf("NOT REACHED %d\n", c);
    return 0;
}
