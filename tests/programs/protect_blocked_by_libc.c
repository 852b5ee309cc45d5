/* glibc's own helper threads block every signal (but glibc's own two): the one behind
 * timer_create's SIGEV_THREAD, mq_notify's SIGEV_THREAD, and the aio functions'. They set
 * that mask themselves, not through Oscar's wrappers, so the park signal stays blocked there:
 * no stop of the world could park them, no mark ran again, and the quarantine kept every
 * freed byte (2.2 GiB where glibc used 1 MiB). Oscar's second park signal parks them.
 *
 * Argument: timer, mq or aio: the helper thread made first; then the plain check, the pointer
 * in a global (protect_common.h: held_reused, released_reused). */
#define _GNU_SOURCE
#include "protect_common.h"

#include <aio.h>
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static void *volatile global;

static void notified(union sigval v) { (void)v; }

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    const char *how = argc > 1 ? argv[1] : "timer";
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = notified;
    if (strcmp(how, "timer") == 0) {
        timer_t t;
        if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0)
            return 1;
    } else if (strcmp(how, "mq") == 0) {
        struct mq_attr a = {0, 4, 64, 0};
        char name[64];
        snprintf(name, sizeof name, "/oscar_test_%d", (int)getpid());
        mqd_t q = mq_open(name, O_CREAT | O_RDWR, 0600, &a);
        if (q == (mqd_t)-1) {
            printf("unsupported mq_open: %s\n", strerror(errno));
            return 0;
        }
        mq_unlink(name);
        if (mq_notify(q, &ev) != 0)
            return 1;
    } else {
        static char buf[64];
        static struct aiocb cb;
        cb.aio_fildes = open("/dev/zero", O_RDONLY);
        cb.aio_buf = buf;
        cb.aio_nbytes = sizeof buf;
        if (cb.aio_fildes < 0 || aio_read(&cb) != 0)
            return 1;
        while (aio_error(&cb) == EINPROGRESS)
            usleep(100);
    }
    check_held_in(&global);
    return 0;
}
