/* A short program's use after free, in the shape of the Juliet suite's CWE-416 cases: main
 * calls a good function (allocate, use, free) and then a bad one (allocate, free, read what
 * was freed), printing through stdio as Juliet's printLine does (its buffer is one of the
 * first allocations). Protect mode makes the bad read harmless (it reads zeros) but saw it
 * only if the object was sampled, one allocation in 20,000: never in a run this short. The
 * first allocations of a process are all sampled (OSCAR_SAMPLE_FIRST), so it is reported.
 * usage: uaf_first_read char|int|struct */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int intOne;
    int intTwo;
} twoIntsStruct;

static void printLine(const char *line) {
    if (line)
        printf("%s\n", line);
}
static void printIntLine(int n) { printf("%d\n", n); }

static void good(void) {
    char *data = malloc(100 * sizeof(char));
    memset(data, 'A', 99);
    data[99] = '\0';
    printLine(data);
    free(data);
}

static void bad_char(void) {
    char *data = malloc(100 * sizeof(char));
    memset(data, 'A', 99);
    data[99] = '\0';
    free(data);
    printLine(data); /* the use after free */
}

static void bad_int(void) {
    int *data = malloc(100 * sizeof(int));
    for (int i = 0; i < 100; i++)
        data[i] = 5;
    free(data);
    printIntLine(data[0]); /* the use after free */
}

static void bad_struct(void) {
    twoIntsStruct *data = malloc(100 * sizeof(twoIntsStruct));
    for (int i = 0; i < 100; i++)
        data[i].intOne = data[i].intTwo = 1;
    free(data);
    printIntLine(data[0].intOne); /* the use after free */
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "char";
    srand((unsigned)time(NULL));
    printLine("Calling good()...");
    good();
    printLine("Finished good()");
    printLine("Calling bad()...");
    if (!strcmp(what, "int"))
        bad_int();
    else if (!strcmp(what, "struct"))
        bad_struct();
    else
        bad_char();
    printLine("Finished bad()");
    return 0;
}
