"""Stop-the-world (scan/world.c) and the signal shapes of issue 18.

fork parks every other thread while the heap is copied (defect 2), so the world programs run
forks (in protect mode, whose heap the kernel copies, they check that fork keeps working): threads blocked in read(), spinning, with every signal blocked, on an alternate signal
stack, and threads exiting during the stops, must all be parked and resumed (no hang, output
identical to glibc's). clone() without CLONE_VM and _Fork() are forks too (defect 8). Then
the signal defects: raise(SIGSEGV) kills (9), every way to install a SIGSEGV handler keeps the
use-after-free report (10), a 4 KiB alternate signal stack still gets the whole report (11),
and a fault signal is refused as OSCAR_STATS_SIGNAL (12)."""

import json
import re
import signal

import pytest

from conftest import SLOW_TIMEOUT, assert_report, assert_same_output, hexaddr, location_line, \
    parse_values

MODES = ["strict", "fast", "protect"]
STRICT = {"OSCAR_MODE": "strict"}  # the reports below are strict mode's


@pytest.mark.parametrize("mode", MODES)
def test_handler_on_a_small_alternate_stack_lives_through_stops(runner, mode):
    """A thread runs a handler of the program's on an alternate stack with 1 KiB beside the
    kernel's signal frame while another thread forks (a stop in every mode) and, in protect
    mode, frees enough for marks: a park signal's frame there would not fit, and the kernel
    killed the program (SIGSEGV in every mode before). The stops that come meanwhile give up
    (the park signal is held back on so small a stack), as for a thread that blocks it."""
    expected = runner.glibc_once("altstack_handler_during_marks", "fork")
    assert expected.stdout == "done\n", expected.describe()
    env = {"OSCAR_MODE": mode}
    if mode == "protect":
        env.update(OSCAR_QUARANTINE_FLOOR_KIB="2", OSCAR_QUARANTINE_SHARE="0")
    res = runner.oscar("altstack_handler_during_marks", "fork", env=env)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("program", ["world_thread_shapes", "fork_clone_nocvm",
                                     "signal_park_handler", "fork_stdio_lock",
                                     "signal_mask_calls", "world_raw_blocked",
                                     "fork_stop_gives_up", "main_thread_exit"])
def test_same_output_as_glibc(runner, program, mode):
    expected = runner.glibc_once(program)
    assert expected.stdout.endswith("OK\n"), expected.describe()
    res = runner.oscar(program, env={"OSCAR_MODE": mode}, timeout=120)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
def test_waits_go_on_across_the_stops_of_forks(runner, mode):
    """A fork of a program with threads stops the world (in every mode): a thread waiting in
    poll, select, epoll_wait, a sleep, sigtimedwait, sem_timedwait, pause, sigsuspend,
    sigwaitinfo or sem_wait meanwhile goes on waiting, as under glibc, where no signal came
    (before export/waits.h each failed with EINTR, and pause returned for no signal), while
    the program's own signal still interrupts it."""
    expected = runner.glibc_once("waits_across_stops", "interrupt", "fork")
    res = runner.oscar("waits_across_stops", "interrupt", "fork", env={"OSCAR_MODE": mode},
                       timeout=120)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
def test_program_signal_ends_a_wait_made_again_across_the_stops_of_forks(runner, mode):
    """As test_protect.py's test of the same name, with the stops of forks (every mode): the
    program's SIGUSR1 in the moment before a cut wait is made again still ends it."""
    expected = runner.glibc_once("waits_signal_in_retry", "fork")
    res = runner.oscar("waits_signal_in_retry", "fork",
                       env={"OSCAR_MODE": mode, "OSCAR_TEST_RETRY_SPIN_US": "3000"}, timeout=120)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
def test_timed_socket_calls_go_on_across_the_stops_of_forks(runner, mode):
    """A fork of a program with threads stops the world (in every mode): a thread in a socket
    call on a socket with a timeout (read, recv..., accept, write, send..., connect) or in
    System V's semtimedop, semop or msgrcv meanwhile times out or is woken as under glibc,
    never with EINTR (before, every one failed with it at the first fork)."""
    expected = runner.glibc_once("timed_io_across_stops", "interrupt", "fork")
    res = runner.oscar("timed_io_across_stops", "interrupt", "fork", env={"OSCAR_MODE": mode},
                       timeout=120)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
