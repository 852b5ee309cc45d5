/* setuid in a program with threads: glibc sends each thread its SIGSETXID, whose handler
 * changes that thread's ids too. Oscar stands in front of that handler once a thread blocks
 * its park signal (here one made with pthread_attr_setsigmask_np, while another allocates and
 * frees: protect mode's marks park it with SIGSETXID) and must hand glibc's requests on: every
 * thread ends with the new ids, as under glibc. Run as root (it drops to nobody); prints
 * "threads N, with uid 65534: N" (or "not root"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int stop;

static void *masked(void *arg) {
    (void)arg;
    while (!atomic_load(&stop))
        usleep(1000);
    return NULL;
}

static void *churner(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        void *volatile p[16];
        for (int k = 0; k < 16; k++)
            p[k] = malloc(32 + 16 * k);
        for (int k = 0; k < 16; k++)
            free(p[k]);
    }
    return NULL;
}

/* Threads of the process, and how many have real, effective and saved uid `uid`. */
static void count_uids(unsigned uid, int *threads, int *with) {
    *threads = *with = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        (*threads)++;
        while (fgets(line, sizeof line, f)) {
            unsigned r, ef, s;
            if (sscanf(line, "Uid: %u %u %u", &r, &ef, &s) == 3 && r == uid && ef == uid &&
                s == uid)
                (*with)++;
        }
        fclose(f);
    }
    if (d)
        closedir(d);
}

int main(void) {
    if (geteuid() != 0) {
        puts("not root");
        return 0;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    sigset_t all;
    sigfillset(&all);
    pthread_attr_setsigmask_np(&attr, &all);
    pthread_t a, b;
    pthread_create(&a, &attr, masked, NULL);
    pthread_create(&b, NULL, churner, NULL);
    usleep(300 * 1000); /* (marks run meanwhile) */
    if (setgid(65534) != 0 || setuid(65534) != 0) {
        perror("setuid");
        return 1;
    }
    usleep(100 * 1000);
    int threads, with;
    count_uids(65534, &threads, &with);
    atomic_store(&stop, 1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    /* (Oscar's own threads, where it has them, are counted on both sides.) */
    printf("every thread has uid 65534: %s\n", threads == with ? "yes" : "no");
    return 0;
}
