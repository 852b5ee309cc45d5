"""Reports with file:line and whole stacks (issue 20, items 2 and 3): every frame of a -g program
names its file and line (from DWARF, in the report itself), an inlined function is a frame of its
own, a use-after-free inside libc (no frame pointers) still shows main, a program built
-O2 -fomit-frame-pointer shows all three stacks down to main, and `oscar symbolize` resolves a
saved report offline."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import CLI, TESTS, assert_report, hexaddr, location_line, parse_values, report_lines

# "    #N 0xPC in FUNCTION FILE:LINE (MODULE+0xOFF)"; FILE:LINE only where debug info exists.
FRAME = re.compile(r"    #(\d+) (0x[0-9a-f]+) (?:in (\S+) )?(?:(\S+):(\d+) )?\((\S+)\+(0x[0-9a-f]+)\)")
PROGRAMS = TESTS / "programs"


def stack(report, header):
    """The frames under the first line matching header: dicts n, pc, func, file, line, module."""
    for i, line in enumerate(report):
        if re.fullmatch(header, line):
            frames = []
            for frame_line in report[i + 1:]:
                m = FRAME.fullmatch(frame_line)
                if not m:
                    break
                n, pc, func, file, line_no, module, off = m.groups()
                frames.append(dict(n=int(n), pc=pc, func=func, file=file,
                                   line=int(line_no) if line_no else None, module=module, off=off))
            assert frames, "no frames under %r:\n%s" % (header, "\n".join(report))
            return frames
    raise AssertionError("no line matching %r in the report:\n%s" % (header, "\n".join(report)))


def marker_line(source, marker):
    """The line number of the line of source that holds the comment marker."""
    for number, text in enumerate(source.read_text().splitlines(), 1):
        if re.search(r"/\* %s \*/" % re.escape(marker), text):
            return number
    raise AssertionError("no marker %s in %s" % (marker, source))


def where(frames):
    """(function, file name, line) of each frame."""
    return [(f["func"], os.path.basename(f["file"]) if f["file"] else None, f["line"]) for f in frames]


def three_stacks(report, access="READ"):
    return (stack(report, r"%s by thread \d+ here:" % access),
            stack(report, r"freed by thread \d+ here:"),
            stack(report, r"previously allocated by thread \d+ here:"))


def test_every_frame_of_a_g_program_names_file_and_line(runner):
    res = runner.oscar("report_stacks")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 48))
    access, freed, allocated = three_stacks(report)
    src = "report_stacks.c"
    # report_stacks.c: make_record mallocs on line 12, drop_record frees on 18, read_record reads
    # on 20; main calls them on lines 24, 26 and 28.
    assert where(access)[:2] == [("read_record", src, 20), ("main", src, 28)], report
    assert where(freed)[:2] == [("drop_record", src, 18), ("main", src, 26)], report
    assert where(allocated)[:2] == [("make_record", src, 12), ("main", src, 24)], report
    for frames in (access, freed, allocated):
        assert [f["n"] for f in frames] == list(range(len(frames))), frames
        for f in frames:
            # (_start comes from crt1.o, built without debug information)
            if f["module"].endswith("/report_stacks") and f["func"] != "_start":
                assert f["file"] == str(PROGRAMS / src) and f["line"], (f, report)


def test_inlined_function_is_a_frame_of_its_own(runner):
    res = runner.oscar("report_inlined")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 64))
    access = stack(report, r"READ by thread \d+ here:")
    source = PROGRAMS / "report_inlined.c"
    src = source.name
    assert where(access)[:3] == [("peek_value", src, marker_line(source, "LINE_PEEK")),
                                 ("read_through_inline", src, marker_line(source, "LINE_CALL")),
                                 ("main", src, marker_line(source, "LINE_MAIN"))], report
    # The inlined frame and its caller are the same instruction.
    assert access[0]["pc"] == access[1]["pc"] and access[0]["off"] == access[1]["off"], report
    assert access[1]["pc"] != access[2]["pc"], report


@pytest.mark.parametrize("what,access_kind", [("memset", "WRITE"), ("memcpy", "WRITE"), ("strlen", "READ")])
def test_uaf_inside_libc_shows_main(runner, what, access_kind):
    res = runner.oscar("uaf_in_libc", what)
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (%s)"
                                     % (hexaddr(v["access"]), access_kind)),
                           location_line(v["access"], v["ptr"], 100))
    access = stack(report, r"%s by thread \d+ here:" % access_kind)
    source = PROGRAMS / "uaf_in_libc.c"
    assert re.search(r"/libc\.so\.6$", access[0]["module"]), report
    assert where(access)[1] == ("main", source.name, marker_line(source, "LINE_ACCESS " + what)), report


@pytest.fixture(scope="module")
def nofp_program(tmp_path_factory):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler (gcc) to build the -O2 -fomit-frame-pointer program")
    out = tmp_path_factory.mktemp("nofp") / "report_nofp"
    subprocess.run([gcc, "-O2", "-fomit-frame-pointer", "-g", "-fno-builtin", "-I", str(PROGRAMS),
                    "-o", str(out), str(PROGRAMS / "report_nofp.c")], check=True)
    return out


def test_no_frame_pointers_all_three_stacks_reach_main(runner, nofp_program):
    res = runner.oscar(nofp_program)
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 48))
    access, freed, allocated = three_stacks(report)
    source = PROGRAMS / "report_nofp.c"
    src = source.name

    def at(func, marker):
        return (func, src, marker_line(source, marker))

    assert where(access)[:3] == [at("read_record", "LINE_READ"), at("read_outer", "LINE_READ_OUTER"),
                                 at("main", "LINE_MAIN_READ")], report
    assert where(freed)[:3] == [at("drop_record", "LINE_FREE"), at("drop_outer", "LINE_DROP_OUTER"),
                                at("main", "LINE_MAIN_DROP")], report
    assert where(allocated)[:3] == [at("make_record", "LINE_MALLOC"), at("make_outer", "LINE_MAKE_OUTER"),
                                    at("main", "LINE_MAIN_MAKE")], report


def strip_file_line(text):
    """The report as an older Oscar wrote it: no FILE:LINE, one line per pc (inlined frames gone)."""
    out, seen_pc, number = [], None, 0
    for line in text.splitlines():
        m = FRAME.fullmatch(line)
        if not m:
            out.append(line)
            seen_pc, number = None, 0
            continue
        n, pc, func, file, line_no, module, off = m.groups()
        if pc == seen_pc:  # an inlined frame: the old report had only the outermost
            out[-1] = "    #%d %s %s(%s+%s)" % (number - 1, pc, "in %s " % func if func else "", module, off)
            continue
        out.append("    #%d %s %s(%s+%s)" % (number, pc, "in %s " % func if func else "", module, off))
        seen_pc, number = pc, number + 1
    return "\n".join(out) + "\n"


def oscar_symbolize(runner, text, *args):
    runner.info.require_cli()
    if not shutil.which("addr2line"):
        pytest.skip("addr2line (binutils) is not installed")
    return subprocess.run([str(CLI), "symbolize"] + list(args), input=text, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("program", ["report_inlined", "report_stacks"])
def test_oscar_symbolize_resolves_a_saved_report_offline(runner, program):
    res = runner.oscar(program)
    assert res.returncode == -signal.SIGSEGV, res.describe()
    live = res.stderr
    old = strip_file_line(live)
    assert ".c:" not in old, old
    done = oscar_symbolize(runner, old)
    assert done.returncode == 0, done.stderr
    report = [l for l in done.stdout.splitlines()]
    live_report = live.splitlines()
    for header in (r"READ by thread \d+ here:", r"freed by thread \d+ here:",
                   r"previously allocated by thread \d+ here:"):
        offline = [f for f in stack(report, header) if f["module"].endswith("/" + program)]
        inproc = [f for f in stack(live_report, header) if f["module"].endswith("/" + program)]
        # The same functions, files and lines as the report resolved in the process.
        assert where(offline) == where(inproc), (header, done.stdout, live)
        assert all(f["file"] and f["line"] for f in offline if f["func"] != "_start"), done.stdout


def test_oscar_symbolize_keeps_resolved_frames_and_other_lines(runner):
    res = runner.oscar("report_inlined")
    done = oscar_symbolize(runner, res.stderr)
    assert done.returncode == 0, done.stderr
    # Frames with FILE:LINE and every other line come out as they went in, in order (frames
    # without, such as libc's, may gain a file and line from a debug file).
    kept = [l for l in res.stderr.splitlines() if not FRAME.fullmatch(l) or FRAME.fullmatch(l).group(4)]
    out = iter(done.stdout.splitlines())
    assert all(any(l == o for o in out) for l in kept), (done.stdout, res.stderr)


def test_uaf_on_alternate_signal_stack_reaches_main(runner):
    """The handler runs on a sigaltstack: the walk crosses the kernel's signal frame
    (__restore_rt's 'S' CIE) back to the interrupted raise() and main on the thread's stack."""
    res = runner.oscar("uaf_on_altstack")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 30))
    access = stack(report, r"READ by thread \d+ here:")
    funcs = [f["func"] for f in access]
    assert funcs[0] == "on_usr1" and "raise" in funcs and "main" in funcs, report
    assert funcs.index("raise") < funcs.index("main"), report


def test_libc_frames_have_file_and_line_when_its_debug_file_is_installed(runner):
    """libc6-dbg: a separate debug file found by build id, with zlib-compressed sections."""
    out = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"], capture_output=True,
                         text=True).stdout if shutil.which("readelf") else ""
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m or not os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (m.group(1)[:2], m.group(1)[2:])):
        pytest.skip("libc's debug file (libc6-dbg) is not installed, or readelf is missing")
    res = runner.oscar("uaf_in_libc", "memset")
    report = assert_report(res, signal.SIGSEGV, r"oscar: heap-use-after-free on address 0x[0-9a-f]+ \(WRITE\)")
    access = stack(report, r"WRITE by thread \d+ here:")
    assert access[0]["file"] and re.search(r"memset.*\.S$", access[0]["file"]) and access[0]["line"], report
    assert access[1]["func"] == "main", report


def test_file_and_line_with_stack_recording_off(runner):
    """OSCAR_STACK_DEPTH=0: no capture ever fills the module table; the access stack of the
    report still names modules, files and lines (the table is filled at start)."""
    res = runner.oscar("report_stacks", env={"OSCAR_STACK_DEPTH": "0"})
    report = assert_report(res, signal.SIGSEGV, r"oscar: heap-use-after-free on address .*")
    access = stack(report, r"READ by thread \d+ here:")
    assert where(access)[:2] == [("read_record", "report_stacks.c", 20), ("main", "report_stacks.c", 28)], report


PLUGIN = r"""
__attribute__((noinline)) int plugin_read(const char *p) {
    return p[3]; /* LINE_PLUGIN */
}
"""

HOST = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char *p = malloc(40);
    printf("ptr 0x%lx\n", (unsigned long)p);
    free(p);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 3;
    int (*read_it)(const char *) = (int (*)(const char *))dlsym(h, "plugin_read");
    return read_it(p); /* LINE_CALL */
}
"""


def test_fault_in_a_library_loaded_after_the_last_capture(runner, tmp_path):
    """The library was dlopen'ed after any stack was recorded (here none: OSCAR_STACK_DEPTH=0),
    so the module table does not know it; the SIGSEGV handler must not ask the loader (its lock)
    and finds it in /proc/self/maps instead."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler (gcc)")
    (tmp_path / "plugin.c").write_text(PLUGIN)
    (tmp_path / "host.c").write_text(HOST)
    subprocess.run([gcc, "-O1", "-g", "-shared", "-fPIC", "-o", str(tmp_path / "plugin.so"),
                    str(tmp_path / "plugin.c")], check=True)
    subprocess.run([gcc, "-O0", "-g", "-o", str(tmp_path / "host"), str(tmp_path / "host.c"), "-ldl"],
                   check=True)
    res = runner.oscar(tmp_path / "host", str(tmp_path / "plugin.so"), env={"OSCAR_STACK_DEPTH": "0"})
    report = assert_report(res, signal.SIGSEGV, r"oscar: heap-use-after-free on address .*")
    access = stack(report, r"READ by thread \d+ here:")
    assert where(access)[:2] == [("plugin_read", "plugin.c", marker_line(tmp_path / "plugin.c", "LINE_PLUGIN")),
                                 ("main", "host.c", marker_line(tmp_path / "host.c", "LINE_CALL"))], report
    assert access[0]["module"] == str(tmp_path / "plugin.so"), report


def test_deeply_inlined_frames_pair_each_name_with_its_line(runner):
    """Twelve nested inlined functions (more than the eight frames a pc once resolved to): every
    one is a frame, innermost first, each named with a line of its own body, then main. (Before:
    the eight outermost were kept and the innermost line was printed under inline5's name.)"""
    res = runner.oscar("report_inlined_deep")
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGSEGV,
                  re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])))
    access = stack(report_lines(res), r"READ by thread \d+ here:")
    source = PROGRAMS / "report_inlined_deep.c"
    lines = source.read_text().splitlines()
    defined = {"inline%d" % k: next(i for i, t in enumerate(lines, 1) if "INL inline%d(" % k in t)
               for k in range(1, 13)}
    want = [("inline%d" % k, source.name, defined["inline%d" % k]) for k in range(1, 13)]
    assert where(access)[:13] == want + [("main", source.name, marker_line(source, "LINE_MAIN"))], (
        "\n".join(report_lines(res)))
