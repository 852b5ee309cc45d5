"""A freed buffer handed to a system call (issue 18, item 20; src/export/export_io.c): the
kernel does not fault, so Oscar checks the buffer before the call and reports the use after
free as a fault would be reported (WRITE when the kernel writes the buffer: read, recv,
readv; READ when it reads it: write, send, writev), then dies by SIGSEGV. Live buffers are
untouched: the program prints what it prints under glibc."""

import re
import signal

import pytest

from conftest import assert_report, assert_same_output, assert_clean_run

CALLS = [("read", "WRITE"), ("recv", "WRITE"), ("readv", "WRITE"),
         ("write", "READ"), ("send", "READ"), ("writev", "READ")]


@pytest.mark.parametrize("mode", ["strict", "fast"])
@pytest.mark.parametrize("call,access", CALLS, ids=[c for c, _ in CALLS])
def test_freed_buffer_reported(runner, mode, call, access):
    res = runner.oscar("syscall_freed_buffer", call, env={"OSCAR_MODE": mode})
    report = assert_report(res, signal.SIGSEGV,
                           r"oscar: heap-use-after-free on address 0x[0-9a-f]+ \(%s\)" % access,
                           r"0x[0-9a-f]+ is located 0 bytes inside of 64-byte region .*")
    here = report.index(next(l for l in report if l.startswith(access + " by thread")))
    assert re.search(r" in main .*syscall_freed_buffer\.c", report[here + 1]), res.describe()
    assert "returned" not in res.stdout, res.describe()


def test_sampled_buffer_reported_in_protect_mode(runner):
    res = runner.oscar("syscall_freed_buffer", "read",
                       env={"OSCAR_MODE": "protect", "OSCAR_SAMPLE_RATE": "1"})
    assert_report(res, signal.SIGSEGV,
                  r"oscar: heap-use-after-free on address 0x[0-9a-f]+ \(WRITE\)")


def test_protect_mode_without_sampling_is_harmless(runner):
    """The freed buffer is quarantined, not handed out again: the call goes through, as under
    glibc, and nothing else is touched. (Unsampled: this short program's buffer is among a
    process's first allocations, which are all sampled by default, OSCAR_SAMPLE_FIRST, and
    then the write through it is reported: test_protect_mode_samples_a_short_programs_buffer.)"""
    res = runner.oscar("syscall_freed_buffer", "read",
                       env={"OSCAR_MODE": "protect", "OSCAR_SAMPLE_FIRST": "0"})
    assert_clean_run(res)
    assert "returned 5" in res.stdout, res.describe()


def test_protect_mode_samples_a_short_programs_buffer(runner):
    """By default the buffer, one of the process's first allocations, is sampled: the
    program's own write through it after the call is reported, as in strict mode."""
    res = runner.oscar("syscall_freed_buffer", "read", env={"OSCAR_MODE": "protect"})
    assert_report(res, signal.SIGSEGV,
                  r"oscar: heap-use-after-free on address 0x[0-9a-f]+ \(WRITE\)")


@pytest.mark.parametrize("mode", ["strict", "fast", "protect"])
def test_live_buffers_unchanged(runner, mode):
    assert_same_output(runner.oscar("syscall_freed_buffer", "live", env={"OSCAR_MODE": mode}),
                       runner.glibc("syscall_freed_buffer", "live"))
