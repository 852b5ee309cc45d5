/* Compiled by gcc under oscar (and under glibc) in the "real programs" test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char key[16];
    int value;
};

static int cmp(const void *a, const void *b) {
    const struct entry *x = a, *y = b;
    return strcmp(x->key, y->key);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    struct entry *e = malloc(sizeof *e * (size_t)n);
    for (int i = 0; i < n; i++) {
        snprintf(e[i].key, sizeof e[i].key, "k%07d", (i * 7919) % n);
        e[i].value = i;
    }
    qsort(e, (size_t)n, sizeof *e, cmp);
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += (long)e[i].value * (i + 1);
    printf("hello from a program built under oscar: %d entries, first %s, sum %ld\n", n, e[0].key, sum);
    free(e);
    return 0;
}
