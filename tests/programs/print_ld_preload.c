/* Prints LD_PRELOAD as the program sees it (for the `oscar run` test). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    const char *v = getenv("LD_PRELOAD");
    printf("LD_PRELOAD=%s\n", v ? v : "(unset)");
    void *p = malloc(10);
    free(p);
    return 0;
}
