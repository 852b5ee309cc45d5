"""Real programs' own test suites and workloads, under Oscar (strict, fast, protect) and glibc.

Each test runs a real program twice or more: once under plain glibc (the baseline, computed
once per session) and once per Oscar mode (LD_PRELOAD=liboscar.so, OSCAR_MODE=strict, fast
or protect), then compares: per-module unittest counts for CPython's own test suite, byte-identical stdout
for the sqlite3 shell, perl, git and the C++ STL program, byte-identical object files and
executable for g++. What passes, what is known not to work and why: docs/real-programs.md.

    python3 -m pytest -q -p no:cacheprovider tests/test_real_suites.py      # quick set (CI)
    OSCAR_REAL_FULL=1 python3 -m pytest -q -p no:cacheprovider tests/test_real_suites.py

OSCAR_REAL_FULL=1 adds the slow Python test modules and uses larger inputs everywhere.
OSCAR_REAL_JOBS=N runs N programs at once (default 2: the CI machine has 2 cores).
OSCAR_REAL_PYTHON_MODULES="test_json test_re" runs just those modules.
"""

import concurrent.futures
import filecmp
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import (LIB, MAPPING_LIMIT_WARNING, SLOW_TIMEOUT, TESTS, _clean_env,
                      assert_clean_run, run_process)

REAL = TESTS / "real"
DATA = REAL / "data"
FULL = os.environ.get("OSCAR_REAL_FULL") == "1"
JOBS = max(1, int(os.environ.get("OSCAR_REAL_JOBS") or 2))
MODES = {"strict": {"OSCAR_MODE": "strict"}, "fast": {"OSCAR_MODE": "fast"},
         "protect": {"OSCAR_MODE": "protect"}}
# Correct programs with many live small objects can meet the kernel's mapping limit; Oscar
# then says so once and goes on (README "Modes"; docs/real-programs.md, "Known").
ALLOWED = [MAPPING_LIMIT_WARNING]
LONG_TIMEOUT = 1800

# Sizes: (quick, full).
PERL_LINES = 100000 if FULL else 20000
GIT_FILES = 1000 if FULL else 200
STL_SCALE = 16 if FULL else 4
STL_THREADS = 4

PYTHON = Path("/usr/bin/python3")
PYTHON_ENV = {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
              "PYTHONNOUSERSITE": "1"}
# Variables that would change which Python runs or what it imports.
PYTHON_ENV_DROP = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH",
                   "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONTRACEMALLOC", "PYTHONUSERBASE",
                   "PYTHONINSPECT", "PYTHONOPTIMIZE", "PYTHONVERBOSE")

STL_SOURCES = sorted(p.name for p in (DATA / "stl").glob("*.cc"))
GXX_FLAGS = ["-std=c++17", "-O2", "-pthread"]


# ---------------------------------------------------------------------------------------------
# Running under glibc or one Oscar mode


def env_for(mode, extra=None, drop=()):
    """The environment of one run: mode None is glibc; otherwise Oscar in that mode."""
    e = dict(extra or {})
    if mode is not None:
        e["LD_PRELOAD"] = str(LIB)
        e.update(MODES[mode])
    env = _clean_env(e)
    for name in drop:
        env.pop(name, None)
    return env


class Timings:
    """Wall time per (what, mode), printed at the end of the module."""

    def __init__(self):
        self.rows = []
        self.lock = threading.Lock()

    def add(self, what, mode, seconds):
        with self.lock:
            self.rows.append((what, mode or "glibc", seconds))


TIMINGS = Timings()


@pytest.fixture(scope="module", autouse=True)
def _print_timings(request):
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or not TIMINGS.rows:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line("real suites, wall seconds (%s set, %d jobs):"
                            % ("full" if FULL else "quick", JOBS))
        for what, mode, seconds in TIMINGS.rows:
            reporter.write_line("  %-28s %-7s %8.1f" % (what, mode, seconds))


def run(argv, mode, extra=None, drop=(), timeout=SLOW_TIMEOUT, stdin_path=None, cwd=None):
    env = env_for(mode, extra, drop)
    if stdin_path:
        with open(stdin_path, "rb") as f:
            return run_process(argv, env=env, timeout=timeout, stdin=f, cwd=cwd)
    return run_process(argv, env=env, timeout=timeout, cwd=cwd)


def assert_same(res, base, what):
    """Oscar's run is clean and its stdout is byte-identical to glibc's."""
    assert base.returncode == 0, "%s fails even under glibc\n%s" % (what, base.describe())
    assert_clean_run(res, ALLOWED)
    if res.stdout != base.stdout:
        diff = first_difference(base.stdout, res.stdout)
        pytest.fail("%s: stdout under oscar differs from glibc at line %d\n--- glibc: %r\n"
                    "--- oscar: %r\n%s" % (what, diff[0], diff[1], diff[2], res.describe()),
                    pytrace=False)


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else None
        y = lb[i] if i < len(lb) else None
        if x != y:
            return i + 1, x, y
    return 0, None, None


