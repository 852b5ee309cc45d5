"""Reports a developer can act on (issue 3): the access, free and allocation stacks named by
symbol and resolvable with addr2line, a program's own SIGSEGV handler left working, reports
from deep recursion and from an alternate signal stack, the report file, statistics."""

import json
import re
import shutil
import signal
import subprocess

import pytest

from conftest import LIB, assert_report, assert_same_output, hexaddr, location_line, parse_values

# "    #N 0xPC in FUNCTION FILE:LINE (MODULE+0xOFF)": FILE:LINE where debug information exists.
FRAME = re.compile(r"    #(\d+) (0x[0-9a-f]+) (?:in (\S+) )?(?:(\S+):(\d+) )?\((\S+)\+(0x[0-9a-f]+)\)")


def stack_after(lines, header_regex):
    """The frames (number, pc, function, module, offset) under the first line matching."""
    for i, line in enumerate(lines):
        if re.fullmatch(header_regex, line):
            frames = []
            for frame_line in lines[i + 1:]:
                m = FRAME.fullmatch(frame_line)
                if not m:
                    break
                number, pc, function, _, _, module, offset = m.groups()
                frames.append((number, pc, function, module, offset))
            return frames
    raise AssertionError("no line matching %r in the report:\n%s" % (header_regex, "\n".join(lines)))


def functions(frames):
    return [f[2] for f in frames]


def test_uaf_report_names_all_three_stacks(runner):
    res = runner.oscar("report_stacks")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 48))
    access = stack_after(report, r"READ by thread \d+ here:")
    freed = stack_after(report, r"freed by thread \d+ here:")
    allocated = stack_after(report, r"previously allocated by thread \d+ here:")
    assert functions(access)[:2] == ["read_record", "main"], report
    assert functions(freed)[:2] == ["drop_record", "main"], report
    assert functions(allocated)[:2] == ["make_record", "main"], report
    for frames in (access, freed, allocated):
        assert [int(f[0]) for f in frames] == list(range(len(frames))), frames
        assert frames[0][3].endswith("/report_stacks"), frames


def test_report_frames_resolve_with_addr2line(runner):
    addr2line = shutil.which("addr2line")
    if not addr2line:
        pytest.skip("addr2line (binutils) is not installed")
    res = runner.oscar("report_stacks")
    freed = stack_after(res.stderr.splitlines(), r"freed by thread \d+ here:")
    _, _, function, module, offset = freed[0]
    # Frames are return addresses: the call is the instruction just before.
    out = subprocess.run([addr2line, "-f", "-e", module, hex(int(offset, 16) - 1)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "drop_record", out
    assert re.search(r"report_stacks\.c:\d+", out[1]), out


def test_double_free_report_has_stacks(runner):
    res = runner.oscar("double_free_between")
    report = assert_report(res, signal.SIGABRT, r"oscar: double-free on address 0x[0-9a-f]+")
    for header in (r"double free by thread \d+ here:", r"freed by thread \d+ here:",
                   r"previously allocated by thread \d+ here:"):
        frames = stack_after(report, header)
        assert frames and frames[0][2] == "main", (header, report)


def test_stack_recording_can_be_turned_off(runner):
    res = runner.oscar("report_stacks", env={"OSCAR_STACK_DEPTH": "0"})
    report = assert_report(res, signal.SIGSEGV, r"oscar: heap-use-after-free on address .*")
    assert "(allocation and free stacks are off: OSCAR_STACK_DEPTH=0)" in report, report


def test_program_segv_handler_works_as_under_glibc(runner):
    expected = runner.glibc("segv_handler_recovers")
    assert "recovered through signal()" in expected.stdout, expected.describe()
    assert_same_output(runner.oscar("segv_handler_recovers"), expected)


def test_uaf_reported_despite_program_segv_handler(runner):
    res = runner.oscar("segv_handler_then_uaf")
    v = parse_values(res.stdout)
    assert "PROGRAM HANDLER RAN" not in res.stdout, res.describe()
    assert_report(res, signal.SIGSEGV,
                  re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                  location_line(v["access"], v["ptr"], 64))


def test_uaf_in_deep_recursion(runner):
    res = runner.oscar("uaf_deep_recursion")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 48))
    assert functions(stack_after(report, r"READ by thread \d+ here:"))[0] == "recurse", report


