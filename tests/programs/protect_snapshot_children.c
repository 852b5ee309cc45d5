/* Protect mode, snapshot marks (OSCAR_MARK=snapshot): the program cannot tell that a child of
 * Oscar's reads a copy of it during each mark. It forks children of its own and waits for
 * them, counts SIGCHLD, and sends SIGUSR1 to its whole process group, while marks run; the
 * mark's child is in that group too. Printed: what the program saw ("sigchld", "reaped",
 * "strangers": pids wait() returned that were not its own children; "usr1_sent"); the
 * SIGUSR1 handler writes a line "usr1" per signal it runs for (a handler run in the mark's
 * child would write more lines than were sent); "overlaps": signals sent while a process
 * named oscar-snapshot was a child of this one (so the check met one), "oom_first" those of
 * them the kernel would kill first when memory runs out (oom_score_adj 1000). Same output
 * under glibc, apart from overlaps and oom_first (0 there). */
#define _GNU_SOURCE
#include "protect_common.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 200

static volatile sig_atomic_t sigchld;

static void on_chld(int sig) {
    (void)sig;
    sigchld++;
}

static void on_usr1(int sig) {
    (void)sig;
    int saved = errno;
    if (write(1, "usr1\n", 5) != 5)
        _exit(3);
    errno = saved;
}

/* Such children seen with oom_score_adj 1000 (the kernel kills them first). */
static int oom_first;

/* The first line of /proc/PID/NAME into buf ("" if gone): open and read, no malloc (a free
 * here could start a mark, whose end reaps the child being looked at). */
static void proc_line(long pid, const char *name, char *buf, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/%s", pid, name);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
    buf[n > 0 ? n : 0] = 0;
    if (fd >= 0)
        close(fd);
}

/* Is a process named oscar-snapshot a child of one of this process's threads? */
static int snapshot_child_alive(void) {
    DIR *d = opendir("/proc/self/task");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char path[128], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        for (char *p = buf; *p && !found;) {
            long pid = strtol(p, &p, 10);
            if (pid <= 0)
                break;
            char oom[16], comm[64];
            proc_line(pid, "oom_score_adj", oom, sizeof oom);
            proc_line(pid, "comm", comm, sizeof comm);
            found = strncmp(comm, "oscar-snapshot", 14) == 0;
            oom_first += found && strcmp(oom, "1000\n") == 0;
        }
    }
    if (d)
        closedir(d);
    return found;
}

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    setpgid(0, 0); /* (a group of our own: kill(0) reaches this process and its children) */
    struct sigaction sa = {0};
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t usr1, old;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    int reaped = 0, strangers = 0, overlaps = 0, sent = 0;
    for (int i = 0; i < FORKS; i++) {
        churn(0, 20); /* (frees enough to start marks) */
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int st;
        pid_t got;
        while ((got = waitpid(-1, &st, WNOHANG)) == 0)
            churn(0, 2);
        if (got == pid)
            reaped++;
        else if (got > 0)
            strangers++;
        if (i % 4 == 0) {
            /* Send while a mark's child lives if one comes within 200 more churns (they start
             * marks): on a loaded machine the fork loop alone met none in 50 tries (CI, the
             * debug build). Under glibc none ever comes: ~10 ms a try. */
            int alive = 0;
            for (int k = 0; k < 200 && !(alive = snapshot_child_alive()); k++)
                churn(0, 1);
            overlaps += alive;
            kill(0, SIGUSR1);
            sent++;
        }
    }
    sigprocmask(SIG_BLOCK, &usr1, &old); /* (the handler's lines first, then ours) */
    sigprocmask(SIG_SETMASK, &old, NULL);
    int more = wait(NULL) == -1 && errno == ECHILD ? 0 : 1;
    printf("reaped %d\nstrangers %d\nmore_children %d\nsigchld %d\nusr1_sent %d\n", reaped,
           strangers + more, more, (int)sigchld, sent);
    printf("overlaps %d\noom_first %d\n", overlaps, oom_first);
    return 0;
}
