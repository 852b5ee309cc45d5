/* Like redis and nginx setting their process title: overwrite every environment string in
 * place, then allocate and exit. Oscar's string settings (OSCAR_STATS_FILE) must survive. */
#include "common.h"

#include <string.h>

extern char **environ;

int main(void) {
    test_init();
    for (char **e = environ; *e; e++)
        memset(*e, 'x', strlen(*e));
    void *p = malloc(100);
    check(p != NULL, "malloc after the environment was overwritten");
    free(p);
    printf("environment overwritten\n");
    return test_finish();
}
