/* A pointer held only in a completion ring the kernel shares with the program: the user data
 * of a finished request the program has not reaped yet. "uring": an io_uring no-op whose
 * completion (its user_data) waits in the completion queue; "aio": a Linux AIO write to
 * /dev/null whose io_event (its data) waits in the AIO ring io_setup mapped. Both rings are
 * memory of the process (shared mappings of a kernel file), and the program reads the pointer
 * back from there: a mark must read them. Raw system calls, as liburing and libaio make.
 * Prints held_reused (how often a new allocation of the object's class was the freed object
 * while the completion waited), then whether the completion still carried the freed address
 * ("completion_returns_freed 1"), then released_reused once the completion is reaped and its
 * slot overwritten. With "control" the request carries 0: held_reused must be > 0.
 * "uring overflow": the completion queue (8 entries) is full first, so the completion waits
 * in the kernel's overflow list (IORING_FEAT_NODROP), outside the ring: the kernel lists it in
 * the ring's /proc/self/fdinfo entry, where a mark must read it.
 * "uring buffer": no completion, but the object registered as a fixed buffer of the ring
 * (IORING_REGISTER_BUFFERS), then freed: the kernel keeps its address and may still read or
 * write there (a READ_FIXED into it), so it must not become another object; fdinfo lists it.
 * "uring buffer busy": the same while another thread keeps the ring busy with no-ops (the
 * kernel lists the buffers only when it gets the ring's lock at once).
 * Prints "unsupported <why>" and exits 0 where the kernel refuses the ring. */
#include "protect_common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- io_uring, by its system calls */

struct uring {
    int fd;
    unsigned char *sq, *cq;
    struct io_uring_sqe *sqes;
    struct io_uring_params p;
};

static int uring_open(struct uring *u) {
    memset(u, 0, sizeof *u);
    u->fd = (int)syscall(__NR_io_uring_setup, 4, &u->p);
    if (u->fd < 0)
        return -1;
    size_t sq_len = u->p.sq_off.array + u->p.sq_entries * sizeof(unsigned);
    size_t cq_len = u->p.cq_off.cqes + u->p.cq_entries * sizeof(struct io_uring_cqe);
    u->sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
                 IORING_OFF_SQ_RING);
    u->cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
                 IORING_OFF_CQ_RING);
    u->sqes = mmap(NULL, u->p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
    if (u->sq == MAP_FAILED || u->cq == MAP_FAILED || u->sqes == MAP_FAILED)
        return -1;
    return 0;
}

/* Submit a no-op carrying `data` and wait until its completion is posted (not reaped); the
 * submission entry is cleared once consumed. */