class Baselines:
    """glibc results, computed once per session on first use."""

    def __init__(self, root):
        self.root = root
        self.values = {}
        self.lock = threading.Lock()

    def get(self, name, compute):
        with self.lock:
            if name not in self.values:
                path = self.root / name
                path.mkdir()
                self.values[name] = compute(path)
            return self.values[name]


@pytest.fixture(scope="session")
def baselines(tmp_path_factory):
    return Baselines(tmp_path_factory.mktemp("glibc"))


@pytest.fixture(params=sorted(MODES))
def mode(request, build):
    build.require_lib()
    return request.param


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip("%s is not installed (Debian package: see docs/real-programs.md)" % name)
    return Path(path)


# ---------------------------------------------------------------------------------------------
# CPython's own test suite


def python_modules():
    chosen = os.environ.get("OSCAR_REAL_PYTHON_MODULES", "").split()
    if chosen:
        return chosen
    names = []
    for line in (REAL / "python_modules.txt").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 2 and (fields[1] == "quick" or FULL):
            names.append(fields[0])
    return names


def python_available():
    if not PYTHON.exists():
        return "Debian's /usr/bin/python3 is not installed (apt-get install -y python3)"
    probe = subprocess.run([PYTHON, "-c", "import test.test_json, test.support"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env_for(None, PYTHON_ENV, PYTHON_ENV_DROP))
    if probe.returncode != 0:
        return ("/usr/bin/python3 has no standard-library test suite (apt-get install -y "
                "libpython3.11-testsuite): " + probe.stdout.strip().splitlines()[-1])
    return None


def run_python_suite(mode, modules, workdir):
    """Each module in its own /usr/bin/python3 process, JOBS at a time. Returns
    {module: (result dict or None, Result)}."""
    timeout = LONG_TIMEOUT if FULL else 600

    def one(name):
        res = run([PYTHON, "-s", REAL / "python_suite.py", name], mode, PYTHON_ENV,
                  drop=PYTHON_ENV_DROP, timeout=timeout, cwd=workdir)
        found = None
        for line in res.stdout.splitlines():
            if line.startswith("RESULT "):
                found = json.loads(line[len("RESULT "):])
        return name, (found, res)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        results = dict(pool.map(one, modules))
    TIMINGS.add("python, %d modules" % len(modules), mode, time.monotonic() - start)
    return results


def outcome(found):
    """What must be equal between glibc and Oscar for one module."""
    if found is None:
        return None
    return {k: found[k] for k in ("run", "failures", "errors", "skipped", "expected_failures",
                                  "unexpected_successes")}


def test_python_stdlib(mode, baselines, tmp_path):
    why = python_available()
    if why:
        pytest.skip(why)
    modules = python_modules()
    base = baselines.get("python", lambda d: run_python_suite(None, modules, d))
    clean = [m for m, (found, res) in base.items()
             if found and res.returncode == 0 and not found["failures"] and not found["errors"]]
    if not os.environ.get("OSCAR_REAL_PYTHON_MODULES"):
        assert len(clean) >= 40, (
            "only %d test modules pass under glibc here (need 40):\n%s"
            % (len(clean), "\n".join(sorted(set(modules) - set(clean)))))
    got = run_python_suite(mode, modules, tmp_path)
    problems = []
    for name in modules:
        bfound, bres = base[name]
        found, res = got[name]
        lines = [l for l in res.oscar_lines() if not any(re.fullmatch(w, l) for w in ALLOWED)]
        if outcome(found) != outcome(bfound) or res.returncode != bres.returncode or lines:
            problems.append("%s: glibc %s (exit %s), oscar %s (exit %s)\n  oscar lines: %s\n%s"
                            % (name, outcome(bfound), bres.returncode, outcome(found),
                               res.returncode, lines[:5], res.describe()))
    assert not problems, ("%d of %d modules differ from glibc under oscar (%s):\n\n%s"
                          % (len(problems), len(modules), mode, "\n\n".join(problems)))


# ---------------------------------------------------------------------------------------------
# sqlite3 shell


def sqlite_run(mode, workdir):
    sqlite3 = tool("sqlite3")
    db = workdir / "workload.db"
    if db.exists():
        db.unlink()
    start = time.monotonic()
    res = run([sqlite3, "-batch", db], mode, stdin_path=DATA / "workload.sql", cwd=workdir)
    TIMINGS.add("sqlite3", mode, time.monotonic() - start)
    return res


def test_sqlite3(mode, baselines, tmp_path):
    tool("sqlite3")
    base = baselines.get("sqlite3", lambda d: sqlite_run(None, d))
    res = sqlite_run(mode, tmp_path)
    assert_same(res, base, "sqlite3")
    lines = res.stdout.splitlines()
    assert lines.count("ok") == 3 and lines[-1] == "done", res.describe()  # integrity_check


# ---------------------------------------------------------------------------------------------
# perl


def test_perl(mode, baselines):
    perl = tool("perl")
    argv = [perl, DATA / "textproc.pl", PERL_LINES]
    def timed(m, cwd=None):
        start = time.monotonic()
        res = run(argv, m, timeout=LONG_TIMEOUT, cwd=cwd)
        TIMINGS.add("perl, %d lines" % PERL_LINES, m, time.monotonic() - start)
        return res

    base = baselines.get("perl", lambda d: timed(None, d))
    res = timed(mode)
    assert_same(res, base, "perl")
    assert "closures" in res.stdout.splitlines()[-1], res.describe()


# ---------------------------------------------------------------------------------------------
# git


def git_run(mode, workdir):
    tool("git")
    bash = tool("bash")
    start = time.monotonic()
    res = run([bash, DATA / "git_workload.sh", workdir, GIT_FILES], mode, timeout=LONG_TIMEOUT,
              cwd=workdir)
    TIMINGS.add("git, %d files" % GIT_FILES, mode, time.monotonic() - start)
    return res


def test_git(mode, baselines, tmp_path):
    tool("git")
    base = baselines.get("git", lambda d: git_run(None, d))
    res = git_run(mode, tmp_path)
    assert_same(res, base, "git")
    assert res.stdout.splitlines()[-1] == "done", res.describe()


# ---------------------------------------------------------------------------------------------
# g++ and the multi-file C++ STL program (tests/real/data/stl)


def gxx_build(mode, workdir):
    """Compile every translation unit (JOBS at a time) and link, all under `mode`. Sources
    are copied next to the output so that every path the compiler sees is the same."""
    gxx = tool("g++")
    src = workdir / "src"
    shutil.copytree(DATA / "stl", src)
    out = workdir / "out"
    out.mkdir()

    def compile_one(name):
        obj = Path(name).with_suffix(".o").name
        return run([gxx] + GXX_FLAGS + ["-frandom-seed=" + name, "-c", "../src/" + name,
                                        "-o", obj],
                   mode, timeout=LONG_TIMEOUT, cwd=out)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        results = list(pool.map(compile_one, STL_SOURCES))
    objs = [Path(n).with_suffix(".o").name for n in STL_SOURCES]
    results.append(run([gxx, "-pthread"] + objs + ["-o", "stl"], mode, timeout=LONG_TIMEOUT,
                       cwd=out))
    TIMINGS.add("g++, %d files and link" % len(STL_SOURCES), mode, time.monotonic() - start)
    return out, results


def stl_baseline(baselines):
    def compute(d):
        out, results = gxx_build(None, d)
        for res in results:
            assert res.returncode == 0, "g++ fails even under glibc\n" + res.describe()
        exe = out / "stl"
        small = run([exe, 1, STL_THREADS], None)
        start = time.monotonic()
        big = run([exe, STL_SCALE, STL_THREADS], None, timeout=LONG_TIMEOUT)
        TIMINGS.add("stl, scale %d" % STL_SCALE, None, time.monotonic() - start)
        return out, small, big

    return baselines.get("g++ and stl", compute)


def test_gxx_compiles_stl_program(mode, baselines, tmp_path):
    tool("g++")
    base_out, base_small, _ = stl_baseline(baselines)
    out, results = gxx_build(mode, tmp_path)
    for res in results:
        assert_clean_run(res, ALLOWED)
    for name in [Path(n).with_suffix(".o").name for n in STL_SOURCES] + ["stl"]:
        assert filecmp.cmp(base_out / name, out / name, shallow=False), (
            "g++ under oscar (%s) produced a different %s" % (mode, name))
    # The program built under Oscar, run under Oscar.
    res = run([out / "stl", 1, STL_THREADS], mode)
    assert_same(res, base_small, "stl 1")
    assert res.stdout.splitlines()[-1].startswith("total digest "), res.describe()


def test_stl_program_large_input(mode, baselines):
    tool("g++")
    base_out, _, base_big = stl_baseline(baselines)
    start = time.monotonic()
    res = run([base_out / "stl", STL_SCALE, STL_THREADS], mode, timeout=LONG_TIMEOUT)
    TIMINGS.add("stl, scale %d" % STL_SCALE, mode, time.monotonic() - start)
    assert_same(res, base_big, "stl %d" % STL_SCALE)
    assert "merged==shared yes" in res.stdout and "graph released yes" in res.stdout