def test_fork_while_a_thread_uses_stdio(runner, mode):
    """Defect 2: 40 forks of a 100 MiB heap while a thread opens and closes files: every
    child sees a consistent heap (before the fix, children died with a wild-access report)."""
    expected = runner.glibc("fork_stdio_thread", timeout=SLOW_TIMEOUT)
    res = runner.oscar("fork_stdio_thread", env={"OSCAR_MODE": mode}, timeout=SLOW_TIMEOUT)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["raise", "self", "tgkill", "other", "kill"])
def test_every_park_signal_the_program_sends_reaches_its_handler(runner, how, mode):
    """The program sends SIGPWR (Oscar's park signal) 1000 times, one at a time, to itself, to
    another thread or to the process, while threads fork and churn (Oscar's stops send SIGPWR
    too): its handler runs once for each, as under glibc. A stop's request pending at the same
    thread merged with the program's in the kernel and the handler never saw the program's
    (CI: signal_park_handler "handler ran 2 times" of 3; here 1-6 of 2000 lost per run).
    And no send waits long (test_a_send_to_another_thread_is_not_starved_by_stops)."""
    expected = runner.glibc_once("signal_park_counts", how)
    assert expected.stdout.endswith("sends slower than 0.25 s: 0\nhandler ran 1000 times\nOK\n"), \
        expected.describe()
    env = {"OSCAR_MODE": mode}
    if mode == "protect":
        env.update(OSCAR_QUARANTINE_FLOOR_KIB="2", OSCAR_QUARANTINE_SHARE="0")
    res = runner.oscar("signal_park_counts", how, env=env, timeout=120)
    assert_same_output(res, expected)


@pytest.mark.parametrize("how", ["strict fork", "fast fork", "protect fork", "protect marks"])
def test_a_thread_parked_by_stops_back_to_back_takes_each_signal(runner, how):
    """A thread running in the program's code is sent SIGUSR1 30 times, 20 ms apart, while
    the world stops back to back (forks in every mode, protect mode's marks), and each parked
    thread is slow to run again (OSCAR_TEST_PARK_SPIN_US: it stays in the park handler 3 ms
    after its resume, as one that gets no processor at once). Its handler runs 30 times, as
    under glibc. Before, the next stop's request found it still in the park handler, where
    every signal is blocked, and parked it again: two of the program's signals merged while
    pending, 2-6 of 30 handled (10-26 with forks), and waits_across_stops hung in sigsuspend
    waiting for a third signal (CI, test_waits_go_on_across_marks[stop], 1 run of 130)."""
    mode, what = how.split()
    args = ("fork",) if what == "fork" else ()
    expected = runner.glibc_once("signals_between_stops", *args)
    assert expected.stdout == "handled 30 of 30\n", expected.describe()
    env = {"OSCAR_MODE": mode, "OSCAR_TEST_PARK_SPIN_US": "3000"}
    if what == "marks":
        env.update(OSCAR_QUARANTINE_FLOOR_KIB="2", OSCAR_QUARANTINE_SHARE="0",
                   OSCAR_SAMPLE_RATE="0", OSCAR_MARK="stop")
    res = runner.oscar("signals_between_stops", *args, env=env, timeout=120)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mark", ["stop", "auto"])
def test_setuid_reaches_every_thread_past_the_second_park_signal(runner, mark):
    """A thread made with every signal blocked (pthread_attr_setsigmask_np) is parked with
    glibc's SIGSETXID, whose handler Oscar then stands in front of; setuid in the program
    (glibc sends SIGSETXID to each thread to change its ids) still reaches every thread, as
    under glibc."""
    expected = runner.glibc_once("setuid_second_signal")
    if expected.stdout == "not root\n":
        pytest.skip("needs root (setuid to nobody)")
    env = {"OSCAR_MODE": "protect", "OSCAR_QUARANTINE_FLOOR_KIB": "2",
           "OSCAR_QUARANTINE_SHARE": "0", "OSCAR_MARK": mark}
    res = runner.oscar("setuid_second_signal", env=env, timeout=60)
    assert_same_output(res, expected)


