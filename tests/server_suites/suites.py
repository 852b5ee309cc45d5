#!/usr/bin/env python3
"""The servers' own test suites, from Debian 12's source packages, run against Debian's
binaries under glibc and under Oscar (docs/server-suites.md).

    python3 tests/server_suites/suites.py [--suite redis|memcached] [--mode glibc|oscar]...
                                          [--full] [--preload-interpreters] [--jobs N]

Sources are fetched once with `apt-get source` into <build>/server-suites/ (the cache). Each
run gets a fresh run directory under <cache>/runs/: a copy of the suite's test tree and, where
the suite expects its freshly built binaries, wrapper scripts that exec the Debian binary
(/usr/bin/redis-server, /usr/bin/memcached, ...). Under Oscar the wrappers export
LD_PRELOAD=<build>/src/liboscar.so, so only the servers (and redis-cli, redis-benchmark,
redis-check-*) run under Oscar; the Tcl and Perl interpreters run under glibc unless
--preload-interpreters is given. Oscar's reports go to <run>/oscar-reports/<pid>.txt and its
statistics to <run>/oscar-stats/<pid>.json (proof that the servers did load it).

Results are per test: redis `[ok]/[err]/[skip]/[ignore]` lines keyed by (unit, test name),
memcached TAP lines keyed by (file, test number). A unit or file that crashed or timed out
gets a synthetic `<unit>: unit aborted` entry with status `err`.
"""

import argparse
import collections
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
BUILD = Path(os.environ.get("OSCAR_BUILD_DIR") or REPO / "build").resolve()
LIB = BUILD / "src" / "liboscar.so"
CACHE = BUILD / "server-suites"

# -------------------------------------------------------------------------------------------
# What runs

# CI subset (docs/server-suites.md): the data types, keyspace, expiry, transactions, Lua,
# streams, and fork (BGSAVE, AOF rewrite) in integration/rdb and integration/aof. Under Oscar
# with 2 lanes about 2 minutes on 2 busy cores.
REDIS_QUICK = [
    "integration/aof", "unit/scripting", "unit/type/set", "unit/sort", "unit/type/string",
    "unit/type/list", "integration/rdb", "unit/expire", "unit/type/hash", "unit/multi",
    "unit/type/stream-cgroups", "unit/keyspace", "unit/type/incr", "unit/pubsub",
]

# Units never run, with the reason (docs/server-suites.md).
REDIS_EXCLUDED_UNITS = {
    "unit/tls": "needs --tls and generated certificates",
}

# Tests skipped in every mode (--skiptest), with the reason.
REDIS_SKIPPED_TESTS = {
}

# Tests (unit, name) whose result under Oscar may differ from glibc for an understood reason:
# they are reported, not failed. Filled from the runs documented in docs/server-suites.md.
_JEMALLOC_FRAG = ("asserts jemalloc's fragmentation statistic allocator_frag_ratio (INFO "
                  "memory, read with mallctl from the libjemalloc redis is linked with); under "
                  "Oscar jemalloc allocates nothing, so the ratio stays at 1.14 and the "
                  "assertions on it ('frag >= 1.4' before defragmenting, '< 1.05' after) fail")
REDIS_KNOWN_DIFFERENCES = {
    ("unit/memefficiency", "Active defrag"): _JEMALLOC_FRAG,
    ("unit/memefficiency", "Active defrag eval scripts"): _JEMALLOC_FRAG,
    ("unit/memefficiency", "Active defrag big keys"): _JEMALLOC_FRAG,
    ("unit/memefficiency", "Active defrag big list"): _JEMALLOC_FRAG,
    ("unit/memefficiency", "Active defrag edge case"): _JEMALLOC_FRAG,
}

# About 3 minutes of Oscar time, 1.5 with 2 lanes; the extstore files (disk I/O) and the
# slow restart/idle-timeout/watcher files run only in the full suite.
MEMCACHED_QUICK = [
    "binary.t", "metaget.t", "getset.t", "lru-maintainer.t", "slabs-reassign2.t",
    "chunked-items.t", "flush-all.t", "cas.t", "dyn-maxbytes.t", "issue_14.t", "touch.t",
    "slabs_reassign.t", "maxconns.t", "malicious-commands.t", "issue_183.t", "getandtouch.t",
    "stats-conns.t", "issue_192.t", "flags.t", "64bit.t", "unixsocket.t", "strtol-testing.t",
    "stats.t", "stats-detail.t", "quit.t", "noreply.t", "multiversioning.t", "lru.t",
    "incrdecr.t", "evictions.t", "conn-limits.t", "bogus-commands.t", "binary-get.t",
    "ascii-auth.t", "issue_70.t", "issue_104.t", "issue_108.t", "issue_41.t", "issue_42.t",
    "issue_50.t", "issue_61.t", "issue_68.t", "issue_29.t", "issue_22.t", "issue_3.t",
    "issue_152.t", "udp.t", "line-lengths.t", "watcher_connid.t", "dash-M.t",
]

