"""Parallel shadow stacks (`oscar cc`, shadowstack/, docs/shadow-stacks.md).

The programs are tests/shadowstack/*.c and *.cc (not tests/programs/, which is the allocator's):
each is built plainly and with `oscar cc` (check and overwrite modes, -O0 and -O2) in a
temporary directory. The attack is hijacked plainly and stopped with the report under
`oscar cc`; correct programs (threads, longjmp, C++ exceptions, callbacks from libc, stack
switches, fork) print exactly what they print when built plainly.
"""

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "tests" / "shadowstack"
BUILD = Path(os.environ.get("OSCAR_BUILD_DIR") or REPO / "build").resolve()
CLI = BUILD / "cli" / "oscar"
DRIVER = BUILD / "shadowstack" / "oscar-cc"
RUNTIME = BUILD / "shadowstack" / "liboscar_pss.so"

GCC = shutil.which("gcc")
GXX = shutil.which("g++")
REPORT = re.compile(r"^oscar: return-address overwrite in (\S+) \(expected (0x[0-9a-f]+), "
                    r"found (0x[0-9a-f]+)\)$", re.M)

pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


def _newer(out, inputs):
    return out.exists() and all(out.stat().st_mtime >= p.stat().st_mtime for p in inputs)


@pytest.fixture(scope="module")
def oscar():
    """The `oscar` CLI and the shadow stack runtime, built if missing or stale."""
    srcs = [REPO / "shadowstack" / n for n in ("runtime.c", "oscar-cc", "pss_rewrite.py",
                                                "start.c")]
    srcs.append(REPO / "shadowstack" / "libexec" / "as")
    if not (CLI.exists() and _newer(RUNTIME, srcs) and _newer(DRIVER, srcs[1:2])):
        if os.environ.get("OSCAR_TEST_NO_BUILD"):
            pytest.skip("oscar cc is not built and OSCAR_TEST_NO_BUILD is set")
        subprocess.run(["cmake", "-S", str(REPO), "-B", str(BUILD),
                        "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(BUILD), "-j2", "--target", "oscar_pss",
                        "oscar_cli"], check=True, stdout=subprocess.DEVNULL)
    return [str(CLI), "cc"]


def build(oscar, tmp_path, source, opt, how, extra=()):
    """how: 'plain', 'check', 'overwrite', 'random' (check mode, per-process offset) or
    'immediate' (check mode, the offset as an immediate operand instead of the GS base)."""
    compiler = GXX if source.endswith(".cc") else GCC
    if compiler is None:
        pytest.skip("g++ is not installed")
    out = tmp_path / ("%s-%s-%s" % (source.replace(".", "_"), opt, how))
    cmd = [compiler, "-" + opt, "-pthread", "-fno-stack-protector", "-o", str(out),
           str(SRC / source)] + list(extra)
    if how in ("random", "immediate"):
        cmd = oscar + ["--offset=" + how, "--"] + cmd
    elif how != "plain":
        cmd = oscar + ["--mode=" + how, "--"] + cmd
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    return out


def run(path, *args, timeout=60, env=None):
    return subprocess.run([str(path)] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, env=env)


# ---------------------------------------------------------------------------------------------
# The attack


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_attack_hijacks_plain_build(oscar, tmp_path, opt, where):
    prog = build(oscar, tmp_path, "attack.c", opt, "plain")
    proc = run(prog, "32", where)
    assert proc.returncode == 42, (proc.stdout, proc.stderr)
    assert proc.stdout.splitlines()[-1] == "hijacked"


@pytest.mark.parametrize("how", ["check", "random", "immediate"])
@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_attack_stopped_in_check_mode(oscar, tmp_path, opt, where, how):
    prog = build(oscar, tmp_path, "attack.c", opt, how)
    proc = run(prog, "32", where)
    assert proc.returncode == -signal.SIGABRT, (proc.stdout, proc.stderr)
    win = proc.stdout.splitlines()[0].split("=")[1]
    assert "hijacked" not in proc.stdout and "returned normally" not in proc.stdout
    first = proc.stderr.splitlines()[0]
    m = REPORT.match(first)
    assert m, proc.stderr
    assert m.group(1) == "vulnerable"
    assert m.group(3) == win          # found: what the overflow wrote
    assert m.group(2) != win          # expected: the real return address, into the caller
    assert len(proc.stderr.splitlines()) >= 2  # the stack follows


