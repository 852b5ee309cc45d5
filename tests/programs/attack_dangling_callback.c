/* Dangling function pointer refilled by attacker data: a cancelled timer is freed but stays
 * queued; the attacker's same-size request refills it with the address of attacker().
 * Published: Oscar paper (Dang, Maniatis, Wagner, USENIX Security 2017), Figure 1;
 * MITRE CWE-416.
 * Primitive: use after free read of a function pointer -> control flow hijack. */
#include <string.h>
#include "common.h"

struct timer { void (*fire)(void *); void *arg; char name[16]; };

static void tick(void *arg) { printf("tick %s\n", (const char *)arg); }
static void attacker(void *arg) {
    (void)arg;
    printf("ATTACK SUCCEEDED: control flow reached attacker()\n");
}

int main(void) {
    test_init();
    printf("dangling callback: freed timer refilled with attacker data\n");
    struct timer *t = malloc(sizeof *t);
    t->fire = tick;
    t->arg = "t1";
    strcpy(t->name, "heartbeat");
    struct timer *queue[1] = {t};
    print_ptr("victim", t);
    free(t); /* BUG: cancelled, but left in the queue */
    void *request[4] = {(void *)attacker, NULL, NULL, NULL}; /* attacker's bytes */
    void *buf = malloc(sizeof request);
    memcpy(buf, request, sizeof request);
    queue[0]->fire(queue[0]->arg); /* the timer fires */
    printf("attack failed\n");
    return 0;
}
