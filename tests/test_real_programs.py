"""Real Debian programs run through `oscar run` produce byte-identical output to glibc."""

import filecmp
import shutil
from pathlib import Path

import pytest

from conftest import SLOW_TIMEOUT, TESTS, assert_clean_run

WORKLOADS = TESTS / "workloads"


def find_tool(*candidates):
    for c in candidates:
        path = Path(c) if "/" in c else (shutil.which(c) and Path(shutil.which(c)))
        if path and path.exists():
            return path
    return None


def compare(runner, argv, env=None, timeout=SLOW_TIMEOUT, stdin_path=None, cwd=None):
    def go(fn):
        if stdin_path:
            with open(stdin_path, "rb") as f:
                return fn(argv, env=env, timeout=timeout, stdin=f, cwd=cwd)
        return fn(argv, env=env, timeout=timeout, cwd=cwd)

    expected = go(runner.glibc)
    assert expected.returncode == 0, "fails even under glibc\n" + expected.describe()
    res = go(runner.cli)
    assert_clean_run(res)
    assert res.stdout == expected.stdout, (
        "output differs from glibc\n--- glibc:\n%s\n--- oscar:\n%s\n--- oscar stderr:\n%s"
        % (expected.stdout[-3000:], res.stdout[-3000:], res.stderr[-3000:]))
    return res


def test_python_workload(runner):
    python = find_tool("/usr/bin/python3", "python3")
    if python is None:
        pytest.skip("no python3 binary")
    compare(runner, [python, "-I", WORKLOADS / "python_workload.py"],
            env={"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"})


def test_sqlite3_workload(runner):
    sqlite3 = find_tool("sqlite3")
    if sqlite3 is None:
        pytest.skip("the sqlite3 binary is not installed")
    res = compare(runner, [sqlite3, "-batch", ":memory:"], stdin_path=WORKLOADS / "sqlite_workload.sql")
    assert res.stdout.splitlines()[-1] == "ok", res.describe()  # PRAGMA integrity_check


def test_gcc_compiles_identically(runner, tmp_path):
    gcc = find_tool("gcc", "cc")
    if gcc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "gcc_hello.c"
    shutil.copy(WORKLOADS / "gcc_hello.c", src)
    outputs = {}
    for name, fn in (("glibc", runner.glibc), ("oscar", runner.cli)):
        asm = fn([gcc, "-O2", "-S", "gcc_hello.c", "-o", name + ".s"], timeout=SLOW_TIMEOUT, cwd=tmp_path)
        assert asm.returncode == 0 and not asm.oscar_lines(), asm.describe()
        exe = fn([gcc, "-O2", "gcc_hello.c", "-o", name + ".out"], timeout=SLOW_TIMEOUT, cwd=tmp_path)
        assert exe.returncode == 0 and not exe.oscar_lines(), exe.describe()
        outputs[name] = exe
    assert filecmp.cmp(tmp_path / "glibc.s", tmp_path / "oscar.s", shallow=False), \
        "cc1 under oscar produced different assembly"
    assert filecmp.cmp(tmp_path / "glibc.out", tmp_path / "oscar.out", shallow=False), \
        "gcc under oscar produced a different executable"
    plain = runner.glibc(tmp_path / "glibc.out", "5000")
    assert plain.returncode == 0, plain.describe()
    built_under_oscar = runner.glibc(tmp_path / "oscar.out", "5000")
    assert built_under_oscar.stdout == plain.stdout, built_under_oscar.describe()
    under_oscar = runner.cli(tmp_path / "oscar.out", "5000")
    assert_clean_run(under_oscar)
    assert under_oscar.stdout == plain.stdout, under_oscar.describe()
