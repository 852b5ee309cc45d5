"""Protect mode against adversarial shapes of roots (issue 17): each program keeps the only
pointer to a freed object somewhere a mark can miss, churns the object's size class while marks
run, and prints how often a new allocation was that object ("held_reused": must be 0), then
drops the pointer and churns again ("released_reused": must be > 0, so the first figure means
something). With "control" nothing is held and the object is reused at once: the check can fail.
The programs' own copies of the address are masked (protect_common.h)."""
import json
import os

import pytest

from conftest import parse_values
from test_protect import CONTROL_MARKS, FREQUENT, MARKS, assert_mark_kind, scan_figures

SHAPES = [
    ("protect_shape_altstack_bss", []),      # a global beside another thread's altstack
    ("protect_shape_readonly", []),          # an anonymous page made read-only
    ("protect_shape_readonly", ["aftershared"]),  # ... right after a shared anonymous one
    ("protect_shape_readonly", ["none"]),    # ... made inaccessible (PROT_NONE) for a while
    ("protect_shape_readonly", ["nonebig"]),  # ... in a 256 MiB inaccessible reservation
    ("protect_shape_readonly", ["file"]),    # a file's page mapped privately, written, sealed
    ("protect_shape_readonly", ["file", "none"]),  # ... made inaccessible for a while
    ("protect_shape_readonly", ["file", "readonlybig"]),  # ... in 256 MiB of it sealed whole
    ("protect_shape_shared", ["memfd"]),     # the program's own memfd, MAP_SHARED
    ("protect_shape_shared", ["shm"]),       # POSIX shared memory (/dev/shm)
    ("protect_shape_shared", ["anon"]),      # MAP_SHARED | MAP_ANONYMOUS
    ("protect_shape_shared", ["file"]),      # a file of the program's, MAP_SHARED
    ("protect_shape_shared", ["fileprivate"]),  # ... MAP_PRIVATE, written
    ("protect_shape_shared", ["sysv"]),      # a System V shared memory segment
    ("protect_shape_shared", ["secret"]),    # memfd_secret's memory
    ("protect_shape_shared", ["memfd", "sealed"]),  # ... shared memory made read-only
    ("protect_shape_shared", ["secret", "sealed"]),  # ... memfd_secret's, made read-only
    ("protect_shape_shared", ["fileprivate", "sealed"]),  # ... a written private file page
    ("protect_shape_shared", ["hugetlb"]),   # huge pages of the kernel's pool, private
    ("protect_shape_shared", ["hugetlbshared"]),  # ... shared
    ("protect_shape_other_process", []),     # moved between two shared pages by a child
    ("protect_shape_moving", []),            # moving between global, stack, fresh objects
    ("protect_shape_juggler", []),           # 12 pointers, 3 threads, every kind, at random
    ("protect_shape_flicker", []),           # words of a live object flicking to it and to 0
    ("protect_shape_signal_move", []),       # a signal handler moving it on a parked thread
    ("protect_shape_vector_register", []),   # a vector register of a spinning thread
    ("protect_shape_blocked_register", []),  # r12 of a thread blocked in a system call
    ("protect_shape_sampled_holder", []),    # a live sampled object (its own page)
    ("protect_shape_fork_during_marks", ["thread"]),  # another thread forking
    ("protect_shape_fork_during_marks", ["signal"]),  # forks from a handler on the marker
    ("protect_shape_concurrent_move", []),   # moved across the heap while a mark reads it
    ("protect_shape_concurrent_move", ["closefrom"]),  # ... and Oscar's descriptors closed
    ("protect_shape_fresh_pages", []),       # into pages handed out while a mark begins
    ("protect_shape_fresh_mapping", []),     # into a mapping made while a mark runs
    ("protect_shape_fresh_mapping", ["mremap"]),  # ... moved to a new address by mremap
    ("protect_shape_coroutine", []),         # a suspended coroutine's stack, below a running one
    ("protect_shape_coroutine", ["onstack"]),  # a suspended frame below a coroutine's array stack
    ("protect_shape_after_bss", ["oscar"]),  # in a page merged into liboscar.so's bss
    ("protect_shape_after_bss", ["oscar", "apart"]),  # ... right after it, a line of its own
    ("protect_shape_after_bss", ["oscar", "none"]),  # ... made inaccessible for a while
    ("protect_shape_after_bss", ["oscar", "vdso"]),  # ... the vDSO moved away first (CRIU)
    ("protect_shape_after_bss", ["libc", "none"]),  # after libc.so.6's bss, inaccessible
    ("protect_shape_after_bss", ["libc", "readonly"]),  # ... read-only
    ("protect_shape_freed_holder", []),      # in a freed object a root still points to
    ("protect_shape_freed_holder", ["chain"]),  # ... through a chain of two of them
    ("protect_shape_freed_holder", ["large"]),  # ... a large one (64 KiB)
    ("protect_shape_freed_holder", ["chain", "many"]),  # ... among 70,000 held objects
    ("protect_shape_freed_altstack", ["self"]),  # a freed block still the altstack (kernel)
    ("protect_shape_freed_altstack", ["thread"]),  # ... of a thread blocked in read()
    ("protect_shape_kernel_thread", ["tid"]),  # a thread's clear-child-tid address
    ("protect_shape_kernel_thread", ["tid", "self"]),  # ... the marking thread's own
    ("protect_shape_kernel_thread", ["robust"]),  # a thread's robust futex list head
    ("protect_shape_kernel_thread", ["rseq"]),  # a thread's rseq area (through syscall())
    ("protect_shape_kernel_thread", ["rseq", "self"]),  # ... the marking thread's own
    ("protect_shape_kernel_thread", ["sud"]),  # a syscall user dispatch selector (prctl)
    ("protect_shape_stack_cut", ["guarded"]),  # beside a thread's stack in one mapping
    ("protect_shape_stack_cut", ["inmain"]),  # main's frame below a thread's stack in [stack]
    ("protect_shape_named", ["memfd"]),     # a memfd of the program's named "oscar-..."
    ("protect_shape_named", ["devfile"]),   # a regular file under /dev, shared (hugetlbfs)
    ("protect_shape_named", ["devgone"]),   # ... private, unlinked
    ("protect_shape_fault_page", ["memfd"]),  # in shared memory after a page that faults
    ("protect_shape_fault_page", ["shanon"]),  # ... anonymous shared memory
    ("protect_ring_held", ["uring"]),        # an io_uring completion not yet reaped
    ("protect_ring_held", ["uring", "overflow"]),  # ... in the kernel's overflow list
    ("protect_ring_held", ["uring", "buffer", "busy"]),  # a buffer registered with a busy ring
    ("protect_ring_held", ["aio"]),          # a Linux AIO event not yet reaped
    ("protect_shape_fixed_buffer", []),  # moving through an io_uring fixed buffer (kernel)
    ("protect_io_workers", ["sqpoll"]),     # (a global) io_uring's polling kernel thread alive
    ("protect_io_workers", ["async"]),      # ... an io-wq worker waiting on a pipe
]


