"""The `oscar` command: run, its options (one per row of src/base/options.def), --help,
--version, and its manners on bad input (exit status 2, one clear line)."""

import os
import re
import shutil
import signal

import pytest

from conftest import CLI, LIB, REPO, assert_report, documented_settings, hexaddr, parse_values

OPTIONS_DEF = REPO / "src" / "base" / "options.def"
ROW = re.compile(r'OSCAR_OPTION\(\s*(\w+),\s*"(OSCAR_\w+)",\s*(\w+),\s*(-?\d+),\s*(-?\d+),'
                 r'\s*(-?\d+),\s*(NULL|"[^"]*")')


def option_rows():
    """(env, kind, default, min, max, choices) of every row of the options table."""
    rows = []
    for m in ROW.finditer(OPTIONS_DEF.read_text()):
        _, env, kind, default, lo, hi, choices = m.groups()
        rows.append(dict(env=env, kind=kind, default=int(default), min=int(lo), max=int(hi),
                         choices=None if choices == "NULL" else choices.strip('"').split("|")))
    assert rows, "no rows in %s" % OPTIONS_DEF
    count = len(re.findall(r"^\s*OSCAR_OPTION\(", OPTIONS_DEF.read_text(), re.M))
    assert len(rows) == count, "%d of the %d rows of %s parsed here" % (len(rows), count, OPTIONS_DEF)
    return rows


def flag(env):
    """OSCAR_STACK_DEPTH is `oscar run --stack-depth`."""
    return "--" + env[len("OSCAR_"):].lower().replace("_", "-")


def child_env(res):
    """NAME=VALUE lines printed by env(1)."""
    return dict(l.split("=", 1) for l in res.stdout.splitlines() if "=" in l)


def preload_entries(value):
    # ld.so splits LD_PRELOAD on spaces and colons.
    return [e for e in re.split(r"[ :]", value) if e]


def test_version(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "--version"])
    assert res.returncode == 0, res.describe()
    assert re.search(r"\d+\.\d+", res.stdout + res.stderr), res.describe()


def test_help_lists_every_setting(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "--help"])
    assert res.returncode == 0, res.describe()
    text = res.stdout + res.stderr
    missing = [name for name in documented_settings() if name not in text]
    assert not missing, "oscar --help does not mention %s\n%s" % (missing, res.describe())


def test_run_sets_preload(runner):
    res = runner.cli("print_ld_preload", env={"OSCAR_STATS": "1"})
    assert res.returncode == 0, res.describe()
    value = res.stdout.strip().split("=", 1)[1]
    entries = preload_entries(value)
    assert any(os.path.basename(e) == "liboscar.so" and os.path.exists(e) for e in entries), res.describe()
    assert "oscar-stats: allocations" in res.stderr, "the program did not run under oscar\n" + res.describe()


def test_run_appends_to_existing_preload(runner, build):
    existing = "/lib/x86_64-linux-gnu/libm.so.6"
    if not os.path.exists(existing):
        existing = str(build.programs_dir / "does-not-matter.so")  # ld.so only warns
    res = runner.cli("print_ld_preload", env={"LD_PRELOAD": existing, "OSCAR_STATS": "1"})
    assert res.returncode == 0, res.describe()
    entries = preload_entries(res.stdout.strip().split("=", 1)[1])
    assert existing in entries, "oscar run dropped the existing LD_PRELOAD\n" + res.describe()
    assert any(os.path.basename(e) == "liboscar.so" for e in entries), res.describe()
    assert "oscar-stats: allocations" in res.stderr, "the program did not run under oscar\n" + res.describe()


def test_run_without_double_dash(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "run", build.programs_dir / "print_ld_preload"])
    assert res.returncode == 0 and "liboscar.so" in res.stdout, res.describe()


def test_run_reports_uaf(runner):
    """A detection through `oscar run`: the report is printed and the failure propagates (as
    the signal itself, or the shell convention 128+signal)."""
    res = runner.cli("uaf_read_small")
    v = parse_values(res.stdout)
    if res.returncode == 128 + signal.SIGSEGV:
        res.returncode = -signal.SIGSEGV
    assert_report(res, signal.SIGSEGV,
                  re.escape("oscar: heap-use-after-free on address %s (READ)" % hexaddr(v["access"])))


