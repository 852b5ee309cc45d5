/* malloc_trim returns 1 when memory was given back to the system, 0 otherwise (glibc's
 * contract). Frees a heap of small and large objects, then trims twice: the first call has
 * something to give back, the second has nothing left. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 4000
#define LARGE 32

int main(void) {
    static char *small[SMALL], *large[LARGE];
    for (int i = 0; i < SMALL; i++) {
        small[i] = malloc(1000);
        memset(small[i], 1, 1000);
    }
    for (int i = 0; i < LARGE; i++) {
        large[i] = malloc(256 << 10);
        memset(large[i], 2, 256 << 10);
    }
    for (int i = 0; i < LARGE; i++) {
        free(large[i]);
        large[i] = NULL; /* (protect mode: a pointer left here keeps the object quarantined) */
    }
    for (int i = 0; i < SMALL; i++) {
        free(small[i]);
        small[i] = NULL;
    }
    printf("first trim %d\n", malloc_trim(0));
    printf("second trim %d\n", malloc_trim(0));
    return 0;
}
