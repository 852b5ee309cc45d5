"""Shared fixtures for Oscar's test suite.

The suite runs tiny programs (tests/programs/*.c, *.cc, built by tests/CMakeLists.txt) and a few
real Debian programs twice: under Oscar (LD_PRELOAD=<build>/src/liboscar.so, or `oscar run`)
and under plain glibc. Detection tests assert the signal and the exact report line from
docs/interfaces.md; correctness tests assert that stdout is byte-identical to glibc's.

Build directory: $OSCAR_BUILD_DIR, default <repo>/build. If the library, the CLI or a test
program is missing or older than its sources, the session configures and builds once:
    cmake -S <repo> -B <build> -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build <build> -j2
If that build fails (for example while src/ is being edited), the test programs are built on
their own from tests/ into <build>/tests-standalone, so the glibc half of the suite still runs
and every test that needs Oscar fails with the build log. Set OSCAR_TEST_NO_BUILD=1 to never
build.
"""

import dataclasses
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
BUILD = Path(os.environ.get("OSCAR_BUILD_DIR") or REPO / "build").resolve()
STANDALONE = BUILD / "tests-standalone"
LIB = BUILD / "src" / "liboscar.so"
CLI = BUILD / "cli" / "oscar"
INTERFACES = REPO / "docs" / "interfaces.md"

DEFAULT_TIMEOUT = 60
SLOW_TIMEOUT = 300

# The first report line for each kind (docs/interfaces.md, "Reports"). ADDR: 0x + lowercase hex,
# no padding.
HEX = r"0x(?:0|[1-9a-f][0-9a-f]*)"


def hexaddr(value):
    return "0x%x" % value


# ---------------------------------------------------------------------------------------------
# Building


def _newest_mtime(paths):
    newest = 0.0
    for root in paths:
        if root.is_file():
            newest = max(newest, root.stat().st_mtime)
        elif root.is_dir():
            for path in root.rglob("*"):
                if path.is_file():
                    newest = max(newest, path.stat().st_mtime)
    return newest


def program_sources():
    progs = TESTS / "programs"
    return sorted(list(progs.glob("*.c")) + list(progs.glob("*.cc")))


def _outputs_fresh(outputs, inputs):
    if not all(p.exists() for p in outputs):
        return False
    oldest = min(p.stat().st_mtime for p in outputs)
    return oldest >= _newest_mtime(inputs)


def _run_build(cmds, log):
    for cmd in cmds:
        log.append("$ " + " ".join(str(c) for c in cmd))
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  errors="replace", timeout=1800)
        except subprocess.TimeoutExpired:
            log.append("(timed out)")
            return False
        log.append(proc.stdout)
        if proc.returncode != 0:
            log.append("(exit status %d)" % proc.returncode)
            return False
    return True


@dataclasses.dataclass
class BuildInfo:
    programs_dir: Path
    lib_ok: bool
    cli_ok: bool
    log: str

    def require_lib(self):
        if not self.lib_ok:
            pytest.fail("liboscar.so is not available (the build failed or is incomplete):\n"
                        + self.log[-6000:], pytrace=False)

    def require_cli(self):
        self.require_lib()
        if not self.cli_ok:
            pytest.fail("%s is not available:\n%s" % (CLI, self.log[-6000:]), pytrace=False)


_build_info = None


