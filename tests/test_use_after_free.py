"""Use-after-free detection: SIGSEGV and the exact heap-use-after-free report.

Each program prints `ptr` (the freed object), `size`, `offset` and `access` (the address it
touches) before the bad access, and "NOT REACHED" after it.
"""

import os
import re
import signal

import pytest

from conftest import HEX, assert_report, hexaddr, location_line, parse_values


def uaf_first_line(addr, kind):
    return r"oscar: heap-use-after-free on address %s \(%s\)" % (hexaddr(addr), kind)


def check_uaf(res, kind, size=None):
    """Common checks: the access address is reported, with the offset inside the region that
    starts at the freed pointer (and has the requested size, when the program knows it)."""
    v = parse_values(res.stdout)
    assert "ptr" in v and "access" in v, "program did not print its addresses\n" + res.describe()
    size = size if size is not None else v.get("size")
    if size is not None:
        second = location_line(v["access"], v["ptr"], size)
    else:
        second = r"%s is located %d bytes inside of \d+-byte region \[%s,%s\)" % (
            hexaddr(v["access"]), v["access"] - v["ptr"], hexaddr(v["ptr"]), HEX)
    return assert_report(res, signal.SIGSEGV, uaf_first_line(v["access"], kind), second)


@pytest.mark.parametrize("mode", ["strict", "fast"])
def test_uaf_kept_pages(runner, mode):
    """The pages of freed objects of over 64 KiB are moved to the next large objects: those
    never share an address with a freed one and keep their own bytes, in a forked child too;
    calloc still gets zeros; and a read of a freed object still faults with the report."""
    res = runner.oscar("uaf_kept_pages", "300000", "stats",
                       env={"OSCAR_MODE": mode, "OSCAR_STATS": "1", "OSCAR_STATS_SIGNAL": "10"})
    lines = res.stdout.splitlines()
    for line in ("churn ok", "calloc zero yes", "child churn ok", "after fork churn ok"):
        assert line in lines, res.describe()
    reused = re.search(r"oscar-stats: large_reused (\d+)", res.stderr)
    assert reused, res.describe()
    if "OSCAR_GUARDS=0" in os.environ.get("OSCAR_TEST_ENV", ""):
        assert int(reused.group(1)) == 0, res.describe()  # the keep needs guard markers
    else:
        assert int(reused.group(1)) >= 8, res.describe()
    check_uaf(res, "READ")


@pytest.mark.parametrize("size_class", ["small", "medium", "large"])
@pytest.mark.parametrize("kind", ["read", "write"])
def test_uaf_by_size(runner, kind, size_class):
    res = runner.oscar("uaf_%s_%s" % (kind, size_class))
    check_uaf(res, kind.upper())


@pytest.mark.parametrize("program,kind", [
    ("uaf_realloc_moved", "READ"),       # old pointer of a realloc that moved the object
    ("uaf_posix_memalign", "READ"),
    ("uaf_aligned_alloc", "WRITE"),
    ("uaf_strdup", "READ"),              # allocated inside libc
    ("uaf_getline", "READ"),             # allocated (and grown) inside libc: size unknown
    ("uaf_fopen", "READ"),               # the FILE object fopen allocated, after fclose
    ("uaf_thread", "READ"),              # freed by one thread, used by another
])
def test_uaf_variants(runner, program, kind):
    res = runner.oscar(program)
    check_uaf(res, kind)


def test_uaf_in_realloc_growth_room(runner):
    """A growing realloc gives the object room to grow in place (geometric growth); the
    room is part of the object and is revoked with it."""
    res = runner.oscar("uaf_realloc_room")
    assert "in place 1" in res.stdout, "the second realloc should grow into the room\n" + res.describe()
    check_uaf(res, "READ")


def test_uaf_after_realloc_grew_in_its_chunk(runner):
    """An object carved last from its thread's chunk grows in place over the chunk's free
    rest (with guard markers; without them it moves); freed, its new last page faults."""
    res = runner.oscar("uaf_realloc_in_chunk")
    if "OSCAR_GUARDS=0" not in os.environ.get("OSCAR_TEST_ENV", ""):
        assert "in place 1" in res.stdout, "the reallocs should grow in place\n" + res.describe()
    assert "neighbour intact" in res.stdout, res.describe()
    check_uaf(res, "READ")


def test_uaf_realloc_moved_contents_under_glibc(runner):
    """The program itself is sound up to the bad access: realloc moves and keeps contents."""
    res = runner.glibc("uaf_realloc_moved")
    assert "realloc did not move" not in res.stdout and "lost the contents" not in res.stdout, res.describe()


def test_cxx_delete_then_virtual_call(runner):
    res = runner.oscar("uaf_cxx_virtual_call")
    check_uaf(res, "READ")
    assert res.stdout.count("METHOD BODY RAN") == 1, (
        "the method body ran through the dangling pointer\n" + res.describe())


def test_function_pointer_attack_blocked(runner):
    """Oscar paper, Figure 1: calling through a dangling function pointer whose memory an
    attacker re-allocated must fault on the load, never reach attacker()."""
    res = runner.oscar("uaf_function_pointer_attack")
    assert "ATTACKER CALLED" not in res.stdout, "the attack succeeded under oscar\n" + res.describe()
    check_uaf(res, "READ")
    v = parse_values(res.stdout)
    assert v["spray"] != v["ptr"], "oscar handed the freed address out again\n" + res.describe()


def test_function_pointer_attack_works_under_glibc(runner):
    """The attack is real: under glibc the same-size malloc reuses the chunk and the dangling
    call lands in attacker()."""
    res = runner.glibc("uaf_function_pointer_attack")
    assert res.returncode == 0, res.describe()
    assert "ATTACKER CALLED" in res.stdout, res.describe()
    v = parse_values(res.stdout)
    assert v["spray"] == v["ptr"], res.describe()


@pytest.mark.parametrize("size", [2100, 5000, 40000])
def test_uaf_between_live_neighbours_of_a_few_pages(runner, size):
    """Objects of a few pages are carved side by side from one mapping: freeing every other
    one leaves its neighbours whole and writable, no freed address comes back, and a read of
    a freed one faults with the report."""
    res = runner.oscar("uaf_carved_neighbours", str(size))
    assert "neighbours intact" in res.stdout, res.describe()
    assert "reused no" in res.stdout, res.describe()
    check_uaf(res, "READ")