@pytest.mark.parametrize("mark", ["stop", "auto", "snapshot"])
def test_an_exec_in_a_fork_child_is_never_killed_by_a_stop(runner, mark):
    """Children of a protect-mode program start a thread that allocates without pause and
    exec 1-4 ms later (bash's command substitution, git's children). The child's world kept
    the parent's pid, took itself for a vfork child, and its exec went ahead without the world
    lock: a stop's request reached the thread inside execve and killed the new image with
    SIGPWR (49-64 of 200 children with stop marks, 27-35 concurrent, 7-10 snapshot; a git
    commit of a file whose $(seq) came out empty). Now 0, as under glibc."""
    expected = runner.glibc_once("exec_during_first_mark", "150")
    env = {"OSCAR_MODE": "protect", "OSCAR_QUARANTINE_FLOOR_KIB": "64",
           "OSCAR_QUARANTINE_SHARE": "0", "OSCAR_SAMPLE_RATE": "0", "OSCAR_MARK": mark,
           "OSCAR_MARK_CONCURRENT_MIB": "0"}
    if mark == "auto":
        env["OSCAR_MARK_PAUSE_MS"] = "0"
    res = runner.oscar("exec_during_first_mark", "150", env=env, timeout=180)
    assert_same_output(res, expected)


def test_a_send_to_another_thread_is_not_starved_by_stops(runner):
    """The program sends SIGPWR to a waiting thread 1000 times while two threads free (protect
    mode, a 2 KiB floor: Oscar's stops back to back). A send to another thread takes the world
    lock between two stops, and lost that race again and again: 7-32 sends a run waited longer
    than 0.25 s (up to 0.7 s), the run took 16-34 s against glibc's 0.05 s. A stop about to
    begin now lets a waiting sender go first (0 slow sends, 1-3 s: the stops themselves)."""
    expected = runner.glibc_once("signal_park_counts", "other", "nofork")
    assert expected.stdout.startswith("sends slower than 0.25 s: 0\n"), expected.describe()
    res = runner.oscar("signal_park_counts", "other", "nofork", timeout=120,
                       env={"OSCAR_MODE": "protect", "OSCAR_QUARANTINE_FLOOR_KIB": "2",
                            "OSCAR_QUARANTINE_SHARE": "0"})
    assert_same_output(res, expected)


def test_a_fork_is_not_starved_by_back_to_back_marks(runner):
    """The program forks 300 times while two threads free (protect mode, a 2 KiB floor: marks
    back to back). A fork waits until no mark stops the world, and lost the race to the next
    mark again and again: 6-15 forks a run waited longer than 0.25 s (up to 3.6 s), the run
    took 4-12 s against glibc's 0.1 s. A mark about to stop the world now lets a waiting fork
    go first (0 slow forks, 0.45 s)."""
    expected = runner.glibc_once("fork_between_stops")
    assert expected.stdout == "forks slower than 0.25 s: 0\nOK\n", expected.describe()
    res = runner.oscar("fork_between_stops", timeout=120,
                       env={"OSCAR_MODE": "protect", "OSCAR_QUARANTINE_FLOOR_KIB": "2",
                            "OSCAR_QUARANTINE_SHARE": "0"})
    assert_same_output(res, expected)


@pytest.mark.parametrize("mode", MODES)
def test_program_handlers_oscar_calls_run_with_the_kernels_mask(runner, mode):
    """The program's SIGPWR and SIGSEGV handlers, which Oscar calls from its own, run with the
    mask the kernel gives them under glibc (the interrupted code's, sa_mask, the signal): the
    SIGPWR one ran with every signal blocked, and a SIGCHLD raised in it waited."""
    expected = runner.glibc_once("signal_handler_mask")
    assert expected.stdout.endswith("OK\n"), expected.describe()
    res = runner.oscar("signal_handler_mask", env={"OSCAR_MODE": mode})
    assert_same_output(res, expected)


def test_raise_park_signal_with_default_action_kills(runner):
    """The program's own raise(SIGPWR) with the default action kills it by SIGPWR, also after
    forks (Oscar's stops) have used the signal."""
    expected = runner.glibc("signal_park_handler", "default")
    assert expected.returncode == -signal.SIGPWR, expected.describe()
    res = runner.oscar("signal_park_handler", "default")
    assert res.returncode == -signal.SIGPWR, res.describe()
    assert res.stdout == expected.stdout and not res.oscar_lines(), res.describe()


