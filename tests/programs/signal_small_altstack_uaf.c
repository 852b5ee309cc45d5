/* Issue 18, defect 11: the program handles SIGSEGV on a 4 KiB alternate signal stack (a
 * handler installed with SA_ONSTACK) with an inaccessible page right below it, then uses a
 * freed object: Oscar's whole report must still come (its work does not fit in what the
 * kernel's signal frame leaves of 4 KiB), and nothing below the alternate stack may be
 * touched. Under glibc the program's handler runs and exits 3. With "tight" the alternate
 * stack leaves exactly 1 KiB beside the kernel's frame (AT_MINSIGSTKSZ: 3,376 bytes on one
 * of our VMs, which left 720 bytes of 4 KiB, and Oscar's handler had grown a 1.5 KiB frame
 * and hung there; elsewhere 4 KiB left 2-3 KiB and hid it). */
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common.h"

static void handler(int sig) {
    (void)sig;
    static const char msg[] = "PROGRAM HANDLER RAN\n";
    write(1, msg, sizeof msg - 1);
    _exit(3);
}

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

int main(int argc, char **argv) {
    test_init();
    size_t size = 4096;
    if (argc > 1 && strcmp(argv[1], "tight") == 0) {
        size_t frame = getauxval(AT_MINSIGSTKSZ);
        if (frame == 0 || frame + 1024 > 3 * 4096) {
            printf("unsupported AT_MINSIGSTKSZ %zu\n", frame);
            return 0;
        }
        size = (frame + 1024 + 15) & ~(size_t)15;
    }
    /* [no access][alternate stack, up to 12 KiB], the stack right above the inaccessible page */
    unsigned char *m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                            -1, 0);
    mprotect(m, 4096, PROT_NONE);
    stack_t ss = {.ss_sp = m + 4096, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        printf("FAIL sigaltstack\n");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
    int *p = malloc(64);
    print_ptr("ptr", p);
    free(p);
    print_ptr("access", p + 3);
    int v = p[3];
    printf("NOT REACHED %d\n", v);
    return 0;
}