def test_uaf_on_alternate_signal_stack(runner):
    res = runner.oscar("uaf_on_altstack")
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 30))
    assert functions(stack_after(report, r"READ by thread \d+ here:"))[0] == "on_usr1", report


def test_report_file(runner, tmp_path):
    res = runner.oscar("report_stacks", env={"OSCAR_REPORT_FILE": str(tmp_path / "report-%p.txt")})
    assert res.returncode == -signal.SIGSEGV, res.describe()
    assert "oscar:" not in res.stderr, "the report must go to the file, not stderr\n" + res.describe()
    text = (tmp_path / ("report-%d.txt" % res.pid)).read_text()
    assert text.startswith("oscar: heap-use-after-free on address "), text
    assert "previously allocated by thread" in text, text


def test_stats_json_counts_exactly(runner, tmp_path):
    res = runner.oscar("stats_1000_mallocs", env={"OSCAR_STATS_FILE": str(tmp_path / "s-%p.json")})
    assert res.returncode == 0, res.describe()
    data = json.loads((tmp_path / ("s-%d.json" % res.pid)).read_text())
    assert data["allocations"] == 1000 and data["frees"] == 1000, data
    assert data["small_allocations"] == 1000 and data["live_objects"] == 0, data
    assert data["live_bytes"] == 0 and 1000 * 32 - 64 * 32 <= data["peak_live_bytes"] <= 1000 * 32, data
    # The peak is sampled when a thread folds its counters (each new run of shadows).
    assert 1000 - 64 <= data["peak_live_objects"] <= 1000, data
    assert data["shadows_revoked"] >= 1000, data
    assert data["canonical_resident_bytes"] > 0 and data["page_table_bytes"] > 0, data
    assert data["page_faults_minor"] > 0, data


def test_stats_on_signal(runner, tmp_path):
    """OSCAR_STATS_SIGNAL: the statistics are written when the signal arrives (here the
    program sends it to itself through the shell's kill)."""
    path = tmp_path / "sig-%p.json"
    res = runner.oscar(["/bin/sh", "-c", 'kill -USR2 $$; echo after'],
                       env={"OSCAR_STATS_FILE": str(path), "OSCAR_STATS_SIGNAL": str(int(signal.SIGUSR2))})
    assert res.returncode == 0 and res.stdout == "after\n", res.describe()
    files = list(tmp_path.glob("sig-*.json"))
    assert files and all(isinstance(json.loads(f.read_text()), dict) for f in files), files


@pytest.mark.parametrize("mode", ["strict", "fast", "protect"])
def test_a_fault_in_oscars_own_code_says_so_with_its_frames(runner, mode):
    """A fault whose instruction is Oscar's (here a bad out-pointer given to posix_memalign,
    which Oscar writes through; a bug of Oscar's would look the same) still kills the program
    by the signal glibc's run dies of, and says whose code faulted, with Oscar's frames and the
    program's: a crash of Oscar's in CI or a user's run is then more than a bare SIGSEGV."""
    assert runner.glibc("bad_out_pointer").returncode == -signal.SIGSEGV
    res = runner.oscar("bad_out_pointer", env={"OSCAR_MODE": mode})
    report = assert_report(res, signal.SIGSEGV,
                           r"oscar: internal error: crash: SIGSEGV on address 0x18 in oscar's "
                           r"own code, thread \d+",
                           r"unless the program passed oscar that address .* please report it "
                           r"with these frames:")
    frames = stack_after(report, r"unless the program passed oscar that address .*")
    names = functions(frames)
    assert names[0] == "posix_memalign" and frames[0][3].endswith("liboscar.so"), report
    assert names.index("give_bad_pointer") < names.index("main"), report
