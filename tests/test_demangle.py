"""C++ names in reports (issue 20: reports read like AddressSanitizer's): src/report/demangle.c
demangles a frame's function name in the process, without allocating (the SIGSEGV handler),
as c++filt prints it, or leaves it unchanged where it has no answer.

The corpus: every mangled name libstdc++.so.6 exports and every C++ name in the test
programs' binaries; each must come out exactly as c++filt prints it, or unchanged (never
another text), and at least 90% exactly. Then truncated and mutated names (no crash, never a
wrong name), and a C++ use after free whose report names `thr(void*)` and `Widget::poke(int)`
in each mode."""

import os
import random
import re
import shutil
import signal
import subprocess

import pytest

from conftest import CLI, REPO, TESTS, assert_report, hexaddr, parse_values

LIBSTDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
FRAME = re.compile(r"    #(\d+) (0x[0-9a-f]+) (?:in (.+?) )?(?:(\S+):(\d+) )?\((\S+)\+(0x[0-9a-f]+)\)")


def need(tool):
    if not shutil.which(tool):
        pytest.skip("%s (binutils) is not installed" % tool)


@pytest.fixture(scope="module")
def check_tool(tmp_path_factory):
    """tools/demangle_check.c built with report/demangle.c: names on stdin, one a line."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("demangle") / "demangle_check"
    subprocess.run([cc, "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(REPO / "src"),
                    str(REPO / "tools/demangle_check.c"), str(REPO / "src/report/demangle.c"),
                    "-o", str(out)], check=True)
    return out


def run(tool, names, *args):
    res = subprocess.run([str(tool)] + list(args), input="\n".join(names) + "\n",
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def cxxfilt(names):
    need("c++filt")
    return subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                          text=True, timeout=60, check=True).stdout.splitlines()


def mangled_names(binary, dynamic=False):
    need("nm")
    cmd = ["nm", "-D", "--defined-only", str(binary)] if dynamic else ["nm", str(binary)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    names = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()}
    return {n for n in names if n.startswith("_Z")}


@pytest.fixture(scope="module")
def corpus(build):
    names = set()
    if os.path.exists(LIBSTDCXX):
        names |= mangled_names(LIBSTDCXX, dynamic=True)
    for source in sorted((TESTS / "programs").glob("*.cc")):
        binary = build.programs_dir / source.stem
        if binary.exists():
            names |= mangled_names(binary)
    if len(names) < 100:
        pytest.skip("no C++ symbols to compare (libstdc++ or the C++ test programs missing)")
    return sorted(names)


def compare(tool, names):
    """(exact, unchanged, wrong list) of the demangler against c++filt."""
    mine, ref = run(tool, names), cxxfilt(names)
    assert len(mine) == len(names) == len(ref)
    exact = sum(m == r for m, r in zip(mine, ref))
    unchanged = sum(m != r and m == n for n, m, r in zip(names, mine, ref))
    wrong = [(n, m, r) for n, m, r in zip(names, mine, ref) if m != r and m != n]
    return exact, unchanged, wrong


def test_corpus_as_cxxfilt_prints_it(check_tool, corpus):
    exact, unchanged, wrong = compare(check_tool, corpus)
    rate = exact / len(corpus)
    print("demangle: %d names, %d exactly as c++filt (%.1f%%), %d unchanged"
          % (len(corpus), exact, 100 * rate, unchanged))
    assert not wrong, "\n".join("%s\n  oscar:   %s\n  c++filt: %s" % w for w in wrong[:10])
    assert rate >= 0.90, (exact, len(corpus))


def test_broken_names_never_give_a_wrong_name(check_tool, corpus):
    """Truncated and mutated names (deterministic): no crash, and each comes out as c++filt
    prints it or unchanged."""
    rnd = random.Random(20)
    sample = rnd.sample(corpus, min(len(corpus), 1500))
    broken = []
    for name in sample:
        broken.append(name[:rnd.randrange(2, len(name))])
        chars = list(name)
        chars[rnd.randrange(2, len(chars))] = rnd.choice("0123456789_SZNEIJLTDKPRFAvicx.")
        broken.append("".join(chars))
    _, _, wrong = compare(check_tool, broken)
    assert not wrong, "\n".join("%s\n  oscar:   %s\n  c++filt: %s" % w for w in wrong[:10])


EXPECTED = {
    "_ZL3thrPv": "thr(void*)",
    "_ZNSt6vectorIiSaIiEE9push_backERKi": "std::vector<int, std::allocator<int> >::push_back(int const&)",
    "_ZN3Foo3barEi": "Foo::bar(int)",
    "_ZNK3Foo3barEi.cold": "Foo::bar(int) const [clone .cold]",
    "_Z3foov.isra.0": "foo() [clone .isra.0]",
    "_Z3foov.constprop.0.isra.0": "foo() [clone .constprop.0] [clone .isra.0]",
    "_ZZ4mainE5count": "main::count",
    "_ZN5OuterIiE5InnerC2Ev": "Outer<int>::Inner::Inner()",
    "_ZN3FooD0Ev": "Foo::~Foo()",
    "_Znwm": "operator new(unsigned long)",
    "_ZdlPvm": "operator delete(void*, unsigned long)",
    "_ZN3FooixEm": "Foo::operator[](unsigned long)",
    "_ZN3FooclEv": "Foo::operator()()",
    "_ZlsRSoRK3Foo": "operator<<(std::basic_ostream<char, std::char_traits<char> >&, Foo const&)",
    "_Z5arrayILi5EEvv": "void array<5>()",
    "_Z3maxIiET_S0_S0_": "int max<int>(int, int)",
    "_Z5applyPFviEPKc": "apply(void (*)(int), char const*)",
    "_ZN12_GLOBAL__N_14tickEv": "(anonymous namespace)::tick()",
    "_ZZ4mainENKUlvE_clEv": "main::{lambda()#1}::operator()() const",
    "_ZTV3Foo": "vtable for Foo",
    "_ZThn8_N3FooD1Ev": "non-virtual thunk to Foo::~Foo()",
    "_ZNSs6appendEPKc": ("std::basic_string<char, std::char_traits<char>, std::allocator<char> >"
                         "::append(char const*)"),
}


def test_names_of_the_grammar(check_tool):
    names = sorted(EXPECTED)
    assert run(check_tool, names) == [EXPECTED[n] for n in names]


def test_no_answer_leaves_the_name_unchanged(check_tool):
    """Too small a buffer, an expression in template arguments, garbage, not C++: unchanged."""
    long_name = "_ZNSt6vectorIiSaIiEE9push_backERKi"
    assert run(check_tool, [long_name], "16") == [long_name]
    assert run(check_tool, [long_name], str(len(EXPECTED[long_name]) + 1)) == [EXPECTED[long_name]]
    odd = ["_Z1fIiEDTcl1gT_EES0_", "_ZN3FooE_", "_Z", "_Z3fo", "main", "_Z3foov.A",
           "_Z" + "P" * 5000 + "i", "_Z1f" + "N1a" * 200]
    assert run(check_tool, odd) == odd


# ---- reports


MODES = {  # mode: (arguments, settings, access)
    "strict": ((), {}, "READ"),
    "fast": (("write", "big"), {}, "WRITE"),  # (fast mode: objects over 32 KiB revoked at once)
    "protect": ((), {"OSCAR_SAMPLE_RATE": "1"}, "READ"),  # (a sampled object)
}


def frames_under(report, header):
    """The function names of the frames under the first line matching header."""
    for i, line in enumerate(report):
        if re.fullmatch(header, line):
            names = []
            for l in report[i + 1:]:
                m = FRAME.fullmatch(l)
                if not m:
                    break
                names.append(m.group(3))
            return names
    raise AssertionError("no %r in the report:\n%s" % (header, "\n".join(report)))


@pytest.mark.parametrize("mode", sorted(MODES))
def test_report_names_cxx_functions_as_asan_does(runner, mode):
    args, settings, access = MODES[mode]
    res = runner.oscar("cxx_uaf_names", *args, env=dict(settings, OSCAR_MODE=mode))
    v = parse_values(res.stdout)
    assert "access" in v, res.describe()
    report = assert_report(res, signal.SIGSEGV, r"oscar: heap-use-after-free on address %s \(%s\)"
                           % (hexaddr(v["access"]), access))
    at = frames_under(report, r"%s by thread \d+ here:" % access)
    if access == "READ":  # Widget::at is inlined into Widget::peek: its DWARF linkage name
        assert at[:3] == ["Widget::at(int) const", "Widget::peek(int) const", "thr(void*)"], res.describe()
    else:
        assert at[:2] == ["Widget::poke(int)", "thr(void*)"], res.describe()
    freed = frames_under(report, r"freed by thread \d+ here:")
    assert freed[:2] == ["demo::drop(Widget*)", "main"], res.describe()
    allocated = frames_under(report, r"previously allocated by thread \d+ here:")
    assert allocated[:2] == ["Widget* demo::make<Widget>(int, unsigned long)", "main"], res.describe()
    assert not any(name and name.startswith("_Z") for name in at + freed + allocated), res.describe()


def without_file_line(lines):
    """The report as it reads without debug information: the symbol table's (mangled) names,
    no FILE:LINE, one line per pc."""
    out, last_pc = [], None
    for line in lines:
        m = FRAME.fullmatch(line)
        if not m:
            out.append(line)
            last_pc = None
            continue
        if m.group(2) != last_pc:
            out.append("    #%s %s (%s+%s)" % (m.group(1), m.group(2), m.group(6), m.group(7)))
        last_pc = m.group(2)
    return out


def test_oscar_symbolize_gives_the_same_names(runner):
    """`oscar symbolize` (addr2line -C, offline) names the program's frames, inlined ones
    too, as the report did in the process."""
    runner.info.require_cli()
    need("addr2line")
    res = runner.oscar("cxx_uaf_names", env={"OSCAR_MODE": "strict"})
    live = res.stderr.splitlines()
    done = subprocess.run([str(CLI), "symbolize"], input="\n".join(without_file_line(live)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    offline = done.stdout.splitlines()
    for header in (r"READ by thread \d+ here:", r"freed by thread \d+ here:",
                   r"previously allocated by thread \d+ here:"):
        here = [f for f in frames_under(live, header) if f]
        there = [f for f in frames_under(offline, header) if f]
        assert here[:3] == there[:3], (header, done.stdout, res.stderr)
