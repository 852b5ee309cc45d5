/* Built with oscar cc: a constructor that calls an instrumented function (early.c). */
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void lib_hook(const char *who) {
    char b[512];
    memset(b, 0x42, sizeof b);
    write(1, b, 0);
    write(1, "lib: ", 5);
    write(1, who, strlen(who));
    write(1, "\n", 1);
}

__attribute__((constructor)) static void lib_init(void) { lib_hook("constructor"); }
