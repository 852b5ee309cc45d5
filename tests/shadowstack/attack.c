/* A stack buffer overflow onto the return address (build with -fno-stack-protector): the
 * payload is the address of win(), repeated. Built plainly the return goes to win() ("hijacked",
 * exit 42); built with `oscar cc` (check mode) the return is stopped with the report and SIGABRT;
 * in overwrite mode the return address is put back and the program goes on.
 * argv[1]: bytes copied (default 32: buf[16] and the 8 bytes above it reach the return address
 * at -O0 and -O2 with gcc 12); argv[2] "thread": the overflow happens in a second thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void win(void) {
    static const char msg[] = "hijacked\n";
    write(1, msg, sizeof msg - 1);
    _exit(42);
}

__attribute__((noinline)) void consume(char *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

__attribute__((noinline)) void vulnerable(const void *in, size_t n) {
    char buf[16];
    memcpy(buf, in, n);
    consume(buf);
}

static uintptr_t payload[8];
static size_t payload_len;

static void *attack_thread(void *arg) {
    (void)arg;
    vulnerable(payload, payload_len);
    return NULL;
}

int main(int argc, char **argv) {
    for (int i = 0; i < 8; i++)
        payload[i] = (uintptr_t)&win;
    size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 32;
    printf("win=%p\n", (void *)&win);
    fflush(stdout);
    if (argc > 2 && !strcmp(argv[2], "thread")) {
        pthread_t t;
        payload_len = n;
        pthread_create(&t, NULL, attack_thread, NULL);
        pthread_join(t, NULL);
    } else {
        vulnerable(payload, n);
    }
    printf("returned normally\n");
    return 0;
}
