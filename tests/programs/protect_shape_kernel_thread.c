/* Protect mode: the only pointer to a freed object is one the kernel keeps for a thread and
 * goes on using (os/kheld.h):
 *   tid     its clear-child-tid address (set_tid_address: the kernel zeroes a word there and
 *           wakes it when the thread exits)
 *   robust  the head of its robust futex list (set_robust_list: walked at its exit)
 *   rseq    its rseq area (rseq(2) through syscall(): the kernel writes the CPU number into
 *           it at every return to the thread and reads its rseq_cs)
 *   sud     its syscall user dispatch selector (prctl PR_SET_SYSCALL_USER_DISPATCH: read at
 *           every system call; a blocking byte there sends SIGSYS)
 * Before, the object was handed out again in every run under every kind of mark: the kernel
 * then zeroed a word of the next owner's bytes at the thread's exit (tid), walked them as a
 * list (robust), crashed the program (rseq) or killed it with SIGSYS (sud). tid and robust are
 * set by the program's own syscall instruction (the kernel tells those, however set); rseq
 * and sud through libc (export/'s wrappers note them). The registering thread is another one,
 * blocked in read() while the marks run, or, with "self", the freeing and marking thread
 * itself. Once the registration is undone (the old one put back), the object is handed out
 * again.
 * usage: protect_shape_kernel_thread tid|robust|rseq|sud [self] [control]
 *   (see protect_common.h) */
#define _GNU_SOURCE
#include "protect_common.h"

#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#endif
#ifndef SYS_rseq
#define SYS_rseq 334
#endif
#define RSEQ_SIG 0x53053053 /* (x86's, as glibc registers with) */
#define RSEQ_FLAG_UNREGISTER 1

extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

static const char *kind = "tid";
static int go[2], ready[2];
static uintptr_t object; /* masked */
static uintptr_t old_tid, old_robust;
static size_t old_robust_len;

/* The call with the object's address, unmasked in a register and cleared after it: no copy of
 * the raw address is left in this thread's registers or stack. */
static long set_tid_masked(uintptr_t m) {
    long r;
    __asm__ volatile("mov %1, %%rdi\n\txor %2, %%rdi\n\tmov $218, %%eax\n\tsyscall\n\t"
                     "xor %%edi, %%edi"
                     : "=a"(r)
                     : "r"(m), "r"(MASK)
                     : "rdi", "rcx", "r11", "memory");
    return r;
}

static long set_robust_masked(uintptr_t m, size_t len) {
    long r;
    __asm__ volatile("mov %1, %%rdi\n\txor %2, %%rdi\n\tmov %3, %%rsi\n\tmov $273, %%eax\n\t"
                     "syscall\n\txor %%edi, %%edi"
                     : "=a"(r)
                     : "r"(m), "r"(MASK), "r"(len)
                     : "rdi", "rsi", "rcx", "r11", "memory");
    return r;
}

/* syscall() and prctl() keep their arguments in registers the kernel preserves: cleared. */
static inline void clear_argument_registers(void) {
    __asm__ volatile("xor %%edi, %%edi\n\txor %%esi, %%esi\n\txor %%edx, %%edx\n\t"
                     "xor %%r10d, %%r10d\n\txor %%r8d, %%r8d\n\txor %%r9d, %%r9d" ::
                         : "rdi", "rsi", "rdx", "r10", "r8", "r9");
}

/* glibc's own rseq area (a thread may have one registered): given back first. */
static void *glibc_rseq(void) {
    if (&__rseq_size == NULL || __rseq_size == 0)
        return NULL;
    return (char *)__builtin_thread_pointer() + __rseq_offset;
}

/* The object, made by the freeing thread (its own heap's: the churn gets it back there). */
__attribute__((noinline)) static void make(void) {
    unsigned char *p = aligned_alloc(32, 64);
    memset(p, 0, 64);
    if (!strcmp(kind, "robust"))
        ((void **)p)[0] = p; /* (an empty robust list: its head points to itself) */
    object = (uintptr_t)p ^ MASK;
}

__attribute__((noinline)) static void register_object(void) {
    long r = 0;
    if (!strcmp(kind, "tid")) {
        prctl(PR_GET_TID_ADDRESS, &old_tid);
        if (!control)
            set_tid_masked(object); /* (returns the thread's id: it cannot fail) */
    } else if (!strcmp(kind, "robust")) {
        syscall(SYS_get_robust_list, 0, &old_robust, &old_robust_len);
        if (!control)
            r = set_robust_masked(object, 24);
    } else if (!strcmp(kind, "rseq")) {
        void *own = glibc_rseq();
        /* (registered with at least the original 32 bytes; __rseq_size says what is used) */
        unsigned len = __rseq_size < 32 ? 32 : __rseq_size;
        if (own && syscall(SYS_rseq, own, len, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) != 0) {
            printf("unsupported rseq: glibc's area cannot be unregistered: %s\n",
                   strerror(errno));
            exit(0);
        }
        if (!control)
            r = syscall(SYS_rseq, (void *)(object ^ MASK), 32, 0, RSEQ_SIG);
    } else if (!strcmp(kind, "sud")) {
        /* (the selector's byte 0: PR_SYS_DISPATCH_OFF, system calls run as usual) */
        if (!control)
            r = prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0,
                      (void *)(object ^ MASK));
    }
    clear_argument_registers();
    if (r != 0) {
        printf("unsupported %s: %s\n", kind, strerror(errno));
        exit(0);
    }
}

__attribute__((noinline)) static void unregister(void) {
    if (control)
        return;
    if (!strcmp(kind, "tid"))
        syscall(SYS_set_tid_address, old_tid);
    else if (!strcmp(kind, "robust"))
        syscall(SYS_set_robust_list, old_robust, old_robust_len);
    else if (!strcmp(kind, "rseq"))
        syscall(SYS_rseq, (void *)(object ^ MASK), 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG);
    else if (!strcmp(kind, "sud"))
        prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
    clear_argument_registers();
}

static void *holder(void *arg) {
    (void)arg;
    register_object();
    clear_stack();
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
        exit(2);
    unregister();
    clear_stack(); /* (an exited thread's stack stays mapped: the calls' copies) */
    return NULL;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    kind = argc > 1 ? argv[1] : "tid";
    int self = argc > 2 && !strcmp(argv[2], "self");
    pthread_t t;
    make();
    if (!self) {
        char c;
        if (pipe(go) || pipe(ready) || pthread_create(&t, NULL, holder, NULL) ||
            read(ready[0], &c, 1) != 1)
            return 2;
    } else {
        register_object();
    }
    free_object(object);
    clear_stack();
    int held = churn_of(object, ROUNDS, 64, BATCH);
    if (!self) {
        char c = 0;
        if (write(go[1], &c, 1) != 1)
            return 2;
        pthread_join(t, NULL);
    } else {
        unregister();
    }
    clear_stack();
    report(held, released_within_of(object, churn_of(object, ROUNDS, 64, BATCH),
                                    release_wait_secs(), 64));
    return 0;
}