def test_run_passes_arguments_and_exit_status(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "run", "--", "/bin/sh", "-c", 'echo "$0 $1"; exit 7', "arg0", "arg one"])
    assert res.returncode == 7, res.describe()
    assert res.stdout == "arg0 arg one\n", res.describe()


# --- manners ---------------------------------------------------------------------------------

def test_no_arguments_prints_usage_to_stderr_and_exits_2(runner, build):
    build.require_cli()
    res = runner.raw([CLI])
    assert res.returncode == 2, res.describe()
    assert res.stdout == "", res.describe()
    assert res.stderr.startswith("usage: oscar run"), res.describe()


def test_version_is_one_line(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "--version"])
    assert res.returncode == 0 and re.fullmatch(r"oscar \d+\.\d+\.\d+\n", res.stdout), res.describe()
    version = re.search(r"project\(oscar VERSION (\S+)", (REPO / "CMakeLists.txt").read_text())
    assert res.stdout == "oscar %s\n" % version.group(1), res.describe()


@pytest.mark.parametrize("argv, message", [
    (["frob"], "oscar: unknown command 'frob' (`oscar --help` lists them)"),
    (["--frob"], "oscar: unknown option '--frob' (`oscar --help` lists them)"),
    (["run", "--frob", "--", "/bin/echo", "RAN"],
     "oscar: run: unknown option '--frob' (`oscar --help` lists them)"),
    (["run", "--frob=1", "/bin/echo", "RAN"],
     "oscar: run: unknown option '--frob' (`oscar --help` lists them)"),
    (["run", "-x", "/bin/echo", "RAN"], "oscar: run: unknown option '-x' (`oscar --help` lists them)"),
    (["run", "--no-stack-depth", "/bin/echo", "RAN"],
     "oscar: run: unknown option '--no-stack-depth' (`oscar --help` lists them)"),
    (["run", "--stack-depth=33", "/bin/echo", "RAN"],
     "oscar: run: --stack-depth=33 is invalid (expected an integer from 0 to 32)"),
    (["run", "--stack-depth", "x", "/bin/echo", "RAN"],
     "oscar: run: --stack-depth=x is invalid (expected an integer from 0 to 32)"),
    (["run", "--stats=2", "/bin/echo", "RAN"], "oscar: run: --stats=2 is invalid (expected 0 or 1)"),
    (["run", "--mode=nosuch", "/bin/echo", "RAN"], None),
    (["run", "--stack-depth"], "oscar: run: option '--stack-depth' needs a value (OSCAR_STACK_DEPTH)"),
    (["run", "--stats"], "oscar: run: no program given"),
])
def test_bad_usage_is_one_clear_line_and_exit_2(runner, build, argv, message):
    build.require_cli()
    res = runner.raw([CLI] + argv)
    assert res.returncode == 2, res.describe()
    assert "RAN" not in res.stdout, "the program ran after a usage error\n" + res.describe()
    first = res.stderr.splitlines()[0] if res.stderr else ""
    if message is None:  # the choices come from the table: "expected one of strict|fast|..."
        mode = [r for r in option_rows() if r["env"] == "OSCAR_MODE"][0]
        message = ("oscar: run: --mode=nosuch is invalid (expected one of %s)"
                   % "|".join(mode["choices"]))
    assert first == message, res.describe()


def test_help_shows_a_flag_for_every_option(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "--help"])
    assert res.returncode == 0, res.describe()
    for row in option_rows():
        name = flag(row["env"])
        if row["kind"] == "BOOL":
            want = "%s, --no-%s" % (name, name[2:])
        elif row["kind"] == "CHOICE":
            want = "%s=%s" % (name, "|".join(row["choices"]))
        else:
            want = name + "="
        assert want in res.stdout, "--help lacks %r\n%s" % (want, res.describe())
    run_help = runner.raw([CLI, "run", "--help"])
    assert run_help.returncode == 0 and run_help.stdout == res.stdout, run_help.describe()


