/* Process creation without fork's heap copy: posix_spawn, system, popen (read and write),
 * vfork + execve. Every child runs /bin/echo, /bin/sh or /bin/cat (which inherit LD_PRELOAD
 * and so run under the same allocator); the parent's heap stays intact around each. */
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

extern char **environ;

#define NOBJ 100
static unsigned char *objs[NOBJ];

static void heap_setup(void) {
    for (int i = 0; i < NOBJ; i++) {
        objs[i] = malloc(8 + (size_t)i * 61);
        fill_pattern(objs[i], 8 + (size_t)i * 61, (uint64_t)i);
    }
}

static int heap_ok(void) {
    int ok = 1;
    for (int i = 0; i < NOBJ; i++)
        ok &= check_pattern(objs[i], 8 + (size_t)i * 61, (uint64_t)i);
    /* Churn between process creations, too. */
    for (int i = 0; i < 200; i++) {
        char *p = malloc(1 + (size_t)i * 11);
        if (!p)
            return 0;
        memset(p, i, 1 + (size_t)i * 11);
        free(p);
    }
    return ok;
}

static void print_status(const char *what, int status) {
    if (WIFEXITED(status))
        printf("%s: exit %d\n", what, WEXITSTATUS(status));
    else
        printf("%s: killed by signal %d\n", what, WTERMSIG(status));
}

int main(void) {
    test_init();
    heap_setup();

    /* posix_spawn, with the child's stdout redirected into a pipe. */
    for (int round = 0; round < 3; round++) {
        int fds[2];
        if (pipe(fds) != 0)
            return 2;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        char round_s[16];
        snprintf(round_s, sizeof round_s, "%d", round);
        char *argv[] = {"/bin/echo", "posix_spawn", "round", round_s, NULL};
        pid_t pid;
        int err = posix_spawn(&pid, "/bin/echo", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        check(err == 0, "posix_spawn succeeded");
        char buf[256];
        ssize_t n, got = 0;
        while ((n = read(fds[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
            got += n;
        buf[got] = 0;
        close(fds[0]);
        int status = 0;
        if (err == 0)
            waitpid(pid, &status, 0);
        printf("posix_spawn output: %s", buf);
        print_status("posix_spawn", status);
    }
    check(heap_ok(), "heap intact after posix_spawn");

    /* posix_spawnp through the shell. */
    {
        char *argv[] = {"sh", "-c", "echo spawnp via sh; exit 3", NULL};
        pid_t pid;
        int err = posix_spawnp(&pid, "sh", NULL, NULL, argv, environ);
        check(err == 0, "posix_spawnp succeeded");
        int status = 0;
        if (err == 0)
            waitpid(pid, &status, 0);
        print_status("posix_spawnp", status);
    }
    check(heap_ok(), "heap intact after posix_spawnp");

    /* system() */
    for (int round = 0; round < 3; round++) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "echo system round %d; exit %d", round, round);
        int status = system(cmd);
        print_status("system", status);
    }
    check(heap_ok(), "heap intact after system");

    /* popen(), reading. */
    for (int round = 0; round < 3; round++) {
        FILE *f = popen("/bin/echo popen read; seq 1 5 | tr '\\n' ' '; echo", "r");
        check(f != NULL, "popen r succeeded");
        if (!f)
            continue;
        char line[256];
        while (fgets(line, sizeof line, f))
            printf("popen line: %s", line);
        print_status("pclose r", pclose(f));
    }
    check(heap_ok(), "heap intact after popen r");

    /* popen(), writing: the child (cat, preloaded too) copies what we write to our stdout. */
    {
        FILE *f = popen("cat", "w");
        check(f != NULL, "popen w succeeded");
        if (f) {
            for (int i = 0; i < 50; i++)
                fprintf(f, "popen write line %d\n", i);
            print_status("pclose w", pclose(f));
        }
    }
    check(heap_ok(), "heap intact after popen w");

    /* vfork + execve: the child shares our memory until it execs. */
    for (int round = 0; round < 3; round++) {
        char *argv[] = {"/bin/echo", "vfork", "exec", NULL};
        pid_t pid = vfork();
        if (pid == 0) {
            execve("/bin/echo", argv, environ);
            _exit(127);
        }
        check(pid > 0, "vfork succeeded");
        int status = 0;
        waitpid(pid, &status, 0);
        print_status("vfork+exec", status);
    }
    /* vfork + _exit without exec. */
    {
        pid_t pid = vfork();
        if (pid == 0)
            _exit(9);
        int status = 0;
        waitpid(pid, &status, 0);
        print_status("vfork+_exit", status);
    }
    check(heap_ok(), "heap intact after vfork");

    for (int i = 0; i < NOBJ; i++)
        free(objs[i]);
    return test_finish();
}
