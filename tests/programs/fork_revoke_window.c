/* fork_revoke_window: a thread frees objects in a loop while the main thread forks. In strict
 * mode without guard markers (OSCAR_GUARDS=0) a free first marks its shadow page freed, then
 * revokes it with a system call. A fork that parks the thread between the two used to leave
 * that page, in the child, mapped onto the parent's heap (the child remaps only the pages its
 * entries call mapped): a dangling write in the child then landed in the parent's memory, in
 * whatever object the parent put in that slot next.
 *
 * The child looks up the page of the object the thread was freeing (published before each
 * free) in /proc/self/maps: it must not be a mapping of the parent's heap file (the inode of
 * a live object's page in the parent before the fork; in the child that object is on the
 * copy). Prints "shared M", "forks K", "bad B": M and B must be 0 (B: a child that could not
 * tell, or whose live object was not moved onto the copy). With "attrmask" the freeing
 * thread is made with every signal blocked (pthread_attr_setsigmask_np): it is parked by the
 * second park signal, which must wait for the stretch's end too.
 * usage: fork_revoke_window [FORKS] [attrmask] */
#define _GNU_SOURCE
#include "common.h"
#include "fork_common.h"

#include <inttypes.h>
#include <signal.h>
#include <string.h>

static _Atomic uintptr_t cur;
static atomic_int stop;

static void *freer(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        char *p = malloc(48);
        p[0] = 1;
        atomic_store(&cur, (uintptr_t)p);
        free(p);
    }
    return NULL;
}

/* The inode of the mapping holding a (0: none), and whether it is accessible. */
static unsigned long inode_of(uintptr_t a, int *accessible) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long ino = 0;
    *accessible = 0;
    while (f && fgets(line, sizeof line, f)) {
        uintptr_t lo, hi;
        char perms[8];
        unsigned long off, inode;
        char dev[16];
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %lx %15s %lu", &lo, &hi, perms, &off,
                   dev, &inode) == 6 && a >= lo && a < hi) {
            ino = inode;
            *accessible = perms[0] == 'r';
            break;
        }
    }
    if (f)
        fclose(f);
    return ino;
}

int main(int argc, char **argv) {
    int forks = argc > 1 ? atoi(argv[1]) : 1000;
    char *anchor = malloc(48);
    anchor[0] = 1;
    int acc;
    unsigned long heap_ino = inode_of((uintptr_t)anchor, &acc);
    if (!heap_ino || !acc)
        return 2; /* (a live object not on a heap file: nothing to tell apart) */
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (argc > 2 && strcmp(argv[2], "attrmask") == 0) {
        sigset_t all;
        sigfillset(&all);
        pthread_attr_setsigmask_np(&attr, &all);
    }
    pthread_create(&t, &attr, freer, NULL);
    int shared = 0, bad = 0;
    for (int i = 0; i < forks; i++) {
        int fd[2];
        if (pipe(fd) != 0)
            return 2;
        pid_t pid = fork();
        if (pid == 0) {
            close(fd[0]);
            int p_acc, anchor_acc;
            unsigned long ino = inode_of(atomic_load(&cur), &p_acc);
            unsigned long anchor_ino = inode_of((uintptr_t)anchor, &anchor_acc);
            char r = anchor_ino == heap_ino && heap_ino ? 'a'  /* the live object not moved */
                     : p_acc && ino == heap_ino         ? 's'  /* the parent's heap */
                                                        : '.';
            if (write(fd[1], &r, 1) != 1)
                _exit(2);
            _exit(0);
        }
        close(fd[1]);
        char r = '?';
        if (read(fd[0], &r, 1) != 1)
            r = '?';
        close(fd[0]);
        int status;
        waitpid(pid, &status, 0);
        if (r == 's')
            shared++;
        else if (r != '.')
            bad++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("shared %d\nforks %d\nbad %d\n", shared, forks, bad);
    return 0;
}
