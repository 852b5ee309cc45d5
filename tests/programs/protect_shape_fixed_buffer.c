/* Protect mode, concurrent marks: the only pointer to a freed object moves between a live heap
 * object A, which the program writes, and a live heap object B registered with an io_uring as
 * a fixed buffer, which only the kernel writes: a READ_FIXED from a pipe puts the pointer in
 * B, a WRITE_FIXED takes it out again, a READ_FIXED of zeros clears B, and read(2) puts it
 * back in A. The kernel writes B through the pages it pinned, past the page tables: no write
 * fault, so the write tracking never listed B's page, and a round that read B before the
 * pointer came never read it again: the object was handed out again in 18 runs of 20.
 * A mark now reads a registered buffer's bytes at every stop (scan/kroots.c).
 * usage: protect_shape_fixed_buffer [control]   (see protect_common.h) */
#define _GNU_SOURCE
#include "protect_common.h"

#include <linux/io_uring.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

static int ring, pp[2], pz[2];
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;
static void *volatile *volatile A, *volatile *volatile B;
static atomic_int stop;

static void setup(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    ring = (int)syscall(SYS_io_uring_setup, 8, &p);
    if (ring < 0) {
        printf("unsupported io_uring: %s\n", strerror(errno));
        exit(0);
    }
    size_t sqsz = p.sq_off.array + p.sq_entries * 4;
    size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sqsz > cqsz ? sqsz : cqsz, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    sqes = mmap(0, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || sqes == MAP_FAILED)
        exit(2);
    sq_tail = (unsigned *)(sq + p.sq_off.tail);
    sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    sq_array = (unsigned *)(sq + p.sq_off.array);
    cq_head = (unsigned *)(sq + p.cq_off.head);
    cq_tail = (unsigned *)(sq + p.cq_off.tail);
    cq_mask = (unsigned *)(sq + p.cq_off.ring_mask);
    cqes = (struct io_uring_cqe *)(sq + p.cq_off.cqes);
    struct iovec iov = {(void *)B, 4096};
    if (syscall(SYS_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1) < 0) {
        printf("unsupported registered buffers: %s\n", strerror(errno));
        exit(0);
    }
}

/* One fixed read or write of B's first 8 bytes, waited for. */
static void fixed(int op, int fd) {
    unsigned t = *sq_tail, i = t & *sq_mask;
    struct io_uring_sqe *e = &sqes[i];
    memset(e, 0, sizeof *e);
    e->opcode = (uint8_t)op;
    e->fd = fd;
    e->addr = (uintptr_t)B;
    e->len = 8;
    sq_array[i] = i;
    __atomic_store_n(sq_tail, t + 1, __ATOMIC_RELEASE);
    syscall(SYS_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    unsigned h = *cq_head;
    while (h == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE))
        ;
    if (cqes[h & *cq_mask].res != 8)
        exit(6);
    __atomic_store_n(cq_head, h + 1, __ATOMIC_RELEASE);
}

static void spin(void) {
    for (volatile long i = 0; i < 200000; i++)
        ;
}

static void *mover(void *arg) {
    (void)arg;
    static const uint64_t zero = 0;
    while (!atomic_load(&stop)) {
        if (write(pp[1], (void *)A, 8) != 8) /* A -> pipe */
            exit(7);
        *A = NULL;
        fixed(IORING_OP_READ_FIXED, pp[0]); /* pipe -> B: only the kernel writes B */
        spin();
        fixed(IORING_OP_WRITE_FIXED, pp[1]); /* B -> pipe */
        if (write(pz[1], &zero, 8) != 8)
            exit(7);
        fixed(IORING_OP_READ_FIXED, pz[0]); /* zeros -> B */
        if (read(pp[0], (void *)A, 8) != 8) /* pipe -> A (tracked: a write fault) */
            exit(7);
        spin();
    }
    if (write(pz[1], &zero, 8) != 8)
        exit(7);
    fixed(IORING_OP_READ_FIXED, pz[0]);
    *A = NULL;
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    if (pipe(pp) || pipe(pz))
        return 2;
    B = aligned_alloc(4096, 4096);
    memset((void *)B, 0, 4096);
    A = malloc(64);
    memset((void *)A, 0, 64);
    setup();
    check_moved_by(A, mover, &stop, 3.0, 1.0);
    return 0;
}
