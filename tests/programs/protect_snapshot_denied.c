/* Protect mode, OSCAR_MARK=snapshot where no child process may be made: by default a seccomp
 * filter (as sandboxes install) makes clone() without CLONE_THREAD fail with EPERM (another
 * filter might kill the process instead: Oscar refuses to try under any); with "nproc"
 * (root only, else it prints "skip"), RLIMIT_NPROC allows this user two tasks, the program's
 * and Oscar's marking thread (run it with OSCAR_MARK_THREADS=1), so the child's clone()
 * fails with EAGAIN. Marks must go on another way (concurrent or stopped), and still keep
 * the object a global points to; see protect_common.h. */
#include "protect_common.h"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int deny_fork(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x00010000 /* CLONE_THREAD */, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void *volatile hold;

/* A user of its own (no other process counts toward its limit), allowed two tasks. */
static int two_tasks(void) {
    struct rlimit two = {2, 2};
    return setrlimit(RLIMIT_NPROC, &two) || setgid(54321) || setuid(54321);
}

int main(int argc, char **argv) {
    int nproc = argc > 1 && strcmp(argv[1], "nproc") == 0;
    if (nproc && geteuid() != 0) {
        printf("skip\n");
        return 0;
    }
    if (nproc ? two_tasks() != 0 : deny_fork() != 0) {
        perror(nproc ? "setrlimit, setuid" : "seccomp");
        return 2;
    }
    protect_test_init(argc, argv);
    check_held_in(&hold);
    return 0;
}
