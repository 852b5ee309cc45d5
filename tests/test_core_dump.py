"""Core dumps stay the size of the heap (issue 20, item 8): a program with a 10 MiB heap that
crashed under Oscar dumped a core of about 100 GiB apparent size (the canonical window and the
metadata tables, dumped whole with their holes). The core must be small, and a debugger must
still read a live object through its address from it."""

import re
import shutil
import signal
from pathlib import Path

import pytest

from conftest import LIB, parse_values

CORE_LIMIT_KIB = 2 << 20  # ulimit -c: a regression writes at most 2 GiB, not 100
SMALL_CORE = 1 << 30


def core_file_in_cwd():
    """Skip unless the kernel writes a plain core file in the crashing process's cwd."""
    try:
        pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    except OSError as e:
        pytest.skip("cannot read /proc/sys/kernel/core_pattern: %s" % e)
    if pattern.startswith("|"):
        pytest.skip("core_pattern pipes cores to a handler (%s): no core file to measure" % pattern)
    if "/" in pattern:
        pytest.skip("core_pattern writes cores elsewhere (%s), not in the cwd" % pattern)
    return pattern


def crash_with_core(runner, tmp_path, env):
    core_file_in_cwd()
    prog = runner.program("core_dump_live_object")
    res = runner.raw(["bash", "-c", 'ulimit -c %d && exec "$0"' % CORE_LIMIT_KIB, prog],
                     env=env, cwd=tmp_path, timeout=300)
    assert res.returncode in (-signal.SIGSEGV, 128 + signal.SIGSEGV), res.describe()
    cores = [p for p in tmp_path.iterdir() if p.name.startswith("core")]
    if not cores:
        pytest.skip("no core file written (core dumps disabled for this process: "
                    "RLIMIT_CORE hard limit or fs.suid_dumpable)")
    return res, cores[0], prog


@pytest.mark.parametrize("mode", ["strict", "fast", "protect"])
def test_core_dump_is_small_and_shows_live_objects(runner, build, tmp_path, mode):
    build.require_lib()
    res, core, prog = crash_with_core(runner, tmp_path,
                                      {"LD_PRELOAD": str(LIB), "OSCAR_MODE": mode})
    size = core.stat().st_size
    assert size < SMALL_CORE, "core of %d bytes (apparent size) in %s mode" % (size, mode)
    marked = parse_values(res.stdout)["marked"]
    gdb = shutil.which("gdb")
    if not gdb:
        pytest.skip("gdb is not installed: the core's size was checked, not its contents")
    out = runner.raw([gdb, "-batch", "-nx", "-ex", "x/s 0x%x" % marked,
                      "-ex", "print (char *)marked", prog, core], timeout=120)
    assert re.search(r"^0x%x:\s+\"oscar core dump marker\"$" % marked, out.stdout, re.M), out.describe()
    assert re.search(r"= 0x%x \"oscar core dump marker\"" % marked, out.stdout), out.describe()
    core.unlink()


def test_glibc_core_for_comparison(runner, tmp_path):
    """The same program under glibc: the figure Oscar's core is measured against."""
    res, core, prog = crash_with_core(runner, tmp_path, None)
    assert core.stat().st_size < SMALL_CORE
    core.unlink()
