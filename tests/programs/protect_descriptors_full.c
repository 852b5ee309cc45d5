/* Protect mode in a program that uses every descriptor it may: its soft RLIMIT_NOFILE is
 * lowered to 64 and /dev/null opened until open() fails (EMFILE). A mark reads /proc (the
 * threads, the mappings, the page tables) through descriptors of its own: before, every stop
 * failed to list the threads, no mark ran, and freed memory was never handed out again
 * ("released_reused 0"), without a word. Now, with the program's threads stopped, the soft
 * limit is raised for each of those opens alone and put back: marks run. The program's own
 * open() still fails afterwards ("open_fails 1"), as under glibc. With "hard", the hard limit
 * is lowered too (no room to raise): no mark can run, nothing held is handed out, and one
 * warning says protect mode cannot mark. See protect_common.h. */
#include "protect_common.h"
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

static void *volatile hold;

int main(int argc, char **argv) {
    protect_test_init(argc, argv);
    int hard = argc > 1 && strcmp(argv[1], "hard") == 0;
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = 64;
    if (hard)
        r.rlim_max = 64;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
        perror("setrlimit");
        return 2;
    }
    int opened = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        opened++;
    printf("filled %d\n", opened > 0);
    check_held_within(&hold, hard ? 0 : 10.0); /* (no mark can run with "hard": no wait) */
    printf("open_fails %d\n", open("/dev/null", O_RDONLY) < 0);
    return 0;
}
