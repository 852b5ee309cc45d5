/* Instrumented code that runs before liboscar_pss.so's constructor, or before main: the
 * program's .preinit_array entry, the constructor of a library not built with oscar cc
 * (early_plain.c) calling back into the program, the constructor of a library built with it
 * (early_lib.c), the program's constructor of priority 101, an IFUNC resolver (run while the
 * dynamic linker relocates the program). Each calls hook(), whose 512-byte buffer covers the
 * place its copy would take with a GS base of 0 (its own %rsp - 0x80). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lib_hook(const char *who);

__attribute__((noinline)) void hook(const char *who) {
    char b[512];
    memset(b, 0x41, sizeof b);
    write(1, b, 0);
    write(1, who, strlen(who));
    write(1, "\n", 1);
}

static void pre(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    hook("preinit");
}
__attribute__((section(".preinit_array"), used)) static void (*pre_entry)(int, char **,
                                                                         char **) = pre;

__attribute__((constructor(101))) static void first(void) { hook("constructor 101"); }

static int twice(int x) { return 2 * x; }
static void *resolve_twice(void) {
    char b[256];
    memset(b, 0x41, sizeof b);
    write(1, b, 0);
    return b[7] == 0x41 ? (void *)twice : 0;
}
int ifunc_twice(int) __attribute__((ifunc("resolve_twice")));

int main(void) {
    hook("main");
    /* The preinit entry must not disturb libc's start (environ was once left NULL). */
    hook(getenv("PATH") ? "environment" : "no environment");
    lib_hook(ifunc_twice(21) == 42 ? "ifunc" : "wrong ifunc");
    return 0;
}
