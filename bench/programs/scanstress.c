/* scanstress: a large live heap of small objects that point to each other, churned slowly,
 * so that a marking allocator (quarantine + conservative mark) must scan the whole live heap
 * on every mark while few objects are freed per byte scanned.
 *
 * LIVE_MIB MiB (requested bytes) of nodes of 32..256 bytes, linked in one ring (each holds
 * its two neighbours' addresses) and listed in a table; then REPLACEMENTS times a random node
 * is replaced by a new one of another size: the new node takes its place in the ring, the old
 * one is freed, so no pointer to it is left behind. Every node's payload is written; the final
 * walk of the ring checks it and gives the checksum.
 * usage: scanstress LIVE_MIB [REPLACEMENTS] */
#include <string.h>
#include "bench.h"

struct node {
    struct node *next, *prev;
    uint32_t size, slot;
    unsigned char payload[];
};

static struct node *make(uint64_t *seed, uint32_t slot) {
    uint32_t size = 32 + (uint32_t)(bench_rand(seed) % 225);
    struct node *n = malloc(size);
    n->size = size;
    n->slot = slot;
    memset(n->payload, (int)(slot & 0xff), size - sizeof *n);
    return n;
}

int main(int argc, char **argv) {
    long live_mib = bench_arg(argc, argv, 1, 200);
    long replacements = bench_arg(argc, argv, 2, 0);
    uint64_t seed = 0x243F6A8885A308D3ULL, allocations = 1;
    /* average node 144 bytes */
    long count = live_mib * (1L << 20) / 144;
    if (count < 2)
        count = 2;
    if (replacements == 0)
        replacements = 3 * count;
    struct node **table = malloc((size_t)count * sizeof *table);
    for (long i = 0; i < count; i++) {
        table[i] = make(&seed, (uint32_t)i);
        allocations++;
    }
    for (long i = 0; i < count; i++) {
        table[i]->next = table[(i + 1) % count];
        table[i]->prev = table[(i + count - 1) % count];
    }
    for (long r = 0; r < replacements; r++) {
        long i = (long)(bench_rand(&seed) % (uint64_t)count);
        struct node *old = table[i], *n = make(&seed, (uint32_t)i);
        allocations++;
        n->next = old->next;
        n->prev = old->prev;
        if (n->next == old) { /* a ring of one */
            n->next = n->prev = n;
        } else {
            n->prev->next = n;
            n->next->prev = n;
        }
        table[i] = n;
        free(old);
    }
    uint64_t sum = 0;
    struct node *p = table[0];
    for (long i = 0; i < count; i++, p = p->next) {
        if (p->payload[0] != (unsigned char)(p->slot & 0xff) ||
            p->payload[p->size - sizeof *p - 1] != (unsigned char)(p->slot & 0xff) ||
            table[p->slot] != p) {
            fprintf(stderr, "scanstress: node %ld of the ring is corrupt\n", i);
            return 1;
        }
        sum += p->size + p->slot;
    }
    if (p != table[0]) {
        fprintf(stderr, "scanstress: the ring is broken\n");
        return 1;
    }
    /* no freed node stays listed: a marking allocator would find it referenced */
    for (long i = 0; i < count; i++) {
        free(table[i]);
        table[i] = NULL;
    }
    free(table);
    bench_report(sum, allocations);
    return 0;
}