static int uring_nop(struct uring *u, uint64_t data) {
    _Atomic unsigned *tail = (_Atomic unsigned *)(u->sq + u->p.sq_off.tail);
    unsigned mask = *(unsigned *)(u->sq + u->p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(u->sq + u->p.sq_off.array);
    unsigned t = atomic_load_explicit(tail, memory_order_relaxed), i = t & mask;
    memset(&u->sqes[i], 0, sizeof u->sqes[i]);
    u->sqes[i].opcode = IORING_OP_NOP;
    u->sqes[i].user_data = data;
    array[i] = i;
    atomic_store_explicit(tail, t + 1, memory_order_release);
    int r = (int)syscall(__NR_io_uring_enter, u->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    /* The kernel has consumed the entry: its copy of the data is the completion's alone. */
    memset(&u->sqes[i], 0, sizeof u->sqes[i]);
    return r;
}

/* Reap one completion: its user_data. */
static uint64_t uring_reap(struct uring *u) {
    _Atomic unsigned *head = (_Atomic unsigned *)(u->cq + u->p.cq_off.head);
    _Atomic unsigned *tail = (_Atomic unsigned *)(u->cq + u->p.cq_off.tail);
    unsigned mask = *(unsigned *)(u->cq + u->p.cq_off.ring_mask);
    unsigned h = atomic_load_explicit(head, memory_order_relaxed);
    if (h == atomic_load_explicit(tail, memory_order_acquire))
        return 0;
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(u->cq + u->p.cq_off.cqes);
    uint64_t data = cqes[h & mask].user_data;
    atomic_store_explicit(head, h + 1, memory_order_release);
    return data;
}

/* ---- Linux AIO, by its system calls */

static aio_context_t aio_ctx;
static int null_fd;

static int aio_open(void) {
    null_fd = open("/dev/null", O_WRONLY);
    return null_fd < 0 ? -1 : (int)syscall(__NR_io_setup, 4, &aio_ctx);
}

/* A write to /dev/null carrying `data`: it completes at once, its event left in the ring. */
static int aio_write_null(uint64_t data) {
    static char byte = 'x';
    struct iocb cb = {.aio_data = data, .aio_lio_opcode = IOCB_CMD_PWRITE,
                      .aio_fildes = (uint32_t)null_fd, .aio_buf = (uint64_t)(uintptr_t)&byte,
                      .aio_nbytes = 1};
    struct iocb *list[1] = {&cb};
    return (int)syscall(__NR_io_submit, aio_ctx, 1, list) == 1 ? 0 : -1;
}

static uint64_t aio_reap(void) {
    struct io_event ev;
    struct timespec none = {0, 0};
    return syscall(__NR_io_getevents, aio_ctx, 1, 1, &ev, &none) == 1 ? ev.data : 0;
}

/* ---- the check */

static int uring;
static struct uring u;

static int submit(uint64_t data) {
    return uring ? (uring_nop(&u, data) == 1 ? 0 : -1) : aio_write_null(data);
}
static uint64_t reap(void) { return uring ? uring_reap(&u) : aio_reap(); }

/* The request's data: the object (masked here, raw only in the ring), or 0 (control). */
__attribute__((noinline)) static int submit_masked(uintptr_t m) {
    return submit(control ? 0 : (uint64_t)(m ^ MASK));
}

/* The object as a fixed buffer of the ring (unless control), freed, the class churned; then
 * the buffer unregistered and the class churned again. */
__attribute__((noinline)) static int register_masked(struct uring *r, uintptr_t m) {
    struct iovec iov = {(void *)(m ^ MASK), OBJ_SIZE};
    return (int)syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_BUFFERS, &iov, 1);
}

static atomic_int busy_stop;

static void *keep_busy(void *arg) {
    struct uring *r = arg;
    while (!atomic_load(&busy_stop)) {
        uring_nop(r, 0);
        uring_reap(r);
    }
    return NULL;
}

static int registered_buffer(struct uring *r, int busy) {
    uintptr_t m = make_object();
    if (!control && register_masked(r, m) != 0) {
        printf("unsupported IORING_REGISTER_BUFFERS: %s\n", strerror(errno));
        return 0;
    }
    free_object(m);
    clear_stack();
    pthread_t t;
    if (busy)
        pthread_create(&t, NULL, keep_busy, r);
    int held = churn(m, ROUNDS);
    if (busy) {
        atomic_store(&busy_stop, 1);
        pthread_join(t, NULL);
    }
    printf("held_reused %d\n", held);
    if (!control)
        syscall(__NR_io_uring_register, r->fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    uring = argc > 1 && strcmp(argv[1], "uring") == 0;
    if (uring ? uring_open(&u) != 0 : aio_open() != 0) {
        printf("unsupported %s: %s\n", uring ? "io_uring_setup" : "io_setup", strerror(errno));
        return 0;
    }
    int overflow = uring && argc > 2 && strcmp(argv[2], "overflow") == 0;
    if (uring && argc > 2 && strcmp(argv[2], "buffer") == 0)
        return registered_buffer(&u, argc > 3 && strcmp(argv[3], "busy") == 0);
    if (overflow && !(u.p.features & IORING_FEAT_NODROP)) {
        printf("unsupported overflow: no IORING_FEAT_NODROP\n");
        return 0;
    }
    for (unsigned i = 0; overflow && i < u.p.cq_entries; i++)
        submit(0); /* (the ring full of completions carrying 0) */
    uintptr_t m = make_object();
    if (submit_masked(m) != 0) {
        printf("unsupported submit: %s\n", strerror(errno));
        return 0;
    }
    free_object(m);
    clear_stack();
    int held = churn(m, ROUNDS);
    uint64_t got = reap();
    for (unsigned i = 0; overflow && i < u.p.cq_entries; i++) {
        /* (the ring's completions first; the overflowed one enters it once there is room and
         * the ring is entered again) */
        syscall(__NR_io_uring_enter, u.fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
        got = reap();
    }
    printf("held_reused %d\n", held);
    printf("completion_returns_freed %d\n", !control && (got ^ MASK) == m);
    got = 0;
    /* The reaped slot still holds the value (a stale copy keeps the object, conservatively):
     * overwrite every slot of the ring with completions carrying 0 (io_uring's has 8, the AIO
     * ring fills its pages: 127 events). */
    for (int i = 0; i < 512; i++) {
        submit(0);
        reap();
    }
    clear_stack();
    printf("released_reused %d\n", released_after(m, churn(m, ROUNDS)));
    return 0;
}