MEMCACHED_EXCLUDED_FILES = {
    "whitespace.t": "checks the source tree's whitespace, not the server (Debian removes it too)",
    "expirations.t": "moves the server's clock with `debugtime`, a command only the debug build "
                     "(memcached-debug) has: 5 of its tests fail under glibc too",
}

MEMCACHED_KNOWN_DIFFERENCES = {
}

UNIT_TIMEOUT = {"glibc": 900, "oscar": 1800}
FILE_TIMEOUT = {"glibc": 600, "oscar": 1200}

MAPPING_LIMIT_WARNING = re.compile(r"oscar: warning: near the kernel mapping limit .*")


class Unavailable(Exception):
    """A prerequisite (a source package, tclsh, perl, gcc, a binary) is missing."""


# -------------------------------------------------------------------------------------------
# Sources


def fetch_source(package, cache=CACHE):
    """<cache>/<package>-<version>/, unpacked by `apt-get source` on first use."""
    cache.mkdir(parents=True, exist_ok=True)
    for d in sorted(cache.glob(package + "-*")):
        if (d / ".oscar-complete").exists():
            return d
    if not shutil.which("apt-get") or not shutil.which("dpkg-source"):
        raise Unavailable("apt-get source needs apt and dpkg-dev (Debian package dpkg-dev)")
    tmp = cache / ("fetch-" + package)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        proc = subprocess.run(["apt-get", "source", "--only-source", package], cwd=tmp,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Unavailable("apt-get source %s failed: %s" % (package, e))
    dirs = [d for d in tmp.glob(package + "-*") if d.is_dir()]
    if proc.returncode != 0 or len(dirs) != 1:
        raise Unavailable("apt-get source %s failed (is a deb-src line configured in "
                          "/etc/apt/sources.list.d?):\n%s" % (package, proc.stdout[-2000:]))
    dest = cache / dirs[0].name
    shutil.rmtree(dest, ignore_errors=True)
    dirs[0].rename(dest)
    (dest / ".oscar-complete").write_text(proc.stdout)
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


# -------------------------------------------------------------------------------------------
# Wrappers


# memcached's suite adds `-o relaxed_privileges`, an option only its debug build knows (it
# turns off the seccomp privilege drop, which Debian's build does not have either): the
# memcached wrapper removes it.
DROP_RELAXED_PRIVILEGES = """\
i=0; n=$#
while [ "$i" -lt "$n" ]; do
  a=$1; shift; i=$((i + 1))
  if [ "$a" = -o ] && [ "$i" -lt "$n" ] && [ "$1" = relaxed_privileges ]; then
    shift; i=$((i + 1)); continue
  fi
  set -- "$@" "$a"
done"""


def write_wrapper(path, target, mode, rundir, lib=LIB, prelude=None):
    """A shell script that execs `target` (same pid, so the suite's kill/wait still work);
    under Oscar it exports LD_PRELOAD first."""
    lines = ["#!/bin/sh"]
    if prelude:
        lines.append(prelude)
    if mode == "oscar":
        lines += [
            "LD_PRELOAD=%s" % lib,
            ': "${OSCAR_REPORT_FILE:=%s/oscar-reports/%%p.txt}"' % rundir,
            ': "${OSCAR_STATS_FILE:=%s/oscar-stats/%%p.json}"' % rundir,
            "export LD_PRELOAD OSCAR_REPORT_FILE OSCAR_STATS_FILE",
        ]
    lines.append('exec %s "$@"' % target)
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)


def need_binary(path, package):
    if not Path(path).exists():
        raise Unavailable("%s is not installed (Debian package %s)" % (path, package))


def child_env(mode, preload_interpreters, lib=LIB, base=None):
    env = dict(os.environ if base is None else base)
    env.pop("LD_PRELOAD", None)
    env["LC_ALL"] = "C"
    env.pop("TERM", None)  # no colours in the redis suite's output
    if preload_interpreters and mode == "oscar":
        env["LD_PRELOAD"] = str(lib)
    return env