# Settings a shape needs beyond FREQUENT and its mark's.
SHAPE_ENV = {"protect_shape_sampled_holder": {"OSCAR_SAMPLE_RATE": "2"}}


def kernel_at_least(major, minor):
    release = os.uname().release.split("-")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


def skip_unless_concurrent(program, mark, args=()):
    if (program in ("protect_shape_concurrent_move", "protect_shape_fixed_buffer") and
            mark in ("stop", "team")):
        pytest.skip("a shape of concurrent marks: with the world stopped nothing moves")
    if "nonebig" in args and not kernel_at_least(6, 7):
        pytest.skip("inaccessible reservations are read where PAGEMAP_SCAN lists their pages")


@pytest.fixture(scope="module", autouse=True)
def huge_pages():
    """Two huge pages in the kernel's pool for the hugetlb shapes, where root may add them (put
    back as they were afterwards); elsewhere those shapes say "unsupported" and skip."""
    path = "/proc/sys/vm/nr_hugepages"
    try:
        with open(path) as f:
            before = f.read().strip()
        if int(before) < 2:
            with open(path, "w") as f:
                f.write("2")
    except (OSError, ValueError):
        before = None
    yield
    if before is not None:
        try:
            with open(path, "w") as f:
                f.write(before)
        except OSError:
            pass


def skip_if_unsupported(res):
    """A ring the kernel refuses (io_uring disabled by sysctl or a container's seccomp)."""
    for line in res.stdout.splitlines():
        if line.startswith("unsupported "):
            pytest.skip(line)


def ids(shapes):
    return ["-".join([p.replace("protect_shape_", "")] + a) for p, a in shapes]


def marks_of(tmp_path):
    """The marks' figures of a run, for a failure's message (which marks ran, were skipped,
    found objects still referenced), or why there are none."""
    try:
        s = json.loads((tmp_path / "stats.json").read_text())
    except (OSError, ValueError) as e:
        return "no statistics: %s" % e
    return scan_figures(s)


