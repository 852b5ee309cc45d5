/* A program with a heap of about 10 MiB crashes (SIGSEGV): its core dump must stay about the
 * size of that heap (Oscar's reservations and revoked pages are not dumped), and a debugger
 * must read a live object through its address from it. Prints the object's address first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJECTS 10000

char *volatile marked; /* the live object the debugger reads */

int main(void) {
    static char *objs[OBJECTS];
    for (int i = 0; i < OBJECTS; i++) {
        objs[i] = malloc(1000);
        memset(objs[i], 'a' + i % 26, 1000);
    }
    for (int i = 0; i < OBJECTS; i += 2)
        free(objs[i]); /* revoked pages too */
    char *big = malloc(1 << 20);
    memset(big, 'b', 1 << 20);
    marked = malloc(64);
    strcpy(marked, "oscar core dump marker");
    printf("marked %p\n", (void *)marked);
    fflush(stdout);
    *(volatile int *)16 = 1; /* crash */
    printf("NOT REACHED\n");
    return 0;
}
