/* The Oscar paper's Figure 1: an object holding a function pointer is freed; the attacker
 * gets a same-sized allocation (glibc hands back the same chunk), fills it with the address of
 * attacker(), and the program then calls through the dangling pointer.
 * glibc: prints "ATTACKER CALLED". oscar: the load of s->callback faults first. */
#include <string.h>
#include "common.h"

struct session {
    void (*callback)(void);
    char name[24];
};

static void elmo(void) { printf("benign callback\n"); }
static void attacker(void) { printf("ATTACKER CALLED\n"); }

int main(void) {
    test_init();
    struct session *s = malloc(sizeof *s);
    if (!s)
        return 2;
    s->callback = elmo;
    strcpy(s->name, "elmo");
    s->callback();
    print_ptr("ptr", s);
    printf("size %zu\noffset 0\n", sizeof *s);
    free(s);

    /* The attacker's allocation: same size, filled with copies of &attacker. */
    void (**spray)(void) = malloc(sizeof(struct session));
    if (!spray)
        return 2;
    for (size_t i = 0; i < sizeof(struct session) / sizeof *spray; i++)
        spray[i] = attacker;
    print_ptr("spray", spray);
    print_ptr("access", s);

    s->callback(); /* dangling */
    printf("NOT REACHED\n");
    return 0;
}