@pytest.mark.parametrize("mark", sorted(MARKS))
@pytest.mark.parametrize("program,args", SHAPES, ids=ids(SHAPES))
def test_not_reused_while_pointed_to(runner, tmp_path, program, args, mark):
    skip_unless_concurrent(program, mark, args)
    env = dict(FREQUENT, OSCAR_STATS_FILE=str(tmp_path / "stats.json"), **MARKS[mark],
               **SHAPE_ENV.get(program, {}))
    res = runner.oscar(program, *args, env=env, timeout=240)
    assert res.returncode == 0 and not res.oscar_lines(), res.describe()
    skip_if_unsupported(res)
    v = parse_values(res.stdout)
    assert v.get("held_reused") == 0, "reused while a pointer to it was held\n" + res.describe()
    if program != "protect_shape_moving":
        # (The mover's exited thread leaves its cached stack mapped; a stale copy there may
        # keep the object for a while: conservative, and the control run shows the check can
        # fail.)
        assert v.get("released_reused", 0) > 0, ("never reused once released\n" + res.describe()
                                                 + "\n" + marks_of(tmp_path))
    if "completion_returns_freed" in v:  # the program read the pointer back from its ring
        assert v["completion_returns_freed"] == 1, res.describe()
    if "bad_fd" in v:
        assert v["bad_fd"] == 0, "open() did not return the lowest descriptor\n" + res.describe()
    if "moves_over_100" in v:  # the movers moved while marks ran
        assert v["moves_over_100"] == 1, res.describe()
    if "bad_children" in v:
        assert v["bad_children"] == 0 and v["forks_done"] == 1, res.describe()
    s = json.loads((tmp_path / "stats.json").read_text())
    assert s["scan_rounds"] >= 20, s
    assert_mark_kind(s, mark)


@pytest.mark.parametrize("mark", CONTROL_MARKS)
@pytest.mark.parametrize("program,args", SHAPES, ids=ids(SHAPES))
def test_shape_check_can_fail(runner, program, args, mark):
    skip_unless_concurrent(program, mark, args)
    res = runner.oscar(program, *args, "control",
                       env=dict(FREQUENT, **MARKS[mark], **SHAPE_ENV.get(program, {})),
                       timeout=240)
    skip_if_unsupported(res)
    assert res.returncode == 0 and parse_values(res.stdout).get("held_reused", 0) > 0, \
        res.describe()


def test_a_sampled_object_voids_a_shape(runner):
    """Why FREQUENT turns sampling off: a sampled object is never handed out again, so had the
    shape's object been sampled (about one run in 20,000 at the default rate) its control
    would report no reuse at all, and a freed holder written through its dangling pointer
    dies with a report (CI saw the first once: freed_holder chain many, snapshot marks)."""
    env = dict(FREQUENT, OSCAR_SAMPLE_RATE="1", OSCAR_MARK="stop", PROTECT_RELEASE_WAIT_S="0")
    v = parse_values(runner.oscar("protect_root_global", "control", env=env).stdout)
    assert v.get("held_reused") == 0 and v.get("released_reused") == 0, v
    res = runner.oscar("protect_shape_freed_holder", "control", env=env)
    assert res.returncode != 0 and "heap-use-after-free" in res.stderr, res.describe()


@pytest.mark.parametrize("mark", sorted(MARKS))
def test_a_thread_that_blocks_the_park_signal(runner, tmp_path, mark):
    """A thread blocks every signal with the raw system call (the park signal too: Oscar's
    wrappers are bypassed) and sleeps in read() with the only pointer in a register: no mark
    can stop the world, none hands the object out, and the program is not slowed by them
    (each failed stop took 50 ms, and every free tried again: 30-60 s for a 0.1 s program;
    now they wait, up to 1 s); once the thread is gone, marks go on."""
    env = dict(FREQUENT, OSCAR_STATS_FILE=str(tmp_path / "stats.json"), **MARKS[mark])
    res = runner.oscar("protect_shape_blocked_register", "sigblock", env=env, timeout=20)
    assert res.returncode == 0 and not res.oscar_lines(), res.describe()
    assert parse_values(res.stdout).get("held_reused") == 0, res.describe()
    s = json.loads((tmp_path / "stats.json").read_text())
    assert s["scan_skipped"] >= 1 and s["scan_rounds"] >= 20, s