@pytest.mark.parametrize("where", ["main", "thread"])
def test_attack_repaired_in_overwrite_mode(oscar, tmp_path, where):
    # -O2: at -O0 the overflow also clobbers the saved frame pointer, which overwrite mode
    # does not protect (only the return address).
    prog = build(oscar, tmp_path, "attack.c", "O2", "overwrite")
    proc = run(prog, "32", where)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stdout.splitlines()[-1] == "returned normally"
    assert proc.stderr == ""


@pytest.mark.parametrize("how", ["plain", "check", "overwrite"])
def test_attack_without_overflow_returns(oscar, tmp_path, how):
    prog = build(oscar, tmp_path, "attack.c", "O2", how)
    proc = run(prog, "16")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.splitlines()[-1] == "returned normally"


# ---------------------------------------------------------------------------------------------
# Correct programs print what they print when built plainly

PROGRAMS = ["threads.c", "longjmp.c", "callbacks.c", "exceptions.cc", "ipa_ra.c"]


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("source", PROGRAMS)
def test_same_output_as_plain(oscar, tmp_path, source, opt):
    plain = run(build(oscar, tmp_path, source, opt, "plain"))
    assert plain.returncode == 0, plain.stderr
    for how in ("check", "overwrite", "random", "immediate"):
        proc = run(build(oscar, tmp_path, source, opt, how))
        assert proc.returncode == 0, (how, proc.stderr)
        assert proc.stdout == plain.stdout, how
        assert proc.stderr == plain.stderr, how


def test_binary_is_instrumented(oscar, tmp_path):
    prog = build(oscar, tmp_path, "longjmp.c", "O2", "check")
    dyn = subprocess.run(["readelf", "-d", "--dyn-syms", str(prog)], stdout=subprocess.PIPE,
                         text=True).stdout
    assert "liboscar_pss.so" in dyn and "__oscar_pss_fail" in dyn
    plain = build(oscar, tmp_path, "longjmp.c", "O2", "plain")
    assert "liboscar_pss" not in subprocess.run(["readelf", "-d", str(plain)],
                                                stdout=subprocess.PIPE, text=True).stdout


# ---------------------------------------------------------------------------------------------
# The driver: every other use of the compiler passes through; builds with CC="oscar cc -- gcc"