def test_every_option_sets_its_variable(runner, build, tmp_path):
    """One flag per row of the options table, alternating the --flag=VALUE and --flag VALUE
    forms; the library sees every value as valid (no warning), and a flag wins over the
    variable already in the environment."""
    build.require_cli()
    argv, expected = [CLI, "run"], {}
    for i, row in enumerate(option_rows()):
        name = flag(row["env"])
        if row["kind"] == "BOOL":
            value = str(1 - row["default"])
            argv.append(name if value == "1" else "--no-" + name[2:])
        else:
            if row["kind"] == "STRING":
                value = str(tmp_path / ("%s.%%p" % row["env"].lower()))
            elif row["kind"] == "CHOICE":
                value = row["choices"][-1]
            else:
                value = str(row["min"] if row["min"] != row["default"] else row["max"])
            argv += [name + "=" + value] if i % 2 else [name, value]
        expected[row["env"]] = value
    # Settings that would change what env(1) prints or how long it runs: keep them harmless.
    res = runner.raw(argv + ["--", "env"], env={"OSCAR_STACK_DEPTH": "3"})
    assert res.returncode == 0, res.describe()
    got = child_env(res)
    for env, value in expected.items():
        assert got.get(env) == value, "%s: expected %r, the program saw %r\n%s" % (
            env, value, got.get(env), res.describe())
    assert not [l for l in res.stderr.splitlines() if l.startswith("oscar: warning: OSCAR_")], \
        res.describe()


@pytest.mark.parametrize("mode", [c for r in option_rows() if r["env"] == "OSCAR_MODE"
                                  for c in r["choices"]])
def test_mode_takes_every_choice_of_the_table(runner, build, mode):
    build.require_cli()
    for argv in (["--mode=" + mode], ["--mode", mode]):
        res = runner.raw([CLI, "run"] + argv + ["--", "env"])
        assert res.returncode == 0, res.describe()
        assert child_env(res).get("OSCAR_MODE") == mode, res.describe()
    # The library takes it too: a program that allocates runs in that mode without a warning.
    res = runner.raw([CLI, "run", "--mode", mode, "--stats", runner.program("print_ld_preload")])
    assert res.returncode == 0, res.describe()
    assert "oscar-stats: allocations" in res.stderr, res.describe()
    assert "oscar: warning" not in res.stderr, res.describe()


def test_no_flag_turns_a_bool_off(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "run", "--no-stats", "--", "env"], env={"OSCAR_STATS": "1"})
    assert res.returncode == 0, res.describe()
    assert child_env(res).get("OSCAR_STATS") == "0", res.describe()
    res = runner.raw([CLI, "run", "--no-stats", runner.program("print_ld_preload")],
                     env={"OSCAR_STATS": "1"})
    assert res.returncode == 0 and "liboscar.so" in res.stdout, res.describe()
    assert "oscar-stats:" not in res.stderr, res.describe()


def test_options_after_the_program_are_the_programs(runner, build):
    build.require_cli()
    res = runner.raw([CLI, "run", "/bin/echo", "--stats", "--frob"])
    assert res.returncode == 0, res.describe()
    assert res.stdout == "--stats --frob\n", res.describe()
    assert "oscar-stats:" not in res.stderr, res.describe()


def test_readme_settings_table_is_generated(runner):
    """The README's settings table is `oscar options --markdown`, as it is now."""
    import subprocess
    from conftest import CLI, REPO
    text = (REPO / "README.md").read_text()
    begin = text.index("<!-- settings table: generated")
    begin = text.index("\n", begin) + 1
    end = text.index("<!-- end of settings table -->")
    out = subprocess.run([str(CLI), "options", "--markdown"], capture_output=True, text=True,
                         check=True).stdout
    assert text[begin:end] == out, ("README's settings table is stale: replace it with "
                                    "`oscar options --markdown`")


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
@pytest.mark.parametrize("mode", ["strict", "protect"])
def test_gdb_passes_the_park_signal_on(runner, build, tmp_path, mode):
    """`oscar gdb`: the program runs under gdb with Oscar preloaded into it only, and the
    stops of the world (a fork with a thread alive, protect mode's marks) do not stop gdb at
    each SIGPWR, as a plain `gdb` with LD_PRELOAD did ("received signal SIGPWR")."""
    build.require_cli()
    expected = runner.glibc_once("sigpending_limit")
    commands = tmp_path / "commands"
    commands.write_text("run\nquit\n")
    with open(commands) as stdin:
        res = runner.raw([CLI, "gdb", "--mode=" + mode, "--quarantine-floor-kib=64", "--",
                          runner.program("sigpending_limit")], stdin=stdin, timeout=120)
    assert res.returncode == 0, res.describe()
    assert "SIGPWR, Power fail" not in res.stdout + res.stderr, res.describe()
    assert "exited normally" in res.stdout + res.stderr, res.describe()
    for line in expected.stdout.splitlines():
        assert line in res.stdout, res.describe()
