/* A block of the program's heap whose page it makes unreadable or maps over, as a coroutine
 * library does with a guard page of a stack it carved from malloc, or a ring buffer with a
 * mirror mapped over its second half. Protect mode's marks read the heap's live objects
 * directly: they died of SIGSEGV in Oscar's own code on such a page (every kind of mark), and
 * a snapshot's child read a shared page mapped over the heap as it is now, not as of the
 * stop (a pointer moved from it meanwhile was seen nowhere).
 *
 * Argument: the shape
 *   none     the pointer in the block's second page, made PROT_NONE while the object is
 *            freed and churned, then readable again
 *   guard    the block's second page a guard region (MADV_GUARD_INSTALL, Linux 6.13; an
 *            ordinary page where the kernel refuses it), the pointer in its third page
 *   mapnone  the block's second page mapped over (mmap MAP_FIXED, PROT_NONE), the pointer in
 *            its third page
 *   overlay  a memfd page mapped over the block's second page (MAP_SHARED | MAP_FIXED); a
 *            thread moves the pointer between it and a global, back and forth
 * Prints held_reused and released_reused (protect_common.h). */
#define _GNU_SOURCE
#include "protect_common.h"

#include <sys/mman.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define PAGE 4096

static atomic_int stop;
static void *volatile global, *volatile *shared_slot;

static void *mover(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        move_word(shared_slot, &global);
        for (volatile int i = 0; i < 200; i++)
            ;
        move_word(&global, shared_slot);
        for (volatile int i = 0; i < 200; i++)
            ;
    }
    *shared_slot = NULL;
    global = NULL;
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *shape = argc > 1 ? argv[1] : "none";
    char *blk = aligned_alloc(PAGE, 4 * PAGE);
    if (!blk)
        return 1;
    memset(blk, 0, 4 * PAGE);
    void *volatile *slot = (void *volatile *)(blk + 2 * PAGE + 64);
    if (strcmp(shape, "none") == 0) {
        check_sealed_in((void *volatile *)(blk + PAGE + 64), blk + PAGE, PAGE, PROT_NONE);
    } else if (strcmp(shape, "guard") == 0) {
        madvise(blk + PAGE, PAGE, MADV_GUARD_INSTALL); /* (EINVAL before Linux 6.13) */
        check_held_in(slot);
    } else if (strcmp(shape, "mapnone") == 0) {
        if (mmap(blk + PAGE, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
            MAP_FAILED)
            return 1;
        check_held_in(slot);
    } else {
        int fd = memfd_create("overlay", 0);
        if (fd < 0 || ftruncate(fd, PAGE) != 0 ||
            mmap(blk + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
                MAP_FAILED)
            return 1;
        shared_slot = (void *volatile *)(blk + PAGE + 64);
        check_moved_by(&global, mover, &stop, 3.0, 1.0);
    }
    return 0;
}
