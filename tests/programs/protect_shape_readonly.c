/* Protect mode: the only pointer to a freed object lies in an anonymous page the program made
 * read-only after writing it (a table sealed with mprotect): still a root. See
 * protect_common.h. */
#include "protect_common.h"
#include <sys/mman.h>

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    void **page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uintptr_t m = make_object();
    page[7] = control ? NULL : (void *)(m ^ MASK);
    mprotect(page, 4096, PROT_READ);
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    mprotect(page, 4096, PROT_READ | PROT_WRITE);
    page[7] = NULL;
    clear_stack();
    report(held, churn(m, ROUNDS));
    return 0;
}
