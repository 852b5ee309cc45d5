"""A program that sandboxes itself with a seccomp filter (os/filters.h).

The filter is written for the program, as OpenSSH's pre-authentication child writes its own:
the calls it needs, open refused with EACCES, every other call kills the process. Oscar's
calls are not the program's (a strict page's guard, a mark's /proc reads, a stop's signals),
and each mode killed the program with SIGSYS at its first one, where glibc runs it (the
reproducer `seccomp_sandbox`). Oscar now runs its own calls past a copy of every filter the
program installs (prctl or syscall(SYS_seccomp)), does without those the filter would kill
for, and says so once; a filter that kills for nothing Oscar calls, or only fails calls with
an errno, changes nothing but what those calls answer."""

import json
import re

import pytest

from conftest import assert_same_output

MODES = ["strict", "fast", "protect"]
REFUSED = (r"oscar: warning: the program's seccomp filter would kill Oscar's system call \d+: "
           r"Oscar goes on without it .*")
# A filter that fails every open: protect mode's marks cannot list the threads, and the stats
# file cannot be written; both are said, and the program goes on.
CANNOT_MARK = r"oscar: warning: protect mode cannot mark .*"
NO_STATS = r"oscar: warning: cannot write OSCAR_STATS_FILE .*"
PROTECT_ENV = {"OSCAR_QUARANTINE_FLOOR_KIB": "64", "OSCAR_SAMPLE_RATE": "0"}


def env_for(mode, **extra):
    env = {"OSCAR_MODE": mode}
    if mode == "protect":
        env.update(PROTECT_ENV)
    env.update(extra)
    return env


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("args", [["prctl"], ["syscall"], ["prctl", "thread", "fork"],
                                  ["syscall", "thread", "fork"]], ids=" ".join)
def test_sandboxed_program_is_not_killed(runner, mode, args):
    expected = runner.glibc_once("seccomp_sandbox", *args)
    assert expected.stdout.endswith("done\n"), expected.describe()
    res = runner.oscar("seccomp_sandbox", *args, env=env_for(mode), timeout=120)
    assert_same_output(res, expected, allowed_warnings=(REFUSED, CANNOT_MARK))
    # said once per process: the fork's child inherits that it was
    assert len([l for l in res.oscar_lines() if re.fullmatch(REFUSED, l)]) == 1, res.describe()


@pytest.mark.parametrize("mode", MODES)
def test_filter_that_kills_for_nothing_of_oscars_changes_nothing(runner, mode, tmp_path):
    """A filter that kills for kexec_load only: no warning, and protect mode still marks and
    hands freed memory out again after it is installed."""
    args = ["syscall", "lenient", "thread", "fork"]
    expected = runner.glibc_once("seccomp_sandbox", *args)
    stats = tmp_path / "stats.json"
    res = runner.oscar("seccomp_sandbox", *args, env=env_for(mode, OSCAR_STATS_FILE=stats),
                       timeout=120)
    assert_same_output(res, expected)
    assert res.oscar_lines() == [], res.describe()
    if mode == "protect":
        data = json.loads(stats.read_text())
        # ~40 MiB freed before the filter and as much after it, a 64 KiB floor: marks after
        # the filter too (before it alone: about half as many)
        assert data["scan_rounds"] > 40 and data["released_objects"] > 0, data


@pytest.mark.parametrize("mode", MODES)
def test_filter_that_fails_opens_with_an_errno(runner, mode):
    """A container's kind of filter (refuse with an errno, never kill): Oscar's calls are made
    and fail as the program's would; protect mode says it cannot mark, nothing else changes."""
    args = ["prctl", "errno", "thread", "fork"]
    expected = runner.glibc_once("seccomp_sandbox", *args)
    res = runner.oscar("seccomp_sandbox", *args, env=env_for(mode), timeout=120)
    assert_same_output(res, expected, allowed_warnings=(CANNOT_MARK, NO_STATS))


@pytest.mark.parametrize("mode", MODES)
def test_refused_madvise_still_zeroes_freed_large_objects(runner, mode):
    """A filter that fails madvise with EPERM: a freed large object is zeroed by hand where
    the kernel refused to drop its pages. Before, protect mode took the refusal for done, and
    calloc handed the old bytes out again ('nonzero bytes from calloc: 48234496')."""
    expected = runner.glibc_once("calloc_refused_drop")
    assert expected.stdout == "nonzero bytes from calloc: 0\n", expected.describe()
    res = runner.oscar("calloc_refused_drop", env=env_for(mode), timeout=120)
    assert_same_output(res, expected, allowed_warnings=(REFUSED,))


@pytest.mark.parametrize("mode", MODES)
def test_strict_mode_thread_leaves(runner, mode):
    """seccomp's strict mode is the calling thread's alone: the program's only thread enters
    it and leaves with exit(2), and the process ends (protect mode's team helper had every
    wait refused by Oscar's copy of the filter, spun, and kept the process alive for ever)."""
    expected = runner.glibc_once("seccomp_strict_exit")
    assert expected.stdout == "in strict mode, leaving\n", expected.describe()
    res = runner.oscar("seccomp_strict_exit", env={"OSCAR_MODE": mode}, timeout=30)
    assert_same_output(res, expected, allowed_warnings=(REFUSED,))
