/* A bad out-pointer given to an allocation function: posix_memalign writes the object's address
 * through `out`, in the allocator's own code. Under glibc the program dies of SIGSEGV inside
 * libc, silently; under Oscar it dies of the same signal inside liboscar, and Oscar's fault
 * handler names the fault as one in its own code (`internal error: crash`) with the frames,
 * Oscar's and the program's: the line a crash of Oscar's own prints too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int give_bad_pointer(void **out) {
    return posix_memalign(out, 64, 100);
}

int main(void) {
    printf("before\n");
    fflush(stdout);
    void **out = (void **)(uintptr_t)0x18; /* (a page nobody maps) */
    int err = give_bad_pointer(out);
    printf("NOT REACHED %d\n", err);
    return 0;
}
