/* Dangling pointer into a freed array of function pointers: a plugin's dispatch table is
 * freed on unload while the core keeps the pointer; the attacker refills the table's chunk.
 * Published: MITRE CWE-416 / CWE-825 (expired pointer dereference); Oscar paper, USENIX
 * Security 2017, Figure 1 (function pointer in a freed object).
 * Primitive: use after free read of a function pointer table -> control flow hijack. */
#include <string.h>
#include "common.h"

typedef void (*op_fn)(int);

static void op_read(int fd) { printf("read %d\n", fd); }
static void op_write(int fd) { printf("write %d\n", fd); }
static void attacker(int fd) {
    (void)fd;
    printf("ATTACK SUCCEEDED: dispatch through freed table reached attacker()\n");
}

static op_fn *g_ops; /* the core's pointer to the plugin's table */

int main(void) {
    test_init();
    printf("function pointer table: plugin table freed, still dispatched\n");
    op_fn *ops = malloc(4 * sizeof *ops);
    ops[0] = op_read;
    ops[1] = op_write;
    ops[2] = op_read;
    ops[3] = op_write;
    g_ops = ops;
    g_ops[1](3);
    print_ptr("victim", ops);
    free(ops); /* BUG: plugin unloaded, g_ops not cleared */
    op_fn spray[4] = {attacker, attacker, attacker, attacker};
    void *msg = malloc(sizeof spray); /* attacker's request */
    memcpy(msg, spray, sizeof spray);
    g_ops[1](4); /* dangling dispatch */
    printf("attack failed\n");
    return 0;
}