def test_raise_sigsegv_kills(runner):
    """Defect 9: raise(SIGSEGV) with the default action is not swallowed."""
    expected = runner.glibc("signal_raise_segv")
    assert expected.returncode == -signal.SIGSEGV, expected.describe()
    res = runner.oscar("signal_raise_segv")
    assert res.returncode == -signal.SIGSEGV, res.describe()
    assert "NOT REACHED" not in res.stdout and not res.oscar_lines(), res.describe()


def test_raise_ignored_sigsegv_is_ignored(runner):
    expected = runner.glibc("signal_raise_segv", "ignore")
    res = runner.oscar("signal_raise_segv", "ignore")
    assert_same_output(res, expected)


@pytest.mark.parametrize("how", ["sigset", "sysv_signal", "__sysv_signal", "bsd_signal",
                                 "ssignal", "sigignore"])
def test_every_way_to_install_a_segv_handler_keeps_the_report(runner, how):
    """Defect 10."""
    res = runner.oscar("signal_sigset_then_uaf", how, env=STRICT)
    v = parse_values(res.stdout)
    assert "PROGRAM HANDLER RAN" not in res.stdout, res.describe()
    assert_report(res, signal.SIGSEGV,
                  re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])),
                  location_line(v["access"], v["ptr"], 64))


@pytest.mark.parametrize("how", [[], ["tight"]], ids=["4KiB", "tight"])
def test_small_alternate_signal_stack_gets_the_whole_report(runner, how):
    """Defect 11: a 4 KiB sigaltstack with an inaccessible page under it; "tight": 1 KiB left
    beside the kernel's signal frame, whatever this CPU's frame is."""
    res = runner.oscar("signal_small_altstack_uaf", *how, env=STRICT)
    if res.stdout.startswith("unsupported"):
        pytest.skip(res.stdout.strip())
    v = parse_values(res.stdout)
    report = assert_report(res, signal.SIGSEGV,
                           re.escape("oscar: heap-use-after-free on address %s (READ)"
                                     % hexaddr(v["access"])),
                           location_line(v["access"], v["ptr"], 64))
    assert any(l.startswith("freed by thread") for l in report), res.describe()
    assert "PROGRAM HANDLER RAN" not in res.stdout, res.describe()


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGBUS])
def test_fault_signal_refused_as_stats_signal(runner, sig):
    """Defect 12: one warning line and the default (no statistics handler); the NULL
    dereference kills at once instead of dumping statistics forever."""
    res = runner.oscar("signal_stats_fault", env={"OSCAR_STATS_SIGNAL": int(sig)}, timeout=20)
    assert res.returncode == -signal.SIGSEGV, res.describe()
    lines = res.oscar_lines()
    assert lines == ["oscar: warning: OSCAR_STATS_SIGNAL=%d is invalid (a fault signal: after "
                     "its handler the faulting instruction runs again); using default 0" % sig], \
        res.describe()
    assert res.seconds < 10, res.describe()


@pytest.mark.parametrize("mode", MODES)
def test_stops_past_rlimit_sigpending(runner, mode, tmp_path):
    """RLIMIT_SIGPENDING at 0: the kernel delivers a stop's park request (SIGPWR sent with a
    value) without its siginfo, and the park handler took it for the program's SIGPWR, whose
    default action killed the process at the first stop, in every mode (sigpending_limit).
    Now every stop parks the waiting thread, and the program's own SIGPWR still reaches its
    handler."""
    expected = runner.glibc_once("sigpending_limit")
    assert expected.stdout.endswith("done\n"), expected.describe()
    env = {"OSCAR_MODE": mode, "OSCAR_STATS_FILE": str(tmp_path / "s.json")}
    if mode == "protect":
        env.update(OSCAR_QUARANTINE_FLOOR_KIB="64", OSCAR_SAMPLE_RATE="0")
    res = runner.oscar("sigpending_limit", env=env, timeout=120)
    assert_same_output(res, expected)
    if mode == "protect":
        s = json.loads((tmp_path / "s.json").read_text())
        assert s["scan_rounds"] > 10 and s["scan_skipped"] == 0, s
