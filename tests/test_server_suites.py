"""The servers' own test suites (redis's Tcl suite, memcached's Perl t/*.t), from Debian 12's
source packages, run against the Debian binaries under Oscar, and the units in which a test
failed under Oscar under glibc too, compared test by test (docs/server-suites.md).

The sources are fetched on first use with `apt-get source redis` / `apt-get source memcached`
into <build>/server-suites/ (needs a deb-src line and dpkg-dev); the test skips, with the
reason, when a source, tclsh (Debian tcl), perl, a C compiler or a server binary is missing.
Only the servers are preloaded: wrapper scripts in the run directory (src/redis-server, ...,
./memcached-debug) export LD_PRELOAD=<build>/src/liboscar.so and exec the Debian binary; the
Tcl and Perl interpreters run under glibc (OSCAR_SERVER_SUITES_PRELOAD_INTERPRETERS=1
preloads them too).

By default a CI subset runs (about 2 minutes under glibc, 3 to 4 under Oscar for both suites on
2 cores; the glibc run only for units that failed under Oscar, or for every unit with
OSCAR_SERVER_SUITES_ALL_BASELINE=1); OSCAR_SERVER_SUITES_FULL=1 runs every unit and every t/
file (about 25 and 50 minutes). A test whose result differs between glibc and Oscar fails this test unless it is a
documented, understood difference (suites.REDIS_KNOWN_DIFFERENCES,
suites.MEMCACHED_KNOWN_DIFFERENCES); any Oscar report fails it. The comparison is written to
<build>/server-suites/<suite>-comparison.txt.
"""

import io
import os
import sys

import pytest

from conftest import BUILD, LIB, TESTS, _clean_env

sys.path.insert(0, str(TESTS / "server_suites"))
import suites  # noqa: E402

FULL = os.environ.get("OSCAR_SERVER_SUITES_FULL") == "1"
PRELOAD_INTERPRETERS = os.environ.get("OSCAR_SERVER_SUITES_PRELOAD_INTERPRETERS") == "1"
# OSCAR_SERVER_SUITES_ALL_BASELINE=1: every unit under glibc too, even when none failed.
ALL_BASELINE = os.environ.get("OSCAR_SERVER_SUITES_ALL_BASELINE") == "1"
CACHE = BUILD / "server-suites"

# Runs with fewer passing tests than this (Oscar's and glibc's together) did not really run
# (a broken setup): the comparison would be vacuous.
MIN_OK = {"redis": 500, "memcached": 1000}


def _run_both(suite, build):
    build.require_lib()
    base = _clean_env(None)
    try:
        if suite == "redis":
            src = suites.fetch_source("redis", CACHE)
            items = suites.redis_units(src) if FULL else suites.REDIS_QUICK
            fn, known = suites.run_redis, suites.REDIS_KNOWN_DIFFERENCES
        else:
            src = suites.fetch_source("memcached", CACHE)
            items = suites.memcached_files(src) if FULL else suites.MEMCACHED_QUICK
            fn, known = suites.run_memcached, suites.MEMCACHED_KNOWN_DIFFERENCES
        # Under Oscar first; under glibc then only the units where a test failed (or that
        # stopped early) under Oscar: a test that passed under Oscar needs no baseline (a
        # glibc run of every unit doubled the test's time, 2.5 minutes of CI).
        runs = {"oscar": fn("oscar", items, jobs=2, cache=CACHE, lib=LIB, base_env=base,
                            preload_interpreters=PRELOAD_INTERPRETERS)}
        failed_units = {k[0] for k, v in runs["oscar"].results.items() if v == "err"}
        failed = [u for u in items if u in failed_units]
        runs["glibc"] = (fn("glibc", failed, jobs=2, cache=CACHE, lib=LIB, base_env=base,
                            preload_interpreters=False) if failed or ALL_BASELINE else
                         suites.SuiteRun(suite, "glibc (no unit failed under Oscar: not run)",
                                         CACHE / "runs" / "none"))
    except suites.Unavailable as e:
        # One line: the reason, and the last line of a failed command's output.
        lines = [l.strip() for l in str(e).splitlines() if l.strip()]
        pytest.skip(" ".join(lines[:1] + lines[1:][-1:]))
    out = io.StringIO()
    rows = suites.report(runs["glibc"], runs["oscar"], known, out=out)
    text = out.getvalue()
    (CACHE / ("%s-comparison.txt" % suite)).write_text(text)
    print(text)
    return runs, rows, text


def _check(suite, runs, rows, text):
    glibc, oscar = runs["glibc"], runs["oscar"]
    assert oscar.counts()["ok"] + glibc.counts()["ok"] >= MIN_OK[suite], (
        "too few tests passed to compare with (a broken setup?)\n" + text[-6000:])
    assert oscar.stats_files > 0, (
        "no server wrote Oscar's statistics: was liboscar.so loaded?\n" + text[-3000:])
    unexplained = [r for r in rows if r[3] is None]
    assert not unexplained, (
        "%d tests differ between glibc and Oscar (details in %s):\n%s"
        % (len(unexplained), CACHE / ("%s-comparison.txt" % suite), text[-12000:]))
    assert not oscar.oscar_reports, "Oscar reported an error in a server:\n" + text[-12000:]
    assert not oscar.oscar_lines, "Oscar printed to a server's log:\n" + text[-6000:]


def test_redis_suite_glibc_vs_oscar(build):
    runs, rows, text = _run_both("redis", build)
    _check("redis", runs, rows, text)


def test_memcached_suite_glibc_vs_oscar(build):
    runs, rows, text = _run_both("memcached", build)
    _check("memcached", runs, rows, text)
