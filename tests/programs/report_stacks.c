/* A use after free whose three stacks name this file's functions: the access in
 * read_record, the free in drop_record, the allocation in make_record (each called from
 * main). The test checks each report frame by symbol and with addr2line. */
#include "common.h"

struct record {
    char name[40];
    long value;
};

__attribute__((noinline)) struct record *make_record(void) {
    struct record *r = malloc(sizeof *r);
    snprintf(r->name, sizeof r->name, "record");
    r->value = 42;
    return r;
}

__attribute__((noinline)) void drop_record(struct record *r) { free(r); }

__attribute__((noinline)) long read_record(struct record *r) { return r->value; }

int main(void) {
    test_init();
    struct record *r = make_record();
    print_ptr("ptr", r);
    drop_record(r);
    print_ptr("access", &r->value);
    long v = read_record(r);
    printf("NOT REACHED %ld\n", v);
    return 0;
}
