/* A pointer only the kernel holds: the counter of an eventfd (an event loop that passes a
 * value with the wakeup: eventfd_write of an object's address, read back by the thread that
 * wakes). The program's own copy is masked (protect_common.h). Prints how often a new
 * allocation of the object's class was the freed object while the counter held its address
 * (held_reused), whether reading the counter gives the freed address back
 * (eventfd_returns_freed 1), then, the counter read and the address dropped, whether it is
 * handed out again (released_reused). Protect mode reads the counters of the program's
 * eventfds as roots (scan/kroots.h, /proc/self/fdinfo): held_reused is 0. With "raw" the
 * eventfd is made by the system call itself, not libc's function (found by the first mark);
 * with "dup" the counter is read through a copy of the descriptor, the first closed; with
 * "control" nothing is written: nothing holds the object, held_reused > 0. */
#include "protect_common.h"

#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) static void write_counter(int fd, uintptr_t masked) {
    uint64_t v = masked ^ MASK;
    if (write(fd, &v, sizeof v) != sizeof v) {
        perror("write");
        exit(2);
    }
    v = 0;
    __asm__ volatile("" : : "m"(v) : "memory");
}

/* The counter, read (and so reset) and masked at once. */
__attribute__((noinline)) static uintptr_t read_counter(int fd) {
    uint64_t v;
    if (read(fd, &v, sizeof v) != sizeof v) {
        perror("read");
        exit(2);
    }
    uintptr_t masked = (uintptr_t)v ^ MASK;
    v = 0;
    __asm__ volatile("" : : "m"(v) : "memory");
    return masked;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int raw = 0, copy = 0;
    for (int i = 1; i < argc; i++) {
        raw |= strcmp(argv[i], "raw") == 0;
        copy |= strcmp(argv[i], "dup") == 0;
    }
    int fd = raw ? (int)syscall(SYS_eventfd2, 0, 0) : eventfd(0, 0);
    if (fd < 0) {
        perror("eventfd");
        return 2;
    }
    if (copy) {
        int again = dup(fd);
        close(fd);
        fd = again;
    }
    uintptr_t m = make_object();
    if (!control)
        write_counter(fd, m);
    free_object(m);
    clear_stack();
    printf("held_reused %d\n", churn(m, ROUNDS));
    if (control)
        return 0;
    printf("eventfd_returns_freed %d\n", read_counter(fd) == m);
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}
