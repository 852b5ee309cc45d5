/* Stale pointer in a hash table entry: a handler entry is freed on removal but its bucket
 * still points to it; the attacker refills the chunk with a fake entry (matching id, NULL
 * next, attacker handler) and a lookup dispatches it.
 * Published: MITRE CWE-416; typical of e.g. CVE-2021-22555-style "stale object in a table"
 * write-ups; same-size refill: how2heap first_fit.c.
 * Primitive: use after free read of a chained entry -> control flow hijack. */
#include <string.h>
#include "common.h"

struct entry { struct entry *next; long id; void (*handler)(long); long hits; };

#define NBUCKETS 16
static struct entry *table[NBUCKETS];

static void status(long id) { printf("status handler for %ld\n", id); }
static void attacker(long id) {
    (void)id;
    printf("ATTACK SUCCEEDED: stale hash entry reached attacker()\n");
}

static struct entry *insert(long id, void (*h)(long)) {
    struct entry *e = malloc(sizeof *e);
    *e = (struct entry){table[id % NBUCKETS], id, h, 0};
    table[id % NBUCKETS] = e;
    return e;
}

static void dispatch(long id) {
    for (struct entry *e = table[id % NBUCKETS]; e; e = e->next)
        if (e->id == id) {
            e->hits++;
            e->handler(id);
            return;
        }
    printf("no handler for %ld\n", id);
}

int main(void) {
    test_init();
    printf("hash table: removed entry still in its bucket\n");
    insert(5, status);
    struct entry *e = insert(21, status); /* same bucket as 5 */
    dispatch(21);
    print_ptr("victim", e);
    free(e); /* BUG: removed without unlinking from table[5] */
    struct entry fake = {NULL, 21, attacker, 0};
    void *msg = malloc(sizeof fake); /* attacker's request */
    memcpy(msg, &fake, sizeof fake);
    dispatch(21);
    printf("attack failed\n");
    return 0;
}