# -------------------------------------------------------------------------------------------
# Results


@dataclasses.dataclass
class SuiteRun:
    suite: str
    mode: str
    rundir: Path
    results: dict = dataclasses.field(default_factory=dict)   # key -> status
    details: dict = dataclasses.field(default_factory=dict)   # key -> failure text
    unit_seconds: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    oscar_reports: list = dataclasses.field(default_factory=list)   # (file, text)
    oscar_lines: list = dataclasses.field(default_factory=list)     # (file, line)
    stats_files: int = 0
    allocations: int = 0

    def counts(self):
        return collections.Counter(self.results.values())

    def summary(self):
        c = self.counts()
        return ("%s under %s: %d tests: %d ok, %d failed, %d skipped (%.0f s; %d oscar "
                "statistics files, %d allocations)"
                % (self.suite, self.mode, len(self.results), c["ok"], c["err"],
                   c["skip"] + c["ignore"], self.seconds, self.stats_files, self.allocations))

    def collect_oscar(self, roots, scan_dirs=()):
        """Reports and statistics that the wrappers sent to <root>/oscar-reports and
        <root>/oscar-stats; other `oscar:` lines (warnings) in the servers' logs."""
        for f in sorted(f for r in roots for f in (Path(r) / "oscar-reports").glob("*")):
            self.oscar_reports.append((str(f), f.read_text(errors="replace")))
        for f in sorted(f for r in roots for f in (Path(r) / "oscar-stats").glob("*.json")):
            self.stats_files += 1
            try:
                self.allocations += int(json.loads(f.read_text()).get("allocations", 0))
            except (ValueError, OSError):
                pass
        for d in scan_dirs:
            for f in Path(d).rglob("*"):
                if not f.is_file() or f.stat().st_size > 64 << 20:
                    continue
                try:
                    data = f.read_bytes()
                except OSError:
                    continue
                if b"oscar" not in data:
                    continue
                for line in data.decode("utf-8", "replace").splitlines():
                    if line.startswith("oscar:") and not MAPPING_LIMIT_WARNING.fullmatch(line):
                        self.oscar_lines.append((str(f), line))


def _add(run, key, status, detail=None):
    """Duplicate names (the same test name twice in a unit) get a #2, #3 suffix."""
    unit, name = key
    n = 1
    while (unit, name if n == 1 else "%s #%d" % (name, n)) in run.results:
        n += 1
    key = (unit, name if n == 1 else "%s #%d" % (name, n))
    run.results[key] = status
    if detail:
        run.details[key] = detail
    return key


def _norm(status):
    return "skip" if status == "ignore" else status


def compare(glibc, oscar, known=None):
    """Rows (key, glibc status, oscar status, known reason or None) for every test whose
    status differs. A test that ran in one run only ('absent' in the other) is not a row
    when it passed or was skipped: some tests loop until a condition holds (memcached's
    binary-extstore.t until an item is recached, maxconns.t until a connection is refused),
    so their number varies from run to run; a unit or file that stopped early has a failed
    'unit aborted' / 'file aborted' entry instead. absent_counts() counts them."""
    known = known or {}
    rows = []
    for key in sorted(set(glibc.results) | set(oscar.results)):
        g = _norm(glibc.results.get(key, "absent"))
        o = _norm(oscar.results.get(key, "absent"))
        if g == o or {g, o} <= {"absent", "ok", "skip"} and "absent" in (g, o):
            continue
        reason = known.get(key) or known.get((key[0], "*"))
        rows.append((key, g, o, reason))
    return rows


def absent_counts(glibc, oscar):
    """{unit: (tests only under glibc, tests only under Oscar)}, passed or skipped ones, of
    the units both ran (the CI test runs under glibc only the units that failed under Oscar)."""
    counts = collections.defaultdict(lambda: [0, 0])
    both = {k[0] for k in glibc.results} & {k[0] for k in oscar.results}
    for key in set(glibc.results) ^ set(oscar.results):
        if key[0] not in both:
            continue
        counts[key[0]][0 if key in glibc.results else 1] += 1
    return {k: tuple(v) for k, v in sorted(counts.items())}


# -------------------------------------------------------------------------------------------
# Parallel lanes


