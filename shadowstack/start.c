/* liboscar_pss_start.a: linked (whole) into every executable `oscar cc` links, never into a
 * shared library (.preinit_array is the executable's alone). Its .preinit_array entry runs
 * before any shared library's constructor, so the runtime is set up (GS base, main stack's
 * shadow: liboscar_pss.so's pss_init) and, without FSGSBASE, the executable's code patched,
 * before any code runs that could call instrumented code: an uninstrumented library's
 * constructor calling back into the program (a hook, an interposed malloc), the program's own
 * .preinit_array (this object comes first on the link line). The executable's sites are
 * patched with the two thunks below, the same code as pss_rewrite.py's _GS_SUPPORT (any thunk
 * of the module will do: the patched call is relative); the module's own registration, at its
 * first constructor, then finds them patched already. docs/shadow-stacks.md. */
#include <stdint.h>

void __oscar_pss_preinit(char **envp);
void __oscar_pss_gs_patch(const int32_t *start, const int32_t *stop, void *store, void *load);

/* An empty record of sites, so that __start_/__stop_ exist when the program has no GS code
 * (--offset=immediate, or nothing instrumented in the executable itself). */
__asm__(".section oscar_pss_gs_sites,\"a\",@progbits\n"
        ".previous\n"
        ".text\n"
        ".p2align 4\n"
        ".type pss_start_store, @function\n"
        "pss_start_store:\n"
        ".cfi_startproc\n"
        "\tpushq %rax\n"
        "\t.cfi_adjust_cfa_offset 8\n"
        "\tmovq __oscar_pss_offset@GOTPCREL(%rip), %rax\n"
        "\tmovq (%rax), %rax\n"
        "\tmovq %r11, 16(%rsp,%rax)\n"
        "\tpopq %rax\n"
        "\t.cfi_adjust_cfa_offset -8\n"
        "\tret\n"
        ".cfi_endproc\n"
        ".size pss_start_store, .-pss_start_store\n"
        ".type pss_start_load, @function\n"
        "pss_start_load:\n"
        ".cfi_startproc\n"
        "\tpushq %rax\n"
        "\t.cfi_adjust_cfa_offset 8\n"
        "\tmovq __oscar_pss_offset@GOTPCREL(%rip), %rax\n"
        "\tmovq (%rax), %rax\n"
        "\tmovq 16(%rsp,%rax), %r11\n"
        "\tpopq %rax\n"
        "\t.cfi_adjust_cfa_offset -8\n"
        "\tret\n"
        ".cfi_endproc\n"
        ".size pss_start_load, .-pss_start_load\n");

extern char pss_start_store[], pss_start_load[];
extern const int32_t __start_oscar_pss_gs_sites[] __attribute__((visibility("hidden")));
extern const int32_t __stop_oscar_pss_gs_sites[] __attribute__((visibility("hidden")));

static void pss_preinit(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    __oscar_pss_preinit(envp);
    __oscar_pss_gs_patch(__start_oscar_pss_gs_sites, __stop_oscar_pss_gs_sites, pss_start_store,
                         pss_start_load);
}

__attribute__((used, section(".preinit_array"))) static void (*const pss_preinit_entry)(
    int, char **, char **) = pss_preinit;
