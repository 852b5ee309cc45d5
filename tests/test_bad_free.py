"""Double free and invalid free: SIGABRT and the exact first report line."""

import re
import signal

import pytest

from conftest import assert_report, hexaddr, location_line, parse_values


@pytest.mark.parametrize("program", [
    "double_free_small",
    "double_free_large",
    "double_free_between",   # other allocations and frees in between
    "double_free_realloc",   # realloc() of a freed pointer
    "cxx_double_delete",
    "cxx_double_delete_array",
])
def test_double_free(runner, program):
    res = runner.oscar(program)
    v = parse_values(res.stdout)
    assert "ptr" in v, res.describe()
    assert_report(res, signal.SIGABRT,
                  re.escape("oscar: double-free on address %s" % hexaddr(v["ptr"])))


def test_free_interior_pointer(runner):
    res = runner.oscar("free_interior_pointer")
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGABRT,
                  re.escape("oscar: invalid-free on address %s (interior pointer)" % hexaddr(v["access"])),
                  location_line(v["access"], v["ptr"], v["size"]))


@pytest.mark.parametrize("program", ["free_stack_pointer", "free_global_pointer"])
def test_free_not_allocated_by_oscar(runner, program):
    res = runner.oscar(program)
    v = parse_values(res.stdout)
    assert_report(res, signal.SIGABRT,
                  re.escape("oscar: invalid-free on address %s (not allocated by oscar)"
                            % hexaddr(v["access"])))