def run_lanes(items, jobs, work):
    """work(lane, item) for every item, `jobs` lanes in parallel, in order of items."""
    queue = list(items)
    lock = threading.Lock()
    errors = []

    def lane(i):
        while True:
            with lock:
                if not queue:
                    return
                item = queue.pop(0)
            try:
                work(i, item)
            except Exception as e:  # noqa: BLE001 - reported after the run
                errors.append((item, e))

    threads = [threading.Thread(target=lane, args=(i,)) for i in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("; ".join("%s: %r" % e for e in errors))


def run_logged(argv, cwd, env, log, timeout):
    """Run argv in its own process group, output to `log`; kill the group on timeout.
    Returns the exit status, None on timeout."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        # Servers or helpers the suite left behind (it kills its own on success).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if rc is None:
            proc.wait()
    return rc


# -------------------------------------------------------------------------------------------
# redis


REDIS_BINARIES = ["redis-server", "redis-cli", "redis-benchmark", "redis-check-aof",
                  "redis-check-rdb"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
REDIS_LINE = re.compile(r"^\[(ok|err|skip|ignore|exception)\]: (.*?)(?: \((\d+) ms\))?$")


def redis_units(srcdir):
    text = (srcdir / "tests" / "test_helper.tcl").read_text()
    m = re.search(r"set ::all_tests \{(.*?)\}", text, re.S)
    return [u for u in m.group(1).split() if u not in REDIS_EXCLUDED_UNITS]


def prepare_redis_lane(srcdir, rundir, mode, lib=LIB):
    shutil.rmtree(rundir, ignore_errors=True)
    (rundir / "src").mkdir(parents=True)
    shutil.copytree(srcdir / "tests", rundir / "tests", symlinks=True)
    (rundir / "tests" / "tmp").mkdir(exist_ok=True)
    for sub in ("oscar-reports", "oscar-stats", "logs"):
        (rundir / sub).mkdir()
    for b in REDIS_BINARIES:
        write_wrapper(rundir / "src" / b, "/usr/bin/" + b, mode, rundir, lib)


def parse_redis(text, unit, run):
    """[ok]/[err]/... lines of one unit's output into run.results."""
    lines = [ANSI.sub("", l) for l in text.splitlines()]
    done = False
    for i, line in enumerate(lines):
        m = REDIS_LINE.match(line)
        if m:
            status, name = m.group(1), m.group(2)
            if status == "err":
                name = re.sub(r" in tests/\S+$", "", name)
                detail = "\n".join(lines[i:i + 3])
                _add(run, (unit, name), "err", detail)
            elif status == "exception":
                _add(run, (unit, "unit aborted"), "err", "\n".join(lines[i:i + 30]))
            else:
                _add(run, (unit, name), status)
        elif re.match(r"^\[\d+/\d+ done\]: ", line):
            done = True
    return done


def run_redis(mode, units, jobs=2, preload_interpreters=False, cache=CACHE, lib=LIB,
              progress=None, extra_args=(), base_env=None):
    need_binary("/usr/bin/redis-server", "redis-server")
    need_binary("/usr/bin/redis-cli", "redis-tools")
    need_binary("/usr/bin/redis-benchmark", "redis-tools")
    tclsh = shutil.which("tclsh8.6") or shutil.which("tclsh")
    if not tclsh:
        raise Unavailable("tclsh is not installed (Debian package tcl)")
    srcdir = fetch_source("redis", cache)
    tag = mode + ("-preloaded" if preload_interpreters else "")
    run = SuiteRun("redis", tag, cache / "runs" / ("redis-" + tag))
    shutil.rmtree(run.rundir, ignore_errors=True)
    lanes = [run.rundir / ("lane%d" % i) for i in range(jobs)]
    for lane in lanes:
        prepare_redis_lane(srcdir, lane, mode, lib)
    env = child_env(mode, preload_interpreters, lib, base_env)
    skip = []
    for name in REDIS_SKIPPED_TESTS:
        skip += ["--skiptest", name]
    lock = threading.Lock()

    def work(i, unit):
        lane = lanes[i]
        log = lane / "logs" / (unit.replace("/", "_") + ".log")
        argv = [tclsh, "tests/test_helper.tcl", "--single", unit, "--clients", "1",
                "--dump-logs", "--dont-clean", "--timeout", "600",
                "--baseport", str(21111 + 1000 * i + (500 if mode == "oscar" else 0)
                                  + (250 if preload_interpreters else 0)),
                "--portcount", "200"] + skip + list(extra_args)
        start = time.monotonic()
        rc = run_logged(argv, lane, env, log, UNIT_TIMEOUT[mode])
        seconds = time.monotonic() - start
        text = log.read_text(errors="replace")
        with lock:
            done = parse_redis(text, unit, run)
            run.unit_seconds[unit] = seconds
            if rc is None:
                _add(run, (unit, "unit aborted"), "err",
                     "timed out after %ds\n%s" % (UNIT_TIMEOUT[mode], text[-3000:]))
            elif not done and not any(k[0] == unit and k[1] == "unit aborted"
                                      for k in run.results):
                _add(run, (unit, "unit aborted"), "err",
                     "exit status %s before the unit finished\n%s" % (rc, text[-3000:]))
            if progress:
                progress("redis %s %s: %.0f s, exit %s" % (tag, unit, seconds, rc))

    start = time.monotonic()
    run_lanes(units, jobs, work)
    run.seconds = time.monotonic() - start
    run.collect_oscar(lanes, [d for lane in lanes for d in (lane / "tests" / "tmp", lane / "logs")])
    return run


# -------------------------------------------------------------------------------------------
# memcached


TAP_LINE = re.compile(r"^(not ok|ok) (\d+)(?: -)?\s*(.*?)(?:\s+#\s*(skip|SKIP|Skip|TODO|todo)\b(.*))?$")
TAP_PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#\s*(?:skip|SKIP|Skip)\w*\s*(.*))?")


def memcached_files(srcdir):
    return sorted(p.name for p in (srcdir / "t").glob("*.t")
                  if p.name not in MEMCACHED_EXCLUDED_FILES)


def prepare_memcached(srcdir, rundir, mode, lib=LIB):
    shutil.rmtree(rundir, ignore_errors=True)
    rundir.mkdir(parents=True)
    shutil.copytree(srcdir / "t", rundir / "t", symlinks=True)
    (rundir / "doc").symlink_to(srcdir / "doc")  # line-lengths.t reads doc/protocol.txt
    for sub in ("oscar-reports", "oscar-stats", "logs"):
        (rundir / sub).mkdir()
    # The suite expects a debug build at ./memcached-debug (and ./memcached) and the timedrun
    # helper at ./timedrun; timedrun is built from the source package and runs under glibc.
    for name in ("memcached-debug", "memcached"):
        write_wrapper(rundir / name, "/usr/bin/memcached", mode, rundir, lib,
                      prelude=DROP_RELAXED_PRIVILEGES)
    timedrun = srcdir / "timedrun.oscar-build"
    if not timedrun.exists():
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise Unavailable("a C compiler is needed for memcached's timedrun (Debian gcc)")
        subprocess.run([cc, "-O1", "-o", str(timedrun) + ".tmp", str(srcdir / "timedrun.c")],
                       check=True)
        os.rename(str(timedrun) + ".tmp", timedrun)
    shutil.copy2(timedrun, rundir / "timedrun")


def parse_tap(text, fname, rc, run):
    planned = None
    seen = set()
    for line in text.splitlines():
        m = TAP_PLAN.match(line)
        if m and planned is None:
            planned = int(m.group(1))
            if planned == 0:
                _add(run, (fname, "all"), "skip", (m.group(2) or "").strip())
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        num = int(m.group(2))
        seen.add(num)
        directive = (m.group(4) or "").lower()
        if directive == "skip":
            status = "skip"
        elif directive == "todo":
            status = "ok"  # a TODO test's result does not count
        else:
            status = "ok" if m.group(1) == "ok" else "err"
        # Keyed by number: descriptions may hold random data (udp.t prints whole values).
        detail = m.group(3).strip()[:100]
        if status == "err":
            idx = text.find(line)
            detail = text[idx:idx + 1500]
        _add(run, (fname, "%d" % num), status, detail)
    missing = planned is not None and planned > 0 and len(seen) < planned
    if rc is None or planned is None or missing or (rc != 0 and not any(
            k[0] == fname and v == "err" for k, v in run.results.items())):
        why = ("timed out" if rc is None else "exit status %s, %d of %s planned tests ran"
               % (rc, len(seen), planned))
        _add(run, (fname, "file aborted"), "err", why + "\n" + text[-3000:])


def run_memcached(mode, files, jobs=2, preload_interpreters=False, cache=CACHE, lib=LIB,
                  progress=None, base_env=None):
    need_binary("/usr/bin/memcached", "memcached")
    perl = shutil.which("perl")
    if not perl:
        raise Unavailable("perl is not installed")
    srcdir = fetch_source("memcached", cache)
    tag = mode + ("-preloaded" if preload_interpreters else "")
    run = SuiteRun("memcached", tag, cache / "runs" / ("memcached-" + tag))
    prepare_memcached(srcdir, run.rundir, mode, lib)
    env = child_env(mode, preload_interpreters, lib, base_env)
    lock = threading.Lock()

    def work(i, fname):
        log = run.rundir / "logs" / (fname + ".log")
        start = time.monotonic()
        rc = run_logged([perl, "t/" + fname], run.rundir, env, log, FILE_TIMEOUT[mode])
        seconds = time.monotonic() - start
        with lock:
            parse_tap(log.read_text(errors="replace"), fname, rc, run)
            run.unit_seconds[fname] = seconds
            if progress:
                progress("memcached %s %s: %.0f s, exit %s" % (tag, fname, seconds, rc))

    start = time.monotonic()
    run_lanes(files, jobs, work)
    run.seconds = time.monotonic() - start
    run.collect_oscar([run.rundir], [run.rundir / "logs"])
    return run


# -------------------------------------------------------------------------------------------
# Command line


def report(glibc, oscar, known, out=sys.stdout):
    print(glibc.summary(), file=out)
    print(oscar.summary(), file=out)
    rows = compare(glibc, oscar, known)
    for unit, (g, o) in absent_counts(glibc, oscar).items():
        print("  %s: %d passed/skipped tests only under glibc, %d only under Oscar (loops)"
              % (unit, g, o), file=out)
    for key, g, o, reason in rows:
        print("  DIFF %s | %s: glibc %s, oscar %s%s"
              % (key[0], key[1], g, o, (" (known: %s)" % reason) if reason else ""), file=out)
        for run in (glibc, oscar):
            if key in run.details:
                print("    [%s] %s" % (run.mode, run.details[key][:1500].replace("\n", "\n    ")),
                      file=out)
    for f, text in oscar.oscar_reports:
        print("  OSCAR REPORT %s:\n%s" % (f, text[:4000]), file=out)
    for f, line in oscar.oscar_lines[:50]:
        print("  OSCAR LINE %s: %s" % (f, line), file=out)
    # Seconds per unit, slowest first (what the CI subset costs, and where).
    for unit in sorted(oscar.unit_seconds, key=lambda u: -oscar.unit_seconds[u]):
        print("  seconds %s: oscar %.0f, glibc %s" % (
            unit, oscar.unit_seconds[unit],
            "%.0f" % glibc.unit_seconds[unit] if unit in glibc.unit_seconds else "-"), file=out)
    glibc_fail = sorted(k for k, v in glibc.results.items() if v == "err")
    for key in glibc_fail:
        print("  glibc fails too: %s | %s" % key, file=out)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=["redis", "memcached"], action="append")
    ap.add_argument("--mode", choices=["glibc", "oscar"], action="append")
    ap.add_argument("--full", action="store_true", help="every unit/file, not the CI subset")
    ap.add_argument("--only", action="append", help="one unit or t/ file (repeatable)")
    ap.add_argument("--preload-interpreters", action="store_true",
                    help="also preload tclsh/perl under Oscar")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    suites = args.suite or ["redis", "memcached"]
    modes = args.mode or ["glibc", "oscar"]
    progress = lambda msg: print(msg, flush=True)
    runs = {}
    for suite in suites:
        if suite == "redis":
            src = fetch_source("redis")
            items = args.only or (redis_units(src) if args.full else REDIS_QUICK)
        else:
            src = fetch_source("memcached")
            items = args.only or (memcached_files(src) if args.full else MEMCACHED_QUICK)
        for mode in modes:
            fn = run_redis if suite == "redis" else run_memcached
            runs[(suite, mode)] = fn(mode, items, jobs=args.jobs,
                                     preload_interpreters=args.preload_interpreters and mode == "oscar",
                                     progress=progress)
            print(runs[(suite, mode)].summary(), flush=True)
    for suite in suites:
        if (suite, "glibc") in runs and (suite, "oscar") in runs:
            known = REDIS_KNOWN_DIFFERENCES if suite == "redis" else MEMCACHED_KNOWN_DIFFERENCES
            print("=== %s" % suite)
            report(runs[(suite, "glibc")], runs[(suite, "oscar")], known)
    if args.json:
        data = {"%s-%s" % k: {"results": {"%s | %s" % kk: v for kk, v in r.results.items()},
                              "unit_seconds": r.unit_seconds, "seconds": r.seconds,
                              "stats_files": r.stats_files, "allocations": r.allocations,
                              "oscar_reports": r.oscar_reports, "oscar_lines": r.oscar_lines,
                              "details": {"%s | %s" % kk: v for kk, v in r.details.items()}}
                for k, r in runs.items()}
        Path(args.json).write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
