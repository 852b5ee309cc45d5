/* A region (arena) allocator: many sub-objects carved from ONE malloc'd block, all freed at
 * once. Oscar's malloc already protects this shape: freeing the block revokes its pages, so
 * a stale pointer to any sub-object faults.
 *   custom_region correct   use the region, destroy it, print checksums
 *   custom_region uaf       read a sub-object after the region was destroyed */
#include "common.h"

#include <string.h>

struct region {
    char *block;
    size_t used, cap;
};

static void region_init(struct region *r, size_t cap) {
    r->block = malloc(cap);
    r->used = 0;
    r->cap = cap;
}

static void *region_alloc(struct region *r, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (r->used + n > r->cap)
        return NULL;
    void *p = r->block + r->used;
    r->used += n;
    return p;
}

static void region_destroy(struct region *r) { free(r->block); }

struct node {
    struct node *next;
    int value;
    char name[20];
};

int main(int argc, char **argv) {
    test_init();
    struct region r;
    region_init(&r, 64 << 10);
    struct node *head = NULL, *middle = NULL;
    for (int i = 0; i < 1000; i++) {
        struct node *n = region_alloc(&r, sizeof *n);
        check(n != NULL, "region_alloc");
        n->value = i * 3;
        snprintf(n->name, sizeof n->name, "node%d", i);
        n->next = head;
        head = n;
        if (i == 500)
            middle = n;
    }
    long sum = 0;
    for (struct node *n = head; n; n = n->next)
        sum += n->value;
    printf("sum %ld middle %s\n", sum, middle->name);
    region_destroy(&r);
    if (argc > 1 && !strcmp(argv[1], "uaf")) {
        print_ptr("node", middle);
        printf("stale %s\n", middle->name);
        printf("NOT REACHED\n");
    }
    return test_finish();
}