def test_driver_passes_through(oscar, tmp_path):
    (tmp_path / "p.c").write_text("int x = FOO;\n")
    plain = subprocess.run([GCC, "-E", "-DFOO=3", str(tmp_path / "p.c")],
                           stdout=subprocess.PIPE, text=True).stdout
    ours = subprocess.run(oscar + ["--", GCC, "-E", "-DFOO=3", str(tmp_path / "p.c")],
                          stdout=subprocess.PIPE, text=True).stdout
    assert ours == plain
    for args in (["--version"], ["-dumpmachine"], ["-print-file-name=libc.so"]):
        a = subprocess.run([GCC] + args, stdout=subprocess.PIPE, text=True)
        b = subprocess.run(oscar + ["--", GCC] + args, stdout=subprocess.PIPE, text=True)
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), args
    asm = subprocess.run(oscar + ["--", GCC, "-print-prog-name=as"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    assert asm.endswith("shadowstack/libexec/as") or asm.endswith("oscar/libexec/as"), asm
    v = subprocess.run(oscar + ["--", GCC, "-v"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert v.returncode == 0 and "gcc version" in v.stderr
    bad = subprocess.run(oscar + ["--mode=nope", "--", GCC], stderr=subprocess.PIPE, text=True)
    assert bad.returncode == 2 and "--mode=nope is invalid" in bad.stderr


def test_assembly_rewritten_once(oscar, tmp_path):
    """-S gives the compiler's own assembly; assembling it through `oscar cc` instruments it,
    and an instrumented file is never instrumented twice."""
    src = tmp_path / "f.c"
    src.write_text("int g(int);\nint f(int x) { return g(x) * 2; }\n")
    subprocess.run(oscar + ["--", GCC, "-O2", "-S", "-o", str(tmp_path / "f.s"), str(src)],
                   check=True)
    assert "oscar-pss" not in (tmp_path / "f.s").read_text()
    subprocess.run(oscar + ["--", GCC, "-c", "-o", str(tmp_path / "f.o"), str(tmp_path / "f.s")],
                   check=True)
    dis = subprocess.run(["objdump", "-d", str(tmp_path / "f.o")], stdout=subprocess.PIPE,
                         text=True).stdout
    assert dis.count("%gs:-0x80(%rsp)") == 2  # the copy at entry, the check before the ret
    import sys
    sys.path.insert(0, str(REPO / "shadowstack"))
    import pss_rewrite
    text = (tmp_path / "f.s").read_text()
    once = pss_rewrite.rewrite(text)
    assert pss_rewrite.rewrite(once) == once


def test_make_with_shared_and_static_libraries(oscar, tmp_path):
    """CC="oscar cc -- gcc" in a Makefile: objects, a static archive, a shared library whose
    overflow is caught too."""
    (tmp_path / "lib.c").write_text(
        "#include <string.h>\n"
        "__attribute__((noinline)) void sink(char *p) { __asm__ volatile(\"\" :: \"r\"(p) : \"memory\"); }\n"
        "int lib_copy(const void *in, unsigned long n) { char buf[16]; memcpy(buf, in, n);"
        " sink(buf); return buf[0]; }\n")
    (tmp_path / "arc.c").write_text("int twice(int x) { return 2 * x; }\n")
    (tmp_path / "main.c").write_text(
        "#include <stdio.h>\n#include <stdlib.h>\n"
        "int lib_copy(const void *, unsigned long); int twice(int);\n"
        "int main(int argc, char **argv) { long p[8] = {1,1,1,1,1,1,1,1};"
        " unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 8;"
        " printf(\"%d %d\\n\", twice(21), lib_copy(p, n)); return 0; }\n")
    (tmp_path / "Makefile").write_text(
        "CFLAGS = -O2 -fno-stack-protector\n"
        "prog: main.o libarc.a liblib.so\n\t$(CC) -o $@ main.o -L. -larc -llib -Wl,-rpath,$(CURDIR)\n"
        "libarc.a: arc.o\n\tar rcs $@ $^\n"
        "liblib.so: lib.c\n\t$(CC) $(CFLAGS) -fPIC -shared -o $@ $<\n")
    cc = " ".join(oscar + ["--", GCC])
    subprocess.run(["make", "-s", "CC=" + cc], cwd=tmp_path, check=True)
    ok = run(tmp_path / "prog")
    assert ok.returncode == 0 and ok.stdout == "42 1\n"
    bad = run(tmp_path / "prog", "40")
    assert bad.returncode == -signal.SIGABRT
    m = REPORT.match(bad.stderr.splitlines()[0])
    assert m and m.group(1) == "lib_copy"


def test_cmake_project(oscar, tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(p C)\n"
        "include(CheckFunctionExists)\ncheck_function_exists(qsort HAVE_QSORT)\n"
        "if(NOT HAVE_QSORT)\n  message(FATAL_ERROR \"configure check failed\")\nendif()\n"
        "add_executable(p p.c)\n")
    (tmp_path / "p.c").write_text(
        "#include <stdio.h>\nint main(void) { puts(\"built\"); return 0; }\n")
    env = dict(os.environ, CC=" ".join(oscar + ["--", GCC]))
    subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b")], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(tmp_path / "b")], check=True,
                   stdout=subprocess.DEVNULL)
    proc = run(tmp_path / "b" / "p")
    assert proc.stdout == "built\n"
    dyn = subprocess.run(["readelf", "-d", str(tmp_path / "b" / "p")], stdout=subprocess.PIPE,
                         text=True).stdout
    assert "liboscar_pss.so" in dyn


def test_random_offset(oscar, tmp_path):
    """--offset=random: a page-aligned offset in [-40 TiB, -3 TiB) drawn per process, on a page
    the program cannot write; the fixed offset is -0x21f3b5c7080 (about -2.12 TiB). Both are a
    page multiple minus 0x80 (runtime.c's PSS_SKEW)."""
    prog = build(oscar, tmp_path, "offset.c", "O2", "random")
    seen = set()
    for _ in range(3):
        proc = run(prog)
        assert proc.returncode == 0
        off = int(proc.stdout)
        assert -(40 << 40) <= off < -(3 << 40) and (off + 0x80) % 4096 == 0
        seen.add(off)
    assert len(seen) > 1
    assert run(prog, "write").returncode == -signal.SIGSEGV
    fixed = run(build(oscar, tmp_path, "offset.c", "O2", "check"))
    assert int(fixed.stdout) == -0x21f3b5c7080


@pytest.mark.parametrize("flag", ["-flto", "-pipe", "-save-temps"])
def test_lto_pipe_save_temps(oscar, tmp_path, flag):
    """The assembler wrapper sees link-time code generation's output, a pipe, and -save-temps'
    files too."""
    prog = build(oscar, tmp_path, "attack.c", "O2", "check", extra=[flag])
    proc = subprocess.run([str(prog), "32"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=tmp_path)
    assert proc.returncode == -signal.SIGABRT
    m = REPORT.match(proc.stderr.splitlines()[0])
    assert m and m.group(1).startswith("vulnerable")


# ---------------------------------------------------------------------------------------------
# The GS base and the leaves left alone


def _rewriter():
    import sys
    sys.path.insert(0, str(REPO / "shadowstack"))
    import pss_rewrite
    return pss_rewrite


def _instrumented_functions(oscar, tmp_path, source, opt="O2"):
    """Names of the functions of SOURCE whose entry copies the return address."""
    (tmp_path / "u.c").write_text(source)
    asm = subprocess.run(oscar + ["--", GCC, "-" + opt, "-fno-stack-protector", "-S", "-o", "-",
                                  str(tmp_path / "u.c")], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    text = _rewriter().rewrite(asm)
    names, current = set(), None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_]\w*):", line)
        if m:
            current = m.group(1)
        elif "%r11, %gs:-0x80(%rsp)" in line:
            names.add(current)
    return names


def test_only_leaves_that_write_no_memory_are_left_alone(oscar, tmp_path):
    src = ("struct s { long a, b; };\n"
           "long get(const struct s *p) { return p->a + p->b; }\n"
           "int less(const void *a, const void *b) { return *(const long *)a < *(const long *)b; }\n"
           "long pick(long x) { switch (x) { case 0: return 4; case 1: return 7; case 2: return 9;"
           " case 3: return 1; case 4: return 12; default: return 0; } }\n"
           "void set(struct s *p) { p->a = 1; }\n"
           "void fill(char *d, int n) { char buf[32]; for (int i = 0; i < n; i++) buf[i] = d[i];"
           " for (int i = 0; i < n; i++) d[i] = buf[i]; }\n"
           "long ext(long);\nlong calls(long x) { return ext(x) + 1; }\n"
           "long tail(long x) { return ext(x + 1); }\n"
           "void bump(long *p) { __atomic_fetch_add(p, 1, __ATOMIC_SEQ_CST); }\n"
           "long asm_(long x) { x = x * 3 + 1; __asm__ volatile(\"nop\" : \"+r\"(x)); return x; }\n")
    names = _instrumented_functions(oscar, tmp_path, src, "O2")
    assert {"set", "fill", "calls", "bump", "asm_"} <= names, names
    assert not names & {"get", "less", "pick"}, names
    # -O0 keeps arguments in the frame: every function with a parameter writes memory.
    names = _instrumented_functions(oscar, tmp_path, src, "O0")
    assert {"set", "fill", "calls", "bump", "get", "less", "pick"} <= names, names


def test_write_classification():
    w = _rewriter()._may_write_memory
    for line in ("\tmovq\t%rax, (%rdi)", "\taddl\t$1, 8(%rsp)", "\tincq\tcounter(%rip)",
                 "\tsete\t(%rax)", "\tpopq\t(%rax)", "\trep stosq", "\tlock addq $1, (%rdi)",
                 "\txchgq\t%rax, (%rdi)", "\tmovsb", "\tvmovdqu\t%ymm0, (%rdi,%rax)",
                 "\tfstpl\t(%rdi)", "\tcall\tf", "\tbtsq\t$3, (%rdi)", "\tmovups\t%xmm0, x(%rip)",
                 "\tmovl\t$0, %fs:errno@tpoff", "\tmovq\t%rax, %fs:40"):
        assert w(line), line
    for line in ("\tmovq\t(%rdi), %rax", "\tcmpq\t$0, (%rdi)", "\ttestb\t$1, (%rax)",
                 "\tpushq\t%rbx", "\tpopq\t%rbx", "\tleaq\t8(%rsp), %rax", "\tret",
                 "\tvmovdqu\t(%rsi), %ymm0", "\tucomisd\t(%rax), %xmm0", "\tcltq",
                 "\tmovq\t%fs:40, %rax"):
        assert not w(line), line


def test_gs_base_is_the_offset_in_every_thread(oscar, tmp_path):
    """The runtime sets the GS base to the offset + 0x80; threads and fork children inherit it
    (code built with the default addressing reads the copy at %gs:-0x80(%rsp))."""
    (tmp_path / "gs.c").write_text(
        "#include <pthread.h>\n#include <stdio.h>\n#include <unistd.h>\n#include <sys/wait.h>\n"
        "static long base(void) { long b; __asm__ volatile(\"rdgsbase %0\" : \"=r\"(b)); return b; }\n"
        "static void *t(void *p) { (void)p; printf(\"thread %ld\\n\", base()); return 0; }\n"
        "int main(void) { printf(\"main %ld\\n\", base()); fflush(stdout);\n"
        " pthread_t th; pthread_create(&th, 0, t, 0); pthread_join(th, 0); fflush(stdout);\n"
        " if (fork() == 0) { printf(\"child %ld\\n\", base()); fflush(stdout); _exit(0); }\n"
        " wait(0); return 0; }\n")
    for how, expect in (("fixed", -0x21f3b5c7000), ("random", None)):
        out = tmp_path / ("gs-" + how)
        subprocess.run(oscar + ["--offset=" + how, "--", GCC, "-O2", "-pthread", "-o", str(out),
                                str(tmp_path / "gs.c")], check=True)
        proc = run(out)
        assert proc.returncode == 0, proc.stderr
        values = {line.split()[0]: int(line.split()[1]) for line in proc.stdout.splitlines()}
        assert set(values) == {"main", "thread", "child"}
        assert len(set(values.values())) == 1, values
        if expect is not None:
            assert values["main"] == expect
        else:
            assert -(40 << 40) <= values["main"] < -(3 << 40) and values["main"] % 4096 == 0


# ---------------------------------------------------------------------------------------------
# Without FSGSBASE: the runtime patches the GS instructions into calls of thunks
# (OSCAR_PSS_GS=patch takes that path on a machine that has FSGSBASE)

PATCH_ENV = dict(os.environ, OSCAR_PSS_GS="patch")
GS_POISON = 0x7FFF00000000  # runtime.c: where %gs:-0x80(%rsp) is never a canonical address


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_patched_attack_stopped(oscar, tmp_path, opt, where):
    prog = build(oscar, tmp_path, "attack.c", opt, "check")
    proc = run(prog, "32", where, env=PATCH_ENV)
    assert proc.returncode == -signal.SIGABRT, (proc.stdout, proc.stderr)
    win = proc.stdout.splitlines()[0].split("=")[1]
    m = REPORT.match(proc.stderr.splitlines()[0])
    assert m and m.group(1) == "vulnerable", proc.stderr
    assert m.group(3) == win and m.group(2) != win
    if opt == "O2":
        proc = run(build(oscar, tmp_path, "attack.c", opt, "overwrite"), "32", where,
                   env=PATCH_ENV)
        assert proc.returncode == 0 and proc.stderr == "", (proc.stdout, proc.stderr)
        assert proc.stdout.splitlines()[-1] == "returned normally"


@pytest.mark.parametrize("source", ["threads.c", "callbacks.c", "longjmp.c", "exceptions.cc"])
def test_patched_same_output_as_plain(oscar, tmp_path, source):
    plain = run(build(oscar, tmp_path, source, "O2", "plain"))
    assert plain.returncode == 0, plain.stderr
    for how in ("check", "overwrite", "random"):
        proc = run(build(oscar, tmp_path, source, "O2", how), env=PATCH_ENV)
        assert proc.returncode == 0, (how, proc.stderr)
        assert (proc.stdout, proc.stderr) == (plain.stdout, plain.stderr), how


def test_patched_code_and_gs_base(oscar, tmp_path):
    """The code of the program and of a dlopen'ed library is patched (no GS instruction is left
    at an entry), the GS base is the poison value in every thread and fork child, and the code
    is left alone (GS base = the offset) where FSGSBASE is used."""
    (tmp_path / "lib.c").write_text(
        "#include <string.h>\n"
        "int lib_copy(const char *in, unsigned long n) { char buf[16]; memcpy(buf, in, n);"
        " return buf[0]; }\n")
    (tmp_path / "gsp.c").write_text(
        "#include <dlfcn.h>\n#include <pthread.h>\n#include <stdio.h>\n#include <string.h>\n"
        "#include <sys/auxv.h>\n#include <sys/wait.h>\n#include <unistd.h>\n"
        "static long base(void) { long b = -1; if (getauxval(AT_HWCAP2) & 2)"
        " __asm__ volatile(\"rdgsbase %0\" : \"=r\"(b)); return b; }\n"
        "static const unsigned char ST[6] = {0x65, 0x4c, 0x89, 0x5c, 0x24, 0x80};\n"
        "static const char *code(const void *f) { const unsigned char *p = f;"
        " for (int i = 0; i < 24; i++) { if (!memcmp(p + i, ST, 6)) return \"gs\";"
        " if (p[i] == 0xe8 && p[i + 5] == 0x90) return \"call\"; } return \"?\"; }\n"
        "__attribute__((noinline)) int twice(int x) { volatile char b[8]; b[3] = (char)x;"
        " return b[3] * 2; }\n"
        "static void *t(void *p) { (void)p; printf(\"thread %ld\\n\", base()); return 0; }\n"
        "int main(int argc, char **argv) { (void)argc;\n"
        " printf(\"main %ld\\n\", base()); fflush(stdout);\n"
        " pthread_t th; pthread_create(&th, 0, t, 0); pthread_join(th, 0); fflush(stdout);\n"
        " if (fork() == 0) { printf(\"child %ld\\n\", base()); fflush(stdout); _exit(0); }\n"
        " wait(0);\n"
        " void *h = dlopen(argv[1], RTLD_NOW); if (!h) return 3;\n"
        " int (*copy)(const char *, unsigned long) = (int (*)(const char *, unsigned long))"
        "dlsym(h, \"lib_copy\");\n"
        " printf(\"code %s %s\\n\", code((void *)twice), code((void *)copy));\n"
        " printf(\"results %d %d\\n\", twice(3), copy(\"abcdefgh\", 8)); fflush(stdout);\n"
        " static char big[64]; memset(big, 0x41, sizeof big); return copy(big, sizeof big); }\n")
    lib = tmp_path / "libl.so"
    prog = tmp_path / "gsp"
    subprocess.run(oscar + ["--", GCC, "-O2", "-fPIC", "-shared", "-fno-stack-protector", "-o",
                            str(lib), str(tmp_path / "lib.c")], check=True)
    subprocess.run(oscar + ["--", GCC, "-O2", "-pthread", "-o", str(prog),
                            str(tmp_path / "gsp.c"), "-ldl"], check=True)
    hw = bool(os.path.exists("/proc/self/auxv") and _hwcap2() & 2)
    for env, base, code in ((PATCH_ENV, GS_POISON, "call call"),
                            (None, -0x21F3B5C7000, "gs gs")):
        if env is None and not hw:
            continue
        proc = run(prog, str(lib), env=env)
        # The library's overflow is caught in both cases (its return address was copied).
        assert proc.returncode == -signal.SIGABRT, (proc.stdout, proc.stderr)
        m = REPORT.match(proc.stderr.splitlines()[0])
        assert m and m.group(1) == "lib_copy" and m.group(3) == "0x4141414141414141"
        lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
        assert lines["code"] == code, proc.stdout
        assert lines["results"] == "6 97"
        if hw:
            assert {lines["main"], lines["thread"], lines["child"]} == {str(base)}, lines


def _hwcap2():
    import struct
    data = open("/proc/self/auxv", "rb").read()
    for i in range(0, len(data), 16):
        key, value = struct.unpack("QQ", data[i:i + 16])
        if key == 26:  # AT_HWCAP2
            return value
    return 0


# ---------------------------------------------------------------------------------------------
# Code that runs before liboscar_pss.so's constructor or before main


def _early(oscar, tmp_path, how, start=True):
    """early.c linked with a plain library whose constructor calls back into it and an
    instrumented library with a constructor; start=False links without liboscar_pss_start.a
    (the .preinit_array entry), as oscar cc did before."""
    plain = tmp_path / "libearly_plain.so"
    subprocess.run([GCC, "-O2", "-fPIC", "-shared", "-o", str(plain),
                    str(SRC / "early_plain.c")], check=True)
    lib = tmp_path / "libearly_lib.so"
    mode = ["--mode=" + how, "--"]
    subprocess.run(oscar + mode + [GCC, "-O2", "-fPIC", "-shared", "-o", str(lib),
                                   str(SRC / "early_lib.c")], check=True)
    env = None
    runtime_dir = RUNTIME.parent
    if not start:
        # The runtime from a folder without the archive (a copy: the driver resolves links).
        alone = tmp_path / "alone"
        alone.mkdir(exist_ok=True)
        shutil.copy(RUNTIME, alone / "liboscar_pss.so")
        env = dict(os.environ, OSCAR_PSS_LIBRARY=str(alone / "liboscar_pss.so"))
        runtime_dir = alone
    # This order of DT_NEEDED makes glibc run the plain library's constructor before
    # liboscar_pss.so's (the test checks it).
    prog = tmp_path / ("early-%s-%d" % (how, start))
    subprocess.run(oscar + mode + [GCC, "-O2", "-o", str(prog), str(SRC / "early.c"),
                                   "-Wl,--no-as-needed", "-L" + str(tmp_path), "-learly_lib",
                                   "-L" + str(runtime_dir), "-loscar_pss", "-learly_plain",
                                   "-Wl,-rpath," + str(tmp_path)],
                   check=True, env=env)
    return prog


EARLY_OUTPUT = ("preinit\nplain library's constructor\nlib: constructor\nconstructor 101\n"
                "main\nenvironment\nlib: ifunc\n")


def _init_order(prog):
    """The libraries whose constructors glibc calls, in order (LD_DEBUG=files)."""
    err = subprocess.run([str(prog)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, LD_DEBUG="files")).stderr
    return [os.path.basename(line.split("calling init:")[1].strip())
            for line in err.splitlines() if "calling init:" in line]


@pytest.mark.parametrize("how", ["check", "overwrite"])
@pytest.mark.parametrize("env", [None, PATCH_ENV], ids=["gsbase", "patched"])
def test_code_before_the_runtime_constructor(oscar, tmp_path, how, env):
    """The executable's .preinit_array entry (liboscar_pss_start.a) sets the runtime up before
    every shared library's constructor and the program's own preinit entries; IFUNC resolvers
    are left uninstrumented. The plain library's constructor may run before liboscar_pss.so's
    (it does not depend on it): it calls back into the program."""
    prog = _early(oscar, tmp_path, how)
    proc = run(prog, env=env)
    assert (proc.returncode, proc.stderr) == (0, ""), (proc.stdout, proc.stderr)
    assert proc.stdout == EARLY_OUTPUT
    order = _init_order(prog)
    assert order.index("libearly_plain.so") < order.index("liboscar_pss.so"), order


def test_code_before_the_runtime_constructor_without_preinit(oscar, tmp_path):
    """Without the preinit entry the program's preinit hook runs with a GS base of 0: its
    buffer overwrites the copy at %rsp - 0x80 and the check fails (no shadow is mapped yet to
    report from). The reproducer of the fix above."""
    proc = run(_early(oscar, tmp_path, "check", start=False))
    assert proc.returncode != 0 and proc.stdout.startswith("preinit\n"), proc


def test_ifunc_resolvers_left_alone():
    import sys
    sys.path.insert(0, str(REPO / "shadowstack"))
    import pss_rewrite
    asm = subprocess.run([GCC, "-O2", "-S", "-o", "-", str(SRC / "early.c")],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    out = pss_rewrite.rewrite(asm)
    body = out[out.index("resolve_twice:"):out.index(".size\tresolve_twice")]
    assert "%gs:" not in body
    body = out[out.index("hook:"):out.index(".size\thook")]
    assert "%gs:" in body


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_gdb_with_patched_path(oscar, tmp_path):
    """gdb cannot resume a program whose GS base is the (negative) offset: ptrace refuses to
    write it back. With OSCAR_PSS_GS=patch the base is in the user half and gdb works."""
    prog = build(oscar, tmp_path, "attack.c", "O2", "check")
    cmd = ["gdb", "-q", "-batch", "-ex", "break main", "-ex", "run 16", "-ex", "continue",
           str(prog)]
    stuck = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120)
    if _hwcap2() & 2:
        assert "Couldn't write registers" in stuck.stdout, stuck.stdout
    ok = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                        timeout=120, env=PATCH_ENV)
    assert "exited normally" in ok.stdout and "Couldn't write" not in ok.stdout, ok.stdout
