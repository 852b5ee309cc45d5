/* Protect mode with io_uring's kernel threads in the process: an io_uring polled by its own
 * kernel thread (IORING_SETUP_SQPOLL: iou-sqp-N), or a read of an empty pipe sent to an
 * io-wq worker (IOSQE_ASYNC: iou-wrk-N). Both are listed among the process's threads and
 * never take a signal: every stop of the world was refused while they lived, no mark ran,
 * nothing was handed out again and the quarantine grew without end (184 MB in seconds). They
 * run no code of the program's and are no longer asked to park. The plain check of a global
 * (protect_common.h): held while the pointer is there, handed out again once it is not.
 * usage: protect_io_workers sqpoll|async [control] */
#define _GNU_SOURCE
#include "protect_common.h"

#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static void *volatile hold;
static char buf[8];

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int sqpoll = argc > 1 && !strcmp(argv[1], "sqpoll");
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    if (sqpoll) {
        p.flags = IORING_SETUP_SQPOLL;
        p.sq_thread_idle = 100000; /* (ms: the thread polls for the whole run) */
    }
    int fd = (int)syscall(SYS_io_uring_setup, 8, &p), pfd[2];
    if (fd < 0) {
        printf("unsupported io_uring: %s\n", strerror(errno));
        return 0;
    }
    if (!sqpoll) {
        if (pipe(pfd))
            return 2;
        char *sq = mmap(0, p.sq_off.array + p.sq_entries * 4, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
        struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
        if (sq == MAP_FAILED || sqes == MAP_FAILED)
            return 2;
        unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *arr = (unsigned *)(sq + p.sq_off.array);
        memset(&sqes[0], 0, sizeof sqes[0]);
        sqes[0].opcode = IORING_OP_READ;
        sqes[0].fd = pfd[0];
        sqes[0].addr = (uintptr_t)buf;
        sqes[0].len = sizeof buf;
        sqes[0].flags = IOSQE_ASYNC; /* (to a worker at once: it waits there for the pipe) */
        arr[0] = 0;
        __atomic_store_n(tail, 1, __ATOMIC_RELEASE);
        if (syscall(SYS_io_uring_enter, fd, 1, 0, 0, NULL, 0) != 1)
            return 2;
    }
    check_held_in(&hold);
    return 0;
}