def build_info():
    global _build_info
    if _build_info is not None:
        return _build_info
    names = [p.stem for p in program_sources()]
    main_programs = [BUILD / "tests" / "programs" / n for n in names]
    main_outputs = [LIB, CLI] + main_programs
    main_inputs = [REPO / "CMakeLists.txt", REPO / "src", REPO / "cli", REPO / "examples",
                   REPO / "include", REPO / "shim",
                   TESTS / "CMakeLists.txt", TESTS / "programs"]
    log = []
    no_build = os.environ.get("OSCAR_TEST_NO_BUILD") == "1"
    ok = True
    if not no_build and not _outputs_fresh(main_outputs, main_inputs):
        ok = _run_build([
            ["cmake", "-S", REPO, "-B", BUILD, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
            ["cmake", "--build", BUILD, "-j2"],
        ], log)
    if ok and all(p.exists() for p in main_programs):
        programs_dir = BUILD / "tests" / "programs"
    else:
        # The glibc half of the suite still needs the programs.
        standalone_programs = [STANDALONE / "programs" / n for n in names]
        if not no_build and not _outputs_fresh(standalone_programs,
                                               [TESTS / "CMakeLists.txt", TESTS / "programs"]):
            _run_build([
                ["cmake", "-S", TESTS, "-B", STANDALONE, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                ["cmake", "--build", STANDALONE, "-j2"],
            ], log)
        programs_dir = STANDALONE / "programs"
    _build_info = BuildInfo(programs_dir=programs_dir, lib_ok=ok and LIB.exists(),
                            cli_ok=ok and CLI.exists(), log="\n".join(log))
    return _build_info


@pytest.fixture(scope="session")
def build():
    return build_info()


# ---------------------------------------------------------------------------------------------
# Running


@dataclasses.dataclass
class Result:
    argv: list
    returncode: int
    stdout: str
    stderr: str
    pid: int
    seconds: float

    def describe(self):
        return ("command: %s\nreturncode: %s (%s)\nstdout (tail):\n%s\nstderr (tail):\n%s"
                % (" ".join(map(str, self.argv)), self.returncode, describe_returncode(self.returncode),
                   self.stdout[-3000:], self.stderr[-3000:]))

    def oscar_lines(self):
        """stderr lines written by Oscar (reports and warnings; not the stats)."""
        return [l for l in self.stderr.splitlines() if l.startswith("oscar:")]


def describe_returncode(rc):
    if rc is None:
        return "timed out"
    if rc < 0:
        try:
            return "killed by " + signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %d" % rc


def _clean_env(extra):
    env = dict(os.environ)
    # The suite itself may run under a preload; the programs decide for themselves.
    env.pop("LD_PRELOAD", None)
    for key in list(env):
        if key.startswith("OSCAR_"):  # the suite's own OSCAR_BUILD_DIR, OSCAR_TEST_ENV too
            env.pop(key)
    # OSCAR_TEST_ENV="OSCAR_GUARDS=0 ...": run the whole suite under other settings.
    for item in os.environ.get("OSCAR_TEST_ENV", "").split():
        name, _, value = item.partition("=")
        env[name] = value
    env["LC_ALL"] = "C"
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def run_process(argv, env=None, timeout=DEFAULT_TIMEOUT, stdin=None, cwd=None):
    """Run argv (no shell) and return a Result; a timeout is a test failure."""
    argv = [str(a) for a in argv]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        res = Result(argv, None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                     proc.pid, time.monotonic() - start)
        pytest.fail("timed out after %ss\n%s" % (timeout, res.describe()), pytrace=False)
    res = Result(argv, proc.returncode, out.decode("utf-8", "replace"),
                 err.decode("utf-8", "replace"), proc.pid, time.monotonic() - start)
    # The loader ignores a preload it cannot load and runs the program on glibc's malloc: a
    # test would then see glibc's behaviour and blame Oscar's (a library relinked while the
    # suite ran: "reused while a pointer to it was held"), or pass for nothing.
    if NOT_PRELOADED.search(res.stderr):
        pytest.fail("liboscar.so was not loaded\n%s" % res.describe(), pytrace=False)
    return res


NOT_PRELOADED = re.compile(r"object '[^']*liboscar[^']*' from LD_PRELOAD cannot be preloaded")


class Runner:
    """Runs test programs (by name) or arbitrary commands under glibc or under Oscar."""

    def __init__(self, info):
        self.info = info
        self._glibc_runs = {}

    def program(self, name):
        path = self.info.programs_dir / name
        if not path.exists():
            pytest.fail("test program %s was not built:\n%s" % (path, self.info.log[-4000:]),
                        pytrace=False)
        return path

    def _argv(self, prog, args):
        if isinstance(prog, (list, tuple)):
            return list(prog) + list(args)
        if isinstance(prog, Path) or "/" in str(prog):
            return [prog] + list(args)
        return [self.program(prog)] + list(args)

    def glibc(self, prog, *args, env=None, timeout=DEFAULT_TIMEOUT, **kw):
        return run_process(self._argv(prog, args), env=_clean_env(env), timeout=timeout, **kw)

    def glibc_once(self, prog, *args):
        """glibc's run of a program whose output never varies, made once per session and
        shared by the tests that compare against it (each mode's, each mark kind's)."""
        key = (prog, args)
        if key not in self._glibc_runs:
            self._glibc_runs[key] = self.glibc(prog, *args)
        return self._glibc_runs[key]

    def oscar(self, prog, *args, env=None, timeout=DEFAULT_TIMEOUT, **kw):
        """LD_PRELOAD=<build>/src/liboscar.so PROG ARGS."""
        self.info.require_lib()
        e = dict(env or {})
        e["LD_PRELOAD"] = str(LIB)
        return run_process(self._argv(prog, args), env=_clean_env(e), timeout=timeout, **kw)

    def cli(self, prog, *args, env=None, timeout=DEFAULT_TIMEOUT, **kw):
        """<build>/cli/oscar run -- PROG ARGS."""
        self.info.require_cli()
        argv = [CLI, "run", "--"] + self._argv(prog, args)
        return run_process(argv, env=_clean_env(env), timeout=timeout, **kw)

    def raw(self, argv, env=None, timeout=DEFAULT_TIMEOUT, **kw):
        return run_process(argv, env=_clean_env(env), timeout=timeout, **kw)


@pytest.fixture(scope="session")
def runner(build):
    return Runner(build)


# ---------------------------------------------------------------------------------------------
# Program output and assertions


def parse_values(stdout):
    """'name 0xHEX' lines become ints keyed by name; 'name N' lines too (size, offset)."""
    values = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"([A-Za-z_][\w ]*?) (0x[0-9a-f]+|\d+)", line)
        if m:
            values[m.group(1)] = int(m.group(2), 0)
    return values


def report_lines(res):
    """The report: from the first Oscar line that is not a warning, to the end of stderr."""
    lines = res.stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("oscar:") and not line.startswith("oscar: warning:"):
            return lines[i:]
    return []


def assert_report(res, sig, first_line, second_line=None, not_reached="NOT REACHED"):
    """The process died by `sig`, Oscar's first report line fully matches the regex
    `first_line`, the next line matches `second_line` (if given), and `not_reached` (printed
    by the program after the bad operation) never appeared."""
    assert res.returncode == -sig, (
        "expected death by %s\n%s" % (signal.Signals(sig).name, res.describe()))
    report = report_lines(res)
    assert report, "no oscar report on stderr\n" + res.describe()
    assert re.fullmatch(first_line, report[0]), (
        "first report line %r does not match %r\n%s" % (report[0], first_line, res.describe()))
    if second_line is not None:
        assert len(report) > 1 and re.fullmatch(second_line, report[1]), (
            "second report line %r does not match %r\n%s"
            % (report[1] if len(report) > 1 else None, second_line, res.describe()))
    if not_reached:
        assert not_reached not in res.stdout, (
            "the program went on after the bad operation\n" + res.describe())
    return report


def location_line(addr, start, size):
    """ASan-style second line: 0xADDR is located N bytes inside of M-byte region [S,E)."""
    return re.escape("%s is located %d bytes inside of %d-byte region [%s,%s)"
                     % (hexaddr(addr), addr - start, size, hexaddr(start), hexaddr(start + size)))


def assert_clean_run(res, allowed_warnings=()):
    """Exit status 0 and no Oscar report or warning on stderr (except allowed_warnings, a
    list of regexes for whole warning lines)."""
    assert res.returncode == 0, "expected a clean exit\n" + res.describe()
    for line in res.oscar_lines():
        assert any(re.fullmatch(w, line) for w in allowed_warnings), (
            "unexpected oscar line %r\n%s" % (line, res.describe()))


def assert_same_output(oscar_res, glibc_res, allowed_warnings=()):
    """A correct program: clean under both, byte-identical stdout."""
    assert glibc_res.returncode == 0, "the program fails even under glibc\n" + glibc_res.describe()
    assert_clean_run(oscar_res, allowed_warnings)
    assert oscar_res.stdout == glibc_res.stdout, (
        "stdout under oscar differs from glibc\n--- glibc:\n%s\n--- oscar:\n%s\n--- oscar stderr:\n%s"
        % (glibc_res.stdout[-4000:], oscar_res.stdout[-4000:], oscar_res.stderr[-2000:]))


# Warnings a correct program may legitimately trigger (docs/interfaces.md, "Warnings").
MAPPING_LIMIT_WARNING = (r"oscar: warning: near the kernel mapping limit "
                         r"\(vm\.max_map_count=\d+, \d+ mappings in use\): .*")


def documented_counters():
    """The counter names listed after 'Counters:' in docs/interfaces.md."""
    text = INTERFACES.read_text()
    m = re.search(r"^Counters:(.*?)(?:\n\s*\n|\Z)", text, re.S | re.M)
    assert m, "docs/interfaces.md lists no counters"
    names = []
    for item in m.group(1).replace("\n", " ").split(","):
        item = re.sub(r"\(.*?\)", "", item).strip().rstrip(".").strip()
        if item:
            names.append(item)
    return names


def documented_settings():
    """Every OSCAR_* setting: the options table (src/base/options.def) plus those named in the
    contract."""
    names = set(re.findall(r"\bOSCAR_[A-Z0-9_]+\b", INTERFACES.read_text()))
    names.discard("OSCAR_NAME")
    table = REPO / "src" / "base" / "options.def"
    if table.exists():
        names |= set(re.findall(r'"(OSCAR_[A-Z0-9_]+)"', table.read_text()))
    return sorted(names)



def suite_mode():
    """The OSCAR_MODE the whole suite runs under (OSCAR_TEST_ENV), "strict" by default."""
    for item in os.environ.get("OSCAR_TEST_ENV", "").split():
        if item.startswith("OSCAR_MODE="):
            return item.split("=", 1)[1]
    return "strict"


def skip_in_protect_mode(why):
    """Tests of what strict and fast modes do and protect mode does not (it reports no use
    after free: the object stays reachable, zeroed, until no pointer is left)."""
    if suite_mode() == "protect":
        pytest.skip("protect mode: " + why)
