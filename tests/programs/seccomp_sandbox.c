/* A program that sandboxes itself with a seccomp filter, as OpenSSH's pre-authentication
 * child does: an allow-list of the calls it needs (memory, futexes, clocks, reading and
 * writing open descriptors, its signals), open and openat refused with EACCES, every other
 * call kills the process. Then it churns objects (tens of MiB freed, so that protect mode's
 * quarantine passes its trigger again and again) and prints a checksum. Under glibc it prints
 * the same lines every time; under Oscar, the calls its own marks, stops and reports make
 * must not kill it.
 *
 * usage: seccomp_sandbox prctl|syscall [lenient|errno] [thread] [fork]
 *   prctl:   the filter installed with prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)
 *   syscall: ... with syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER) (libseccomp's way)
 *   lenient: instead, a filter that kills for kexec_load only (Oscar must go on as before)
 *   errno:   instead, a filter that fails every open with EACCES and lets the rest through
 *   thread:  a second thread, made before the filter, waits on a pipe meanwhile (a stop
 *            must park it), then is woken and joined
 *   fork:    after the churn, a fork (with that thread alive: every mode stops the world
 *            around it), the child churns too and exits, the parent waits for it */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALLOW(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), \
                 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(n, e) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), \
                   BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))

static struct sock_filter insns[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    DENY(SYS_open, EACCES),
    DENY(SYS_openat, EACCES),
    ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_close),
    ALLOW(SYS_brk), ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_mremap),
    ALLOW(SYS_mprotect), ALLOW(SYS_madvise),
    ALLOW(SYS_futex), ALLOW(SYS_clock_gettime), ALLOW(SYS_gettimeofday), ALLOW(SYS_getpid),
    ALLOW(SYS_getrandom), ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_rt_sigreturn),
    ALLOW(SYS_exit), ALLOW(SYS_exit_group),
    /* for the "fork" variant: the fork itself and the wait (glibc's fork is clone) */
    ALLOW(SYS_clone), ALLOW(SYS_wait4), ALLOW(SYS_set_robust_list),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};

/* "lenient": kills for one call nobody makes here (kexec_load), lets all others through */
static struct sock_filter lenient[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kexec_load, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

/* "errno": every open fails with EACCES (a container's way: refuse, never kill) */
static struct sock_filter errnos[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    DENY(SYS_open, EACCES),
    DENY(SYS_openat, EACCES),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

static int wake[2];

static void *waiter(void *arg) {
    (void)arg;
    char c;
    while (read(wake[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

/* Objects of 16-2064 bytes replaced at random in a table of 512: about 40 MiB freed. */
static unsigned long churn(unsigned long seed) {
    enum { SLOTS = 512, ROUNDS = 40000 };
    static unsigned char *table[SLOTS];
    unsigned long sum = 0, x = seed;
    for (int r = 0; r < ROUNDS; r++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        unsigned i = (unsigned)(x >> 33) % SLOTS;
        size_t n = 16 + (size_t)((x >> 13) % 2048);
        if (table[i])
            sum += table[i][0];
        free(table[i]);
        table[i] = malloc(n);
        if (!table[i]) {
            printf("malloc failed\n");
            exit(1);
        }
        memset(table[i], (int)(r & 0x7f), n);
    }
    for (int i = 0; i < SLOTS; i++) {
        free(table[i]);
        table[i] = NULL;
    }
    return sum;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: seccomp_sandbox prctl|syscall [lenient|errno] [thread] [fork]\n");
        return 2;
    }
    int thread = 0, forking = 0;
    struct sock_fprog prog = {(unsigned short)(sizeof insns / sizeof insns[0]), insns};
    for (int i = 2; i < argc; i++) {
        thread |= !strcmp(argv[i], "thread");
        forking |= !strcmp(argv[i], "fork");
        if (!strcmp(argv[i], "lenient"))
            prog = (struct sock_fprog){sizeof lenient / sizeof lenient[0], lenient};
        if (!strcmp(argv[i], "errno"))
            prog = (struct sock_fprog){sizeof errnos / sizeof errnos[0], errnos};
    }
    pthread_t t;
    if (thread && (pipe(wake) != 0 || pthread_create(&t, NULL, waiter, NULL) != 0)) {
        perror("thread");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0); /* (stdout's buffer is allocated before the filter) */
    printf("before the filter: %lu\n", churn(1));
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("no_new_privs");
        return 2;
    }
    int r = !strcmp(argv[1], "syscall")
                ? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)
                : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
    if (r != 0) {
        perror("seccomp");
        return 2;
    }
    printf("open in the sandbox: %s\n",
           open("/dev/null", O_RDONLY) < 0 && errno == EACCES ? "EACCES" : "allowed?");
    printf("in the sandbox: %lu\n", churn(2));
    if (forking) {
        pid_t pid = fork();
        if (pid == 0) {
            printf("child: %lu\n", churn(3));
            _exit(0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
            printf("fork or wait failed: %s\n", strerror(errno));
            return 1;
        }
        printf("child exit: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    if (thread) {
        if (write(wake[1], "x", 1) != 1 || pthread_join(t, NULL) != 0) {
            printf("join failed\n");
            return 1;
        }
        printf("thread joined\n");
    }
    printf("done\n");
    return 0;
}
