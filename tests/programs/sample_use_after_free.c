/* Protect mode with OSCAR_SAMPLE_RATE=1: every allocation of at most a page is sampled, so a
 * read through a freed object faults at once and is reported with both stacks (without
 * sampling, protect mode only makes it harmless: the read sees zeros). With the argument
 * "double", a double free; "realloc", a realloc's old block is read; "long-ago", see below. */
#include "common.h"

__attribute__((noinline)) static char *make(void) {
    char *p = malloc(40);
    strcpy(p, "sampled");
    return p;
}

__attribute__((noinline)) static void drop(char *p) { free(p); }

int main(int argc, char **argv) {
    test_init();
    const char *what = argc > 1 ? argv[1] : "read";
    char *p = make();
    if (strcmp(what, "realloc") == 0) {
        char *q = realloc(p, 4000);
        printf("moved %s\n", q);
    } else {
        drop(p);
        if (strcmp(what, "double") == 0)
            drop(p);
        /* 70,000 sampled objects between the free and the read: the record ring (65,536)
         * has given the object's record to a later one. */
        for (int i = 0; strcmp(what, "long-ago") == 0 && i < 70000; i++) {
            char *volatile q = malloc(32);
            q[0] = 1;
            free(q);
        }
    }
    printf("read %d\n", ((volatile char *)p)[3]);
    printf("NOT REACHED\n");
    return 0;
}
