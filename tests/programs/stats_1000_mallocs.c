/* Exactly 1000 mallocs and 1000 frees of 32 bytes; prints nothing (stdio would allocate). */
#include <stdlib.h>

int main(void) {
    void *p[1000];
    for (int i = 0; i < 1000; i++) {
        p[i] = malloc(32);
        if (!p[i])
            return 2;
        *(volatile char *)p[i] = 1;
    }
    for (int i = 0; i < 1000; i++)
        free(p[i]);
    return 0;
}
