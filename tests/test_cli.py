"""The `oscar` command: run, --help, --version."""

import os
import re
import signal

from conftest import CLI, LIB, assert_report, documented_settings, hexaddr, parse_values


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
