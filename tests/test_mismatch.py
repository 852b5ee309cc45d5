"""Kind mismatches (issue 20, item 4), named as AddressSanitizer names them:
alloc-dealloc-mismatch (malloc/delete, new/free, new[]/delete, new/delete[]) and
new-delete-type-mismatch (a sized delete with another size than the object's), each with the
deallocation and allocation stacks, in every mode (protect mode: the deallocation stack; it keeps
allocation stacks only for sampled objects); OSCAR_ALLOC_DEALLOC_MISMATCH=0 and
OSCAR_NEW_DELETE_TYPE_MISMATCH=0 turn them off."""

import re
import signal

import pytest

from conftest import (assert_report, assert_same_output, hexaddr, location_line, parse_values,
                      report_lines)

# protect: the objects of these short programs are sampled (OSCAR_SAMPLE_FIRST), so their kind
# is kept with the sampled object; protect-heap: in the heap's own metadata.
MODES = ["strict", "fast", "protect", "protect-heap"]


def mode_env(mode, **more):
    env = {"OSCAR_MODE": mode.split("-")[0]}
    if mode == "protect-heap":
        env["OSCAR_SAMPLE_FIRST"] = "0"
    env.update(more)
    return env


def keeps_allocation_stack(mode, size, packed):
    """Fast mode keeps none for objects sharing a page; protect mode only for sampled objects
    (at most 4 KiB)."""
    if mode.startswith("protect"):
        return mode == "protect" and size <= 4096
    return not packed

KIND_CASES = {
    "malloc_delete": ("malloc", "operator delete"),
    "new_free": ("operator new", "free"),
    "newarr_delete": ("operator new []", "operator delete"),
    "new_deletearr": ("operator new", "operator delete []"),
    "large_new_free": ("operator new []", "free"),
    "new_realloc": ("operator new", "free"),  # (AddressSanitizer's words for realloc too)
}


def has_stack(report, title):
    """The report has a `title by thread N here:` line whose first frame is main's (the
    program calls new and delete from main): Oscar's own frames are left out, in every mode."""
    for i, line in enumerate(report):
        if re.fullmatch(title + r" by thread \d+ here:", line):
            return i + 1 < len(report) and re.match(r"    #0 0x[0-9a-f]+ in main ", report[i + 1])
    return False


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(KIND_CASES))
def test_alloc_dealloc_mismatch(runner, mode, case):
    alloc, dealloc = KIND_CASES[case]
    res = runner.oscar("cxx_alloc_dealloc_mismatch", case, env=mode_env(mode))
    v = parse_values(res.stdout)
    assert "ptr" in v, res.describe()
    report = assert_report(res, signal.SIGABRT,
                           re.escape("oscar: alloc-dealloc-mismatch (%s vs %s) on %s"
                                     % (alloc, dealloc, hexaddr(v["ptr"]))))
    packed = mode == "fast" and v["size"] <= 2048  # (fast mode: the region is its class)
    if not packed:
        assert re.fullmatch(location_line(v["ptr"], v["ptr"], v["size"]), report[1]), res.describe()
    passed_to = "realloc" if case == "new_realloc" else dealloc
    assert report[2] == "the region is allocated; it was passed to %s" % passed_to, res.describe()
    assert has_stack(report, "deallocated"), res.describe()
    if keeps_allocation_stack(mode, v["size"], packed):
        assert has_stack(report, "allocated"), res.describe()
    assert report[-1] == "(OSCAR_ALLOC_DEALLOC_MISMATCH=0 turns this check off)", res.describe()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(KIND_CASES))
def test_alloc_dealloc_mismatch_off(runner, mode, case):
    res = runner.oscar("cxx_alloc_dealloc_mismatch", case,
                       env=mode_env(mode, OSCAR_ALLOC_DEALLOC_MISMATCH="0",
                                    OSCAR_NEW_DELETE_TYPE_MISMATCH="0"))
    assert res.returncode == 0 and "NOT REACHED" in res.stdout, res.describe()
    assert not report_lines(res), res.describe()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["small", "large"])
def test_new_delete_type_mismatch(runner, mode, case):
    res = runner.oscar("cxx_new_delete_type_mismatch", case, env=mode_env(mode))
    v = parse_values(res.stdout)
    assert "ptr" in v, res.describe()
    report = assert_report(res, signal.SIGABRT,
                           re.escape("oscar: new-delete-type-mismatch on %s" % hexaddr(v["ptr"])),
                           re.escape("object passed to delete has wrong type:"))
    packed = mode == "fast" and case == "small"
    allocated = r"at most \d+" if packed else str(v["allocated"])
    assert re.fullmatch(r"  size of the allocated type:   %s bytes;" % allocated, report[2]), res.describe()
    assert report[3] == "  size of the deallocated type: %d bytes." % v["deallocated"], res.describe()
    assert has_stack(report, "deallocated"), res.describe()
    if keeps_allocation_stack(mode, v["allocated"], packed):
        assert has_stack(report, "allocated"), res.describe()
    assert report[-1] == "(OSCAR_NEW_DELETE_TYPE_MISMATCH=0 turns this check off)", res.describe()


@pytest.mark.parametrize("mode", MODES)
def test_new_delete_type_mismatch_off(runner, mode):
    res = runner.oscar("cxx_new_delete_type_mismatch",
                       env=mode_env(mode, OSCAR_NEW_DELETE_TYPE_MISMATCH="0"))
    assert res.returncode == 0 and "NOT REACHED" in res.stdout, res.describe()
    assert not report_lines(res), res.describe()


@pytest.mark.parametrize("mode", ["strict", "fast", "protect"])
@pytest.mark.parametrize("program", ["cxx_kinds_correct", "cxx_stl", "cxx_new_delete"])
def test_correct_cxx_program_prints_what_glibc_prints(runner, mode, program):
    assert_same_output(runner.oscar(program, env=mode_env(mode)), runner.glibc(program))


def test_protect_mode_double_delete_is_a_double_free(runner):
    """A kind is looked at only for a live object: a second delete is a double free."""
    res = runner.oscar("cxx_double_delete", env={"OSCAR_MODE": "protect"})
    report = assert_report(res, signal.SIGABRT, r"oscar: double-free on address 0x[0-9a-f]+")
    assert has_stack(report, "double free"), res.describe()
    assert not any("liboscar" in line for line in report), res.describe()
