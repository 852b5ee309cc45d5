"""A real user of Oscar's park signal: Boehm GC (libgc) stops the program's threads with
pthread_kill(thread, SIGPWR) for every collection and waits for each one's handler, while
Oscar's own stops (forks, protect mode's marks) send SIGPWR too. Same output as glibc in every
mode, no hang. The program (tests/libgc/gc_threads.c) is built here with libgc-dev's -lgc."""

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TESTS, assert_same_output

MODES = {"strict": {"OSCAR_MODE": "strict"}, "fast": {"OSCAR_MODE": "fast"},
         "protect": {"OSCAR_MODE": "protect", "OSCAR_QUARANTINE_FLOOR_KIB": "2",
                     "OSCAR_QUARANTINE_SHARE": "0"}}


@pytest.fixture(scope="module")
def gc_program(tmp_path_factory):
    if not Path("/usr/include/gc/gc.h").exists():
        pytest.skip("libgc-dev is not installed (apt-get install -y libgc-dev)")
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("libgc") / "gc_threads"
    build = subprocess.run([cc, "-O0", "-fno-builtin", "-Wall", "-Wextra", "-Werror",
                            str(TESTS / "libgc" / "gc_threads.c"), "-lgc", "-lpthread",
                            "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    assert build.returncode == 0, build.stdout
    return out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_boehm_gc_collections_and_oscars_stops_share_sigpwr(runner, gc_program, mode):
    expected = runner.glibc(gc_program)
    assert expected.stdout.endswith("OK\n"), expected.describe()
    for _ in range(2 if mode == "protect" else 1):
        res = runner.oscar(gc_program, env=MODES[mode], timeout=120)
        assert_same_output(res, expected)
