#!/usr/bin/env python3
"""Oscar's benchmark suite: every workload under every allocator, side by side.

    python3 bench/run.py [--smoke] [--allocators a,b] [--workloads x,y] [--runs N]
                         [--out DIR] [--install] [--ablation] [--allocator name=/lib.so[:K=V,..]]
    python3 bench/run.py --suite protect [--quick]     (issue 17: protect mode side by side)

Runs are interleaved (round 1: every workload under every allocator, then round 2, ...), so
drift on a noisy machine hits all allocators alike; each cell reports the median of its runs.
Writes results.csv, results.md, time_ratio.png and memory_ratio.png (and throughput_ratio.png
when servers ran: bench/servers.py) into --out; a suite with scanstress also pauses.csv and
pause_vs_live.png (bench/pauses.py).
See docs/benchmarks.md.
"""

import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import allocators as alloc_mod  # noqa: E402
import measure  # noqa: E402
import pauses  # noqa: E402
import report  # noqa: E402
import servers  # noqa: E402
import workloads as wl_mod  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def log(msg):
    print(msg, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="tiny sizes, 1 run (the test suite's mode)")
    p.add_argument("--allocators", help="comma-separated names from the table (default: all)")
    p.add_argument("--allocator", action="append", default=[], metavar="NAME=LIB[:K=V,...]",
                   help="add an outside library by path (repeatable)")
    p.add_argument("--workloads", help="comma-separated workload names (default: all)")
    p.add_argument("--runs", type=int, help="runs per cell (default 5, smoke 1)")
    p.add_argument("--out", help="output directory (default bench/results/<timestamp>)")
    p.add_argument("--install", action="store_true",
                   help="apt-get install missing allocators and programs")
    p.add_argument("--ablation", action="store_true",
                   help="Oscar with one optimisation at a time instead of the peer allocators")
    p.add_argument("--build-dir", help="Oscar build directory (default $OSCAR_BUILD_DIR or <repo>/build)")
    p.add_argument("--timeout", type=float, help="seconds before a run is killed (default 20, smoke 60)")
    p.add_argument("--cell-budget", type=float, default=20.0,
                   help="stop repeating a cell once one more run would take its runs past this "
                        "many seconds (default 20; it still gets at least one run)")
    p.add_argument("--budget", type=float, default=27.0,
                   help="minutes for the whole suite (default 27; 0: none): after the third "
                        "round, a round that would not finish in time is not started, and the "
                        "tables say how many runs each cell got")
    p.add_argument("--suite", choices=sorted(wl_mod.SUITES),
                   help="a named comparison: its workloads and allocators (bench/workloads.py "
                        "SUITES); --workloads and --allocators still narrow it")
    p.add_argument("--quick", action="store_true",
                   help="one run per cell and a shorter pause sweep (full sizes)")
    p.add_argument("--syscalls", choices=["auto", "on", "off"], default="auto",
                   help="count the other allocators' memory system calls with strace, one extra "
                        "untimed run per cell (auto: with --suite)")
    p.add_argument("--pauses", choices=["auto", "on", "off"], default="auto",
                   help="scanstress at several live heap sizes under the allocators that report "
                        "their stops of the world (auto: when the suite has scanstress)")
    p.add_argument("--list", action="store_true", help="list allocators and workloads, then exit")
    return p.parse_args(argv)


def programs_dir(build):
    """<build>/bench/programs, or a standalone build of bench/ when the main build has none."""
    main = os.path.join(build, "bench", "programs")
    if os.path.isdir(main) and os.listdir(main):
        return main
    standalone = os.path.join(build, "bench-standalone")
    log("note: %s is missing; building bench/ alone into %s" % (main, standalone))
    for cmd in (["cmake", "-S", HERE, "-B", standalone, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                ["cmake", "--build", standalone, "-j2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            log("note: bench build failed: %s" % (proc.stdout + proc.stderr)[-500:])
            break
    return os.path.join(standalone, "programs")


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("OSCAR_")}
    env["LC_ALL"] = "C"
    env.update(extra)
    return env


def machine_description():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            maxmap = f.read().strip()
    except OSError:
        maxmap = "?"
    try:
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    return ("%d CPUs (%s), Linux %s, vm.max_map_count=%s, glibc %s, oscar commit %s"
            % (os.cpu_count(), cpu, platform.release(), maxmap, platform.libc_ver()[1], commit))


def aggregate(workload, allocator, results, baseline, kind=None):
    ok = [r for r in results if r.status == "ok"]
    row = {"workload": workload, "allocator": allocator.name, "runs": len(results), "note": "",
           "kind": kind}
    failed = [r for r in results if r.status != "ok"]
    if failed:
        row["status"] = failed[0].status
        tail = failed[0].stderr_tail.strip()
        row["note"] = tail.splitlines()[-1][:160] if tail else ""
    elif baseline and baseline.get("sha") and ok[0].stdout_sha != baseline["sha"]:
        row["status"] = "wrong output"
    else:
        row["status"] = "ok"
    if not ok:
        return row
    med = lambda xs: statistics.median(xs)  # noqa: E731
    row["time_s"] = med([r.seconds for r in ok])
    row["mem_mib"] = med([r.peak_bytes for r in ok]) / 2**20
    row["rss_mib"] = med([r.rss_bytes for r in ok]) / 2**20
    row["faults"] = med([r.faults for r in ok])
    m = re.search(r"^allocations (\d+)$", ok[0].stdout_head, re.M)
    counters = ok[-1].oscar
    # realloc is an allocation call too (Oscar counts it apart from malloc/new)
    oscar_calls = counters.get("allocations", 0) + counters.get("reallocs", 0)
    row["allocations"] = oscar_calls or (int(m.group(1)) if m else None)
    if allocator.is_oscar and oscar_calls:
        n = oscar_calls
        row["syscalls_per_1k_allocs"] = 1000.0 * counters.get("syscalls_total", 0) / n
        row["peak_mappings_per_1k_allocs"] = 1000.0 * counters.get("peak_mappings_estimate", 0) / n
        row["peak_canonical_mib"] = counters.get("peak_canonical_bytes", 0) / 2**20
        if counters.get("mapping_limit_degraded"):
            row["note"] = (row["note"] + " degraded near vm.max_map_count").strip()
    elif allocator.is_oscar and not counters:
        # e.g. a server that rewrites its environment for its process title (redis, nginx)
        # before Oscar reads OSCAR_STATS_FILE at exit
        row["note"] = (row["note"] + " no OSCAR_STATS_FILE written").strip()
    # Stops of the world (Oscar's protect mode, MarkUs's log): medians over the runs; blank
    # when the allocator reports none.
    for key in SCAN_KEYS:
        vals = [r.oscar[key] for r in ok if key in r.oscar]
        if vals:
            row[key] = med(vals)
    if row.get("scan_rounds") and row.get("scan_bytes"):
        row["scan_mib_per_round"] = row["scan_bytes"] / row["scan_rounds"] / 2**20
        if row.get("scan_us"):  # the marking rate: bytes read per second of marking
            row["scan_gib_per_s"] = row["scan_bytes"] / 2**30 / (row["scan_us"] / 1e6)
    if kind == "server":
        # The figure is throughput (higher is better); the run time is fixed by the load
        # tool's duration, so it gets no time ratio.
        row["throughput"] = med([r.throughput for r in ok])
        if allocator.name == "glibc":
            row["throughput_ratio"] = 1.0
        elif baseline and baseline.get("throughput"):
            row["throughput_ratio"] = row["throughput"] / baseline["throughput"]
        p99 = [r.p99_ms for r in ok if r.p99_ms is not None]
        if p99:
            row["p99_ms"] = med(p99)
            if allocator.name == "glibc":
                row["p99_ratio"] = 1.0
            elif baseline and baseline.get("p99_ms"):
                row["p99_ratio"] = row["p99_ms"] / baseline["p99_ms"]
    if allocator.name == "glibc":
        if kind != "server":
            row["time_ratio"] = 1.0
        row["mem_ratio"] = 1.0  # by definition, even if a sample missed
    else:
        if baseline and baseline.get("time_s") and kind != "server":
            row["time_ratio"] = row["time_s"] / baseline["time_s"]
        if baseline and baseline.get("mem_mib"):  # 0 when a run ended before its first sample
            row["mem_ratio"] = row["mem_mib"] / baseline["mem_mib"]
    return row


SCAN_KEYS = ["scan_rounds", "scan_skipped", "scan_pause_us_median", "scan_pause_us_max",
             "scan_bytes", "scan_us", "scan_still_referenced", "peak_quarantined_bytes"]


def count_peer_syscalls(rows, workloads, commands, ready, work, timeout):
    """Peers keep no system-call counter: one more run of each of their cells under strace
    (untimed) counts its memory-management calls; per 1000 allocations of the workload, as
    the program prints them or as an Oscar cell of the same workload counted them."""
    by_cell = {(r["workload"], r["allocator"]): r for r in rows}
    for w in workloads:
        if w.kind == "server":
            continue
        allocs = [r.get("allocations") for r in rows
                  if r["workload"] == w.name and r.get("allocations")]
        oscar_allocs = [by_cell[(w.name, a.name)].get("allocations") for a in ready
                        if a.is_oscar and (w.name, a.name) in by_cell]
        n = next((x for x in oscar_allocs if x), None) or (allocs[0] if allocs else None)
        if not n:
            continue
        cmd = commands[w.name]
        for a in ready:
            row = by_cell.get((w.name, a.name))
            if a.is_oscar or row is None or row["status"] != "ok":
                continue
            env = clean_env(cmd.env)
            env.update(a.env)
            calls = measure.count_syscalls(cmd.argv, env, a.preload,
                                           max(60.0, 20 * row["time_s"]),
                                           stdin=cmd.stdin, cwd=cmd.cwd or work)
            if calls is not None:
                row["syscalls_per_1k_allocs"] = 1000.0 * calls / n
                row["syscalls_source"] = "strace %memory"
            log("syscalls: %-12s %-16s %s" % (w.name, a.name,
                                              "%d memory calls" % calls if calls is not None
                                              else "not counted (strace missing or run failed)"))


def probe_settings(ready):
    """{allocator name: status} for the Oscar configurations whose settings the library
    refuses (e.g. OSCAR_MODE=protect before protect mode exists): it would run its default
    mode instead, so each of their cells is recorded as failed without being run."""
    rejected = {}
    true = shutil.which("true") or "/bin/true"
    for a in ready:
        if not a.is_oscar or not a.env:
            continue
        env = clean_env(a.env)
        env["LD_PRELOAD"] = a.preload
        proc = subprocess.run([true], env=env, capture_output=True, text=True, errors="replace")
        status = measure.rejected_setting(proc.stderr)
        if status:
            rejected[a.name] = status
            log("%s: %s: every cell is recorded as failed, not run" % (a.name, status))
    return rejected


def main(argv=None):
    args = parse_args(argv)
    suite = wl_mod.SUITES.get(args.suite) if args.suite else None
    size = "smoke" if args.smoke else "full"
    runs = args.runs or (1 if args.smoke or args.quick else 5)
    # a suite's strict-mode cells run ~60x glibc's second or two
    timeout = args.timeout or (60.0 if args.smoke else 300.0 if suite else 20.0)
    build = os.path.abspath(args.build_dir or os.environ.get("OSCAR_BUILD_DIR")
                            or os.path.join(REPO, "build"))
    oscar_lib = os.path.join(build, "src", "liboscar.so")

    table = alloc_mod.ABLATION if args.ablation else alloc_mod.ALLOCATORS
    if args.allocators or suite:
        names = [n.strip() for n in (args.allocators or ",".join(suite["allocators"])).split(",")
                 if n.strip()]
        by_name = {a.name: a for a in alloc_mod.ALLOCATORS + alloc_mod.ABLATION + alloc_mod.EXTRA}
        chosen = []
        for n in names:
            if n in by_name:
                chosen.append(by_name[n])
            else:
                log("skip: %s: no such allocator in bench/allocators.py (use --allocator %s=/path/lib.so)"
                    % (n, n))
    else:
        chosen = list(table)
    for spec in args.allocator:
        try:
            chosen.append(alloc_mod.parse_spec(spec))
        except ValueError as exc:
            log("skip: %s: %s" % (spec, exc))
    if not any(a.name == "glibc" for a in chosen):
        chosen.insert(0, alloc_mod.ALLOCATORS[0])  # ratios need the baseline
    # glibc first in every round, so each cell can be checked against its output
    chosen.sort(key=lambda a: a.name != "glibc")

    if args.list:
        for a in alloc_mod.ALLOCATORS + alloc_mod.ABLATION + alloc_mod.EXTRA:
            log("allocator %-16s %s %s" % (a.name, a.lib or "-", a.env or ""))
        for w in wl_mod.WORKLOADS:
            log("workload  %-16s %s" % (w.name, w.description))
        return 0

    ready = alloc_mod.resolve(chosen, oscar_lib, args.install, log)
    rejected = probe_settings(ready)

    wanted = ([n.strip() for n in args.workloads.split(",")] if args.workloads
              else list(suite["workloads"]) if suite
              else [w.name for w in wl_mod.WORKLOADS if w.in_default])
    known = {w.name: w for w in wl_mod.WORKLOADS}
    if args.install:
        pkgs = sorted({p for n in wanted if n in known for p in wl_mod.missing_requirements(known[n])})
        alloc_mod.apt_install(pkgs, log)
        if "speedtest1" in wanted and wl_mod._speedtest1_missing(wl_mod.Context("", "", build)):
            alloc_mod.apt_install(["libsqlite3-dev", "dpkg-dev"], log)
            proc = subprocess.run(["sh", os.path.join(HERE, "build_speedtest1.sh"),
                                   os.path.dirname(wl_mod.speedtest1_path(build))],
                                  capture_output=True, text=True)
            log("install: speedtest1: " + (proc.stdout + proc.stderr).strip()[-300:])
    progs = programs_dir(build)
    probe = wl_mod.Context(progs, "", build)
    workloads = []
    for n in wanted:
        w = known.get(n)
        if w is None:
            log("skip: %s: no such workload in bench/workloads.py" % n)
        elif wl_mod.missing_requirements(w):
            log("skip: %s: not installed (Debian package %s; rerun with --install)"
                % (n, ", ".join(wl_mod.missing_requirements(w))))
        elif w.missing and w.missing(probe):
            log("skip: %s: %s" % (n, w.missing(probe)))
        elif w.kind == "micro" and not os.path.exists(w.make(probe, w.sizes["smoke"]).argv[0]):
            log("skip: %s: benchmark program not built in %s" % (n, progs))
        else:
            workloads.append(w)

    out = os.path.abspath(args.out or os.path.join(
        HERE, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S")))
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="oscar-bench-work-")
    ctx = wl_mod.Context(progs, work, build)
    commands = {w.name: w.make(ctx, w.sizes[size]) for w in workloads}  # generates the inputs

    log("bench: %d workloads x %d allocators x %d runs (%s size), output in %s"
        % (len(workloads), len(ready), runs, size, out))
    results = {}                  # (workload, allocator) -> [RunResult]
    stopped = set()               # cells that failed or used up their time budget
    started = time.monotonic()
    round_s = 0.0
    done_rounds = 0
    for rnd in range(runs):
        # The suite's time budget: three rounds always; a later one only if a round as long as
        # the last still ends in time (a median of 3 beats a suite nobody waits for).
        spent = time.monotonic() - started
        if rnd >= 3 and args.budget > 0 and spent + round_s > args.budget * 60:
            log("bench: stopping after %d rounds: round %d would end past the %.0f-minute budget "
                "(%.0f s spent, last round %.0f s; --budget 0 for no limit)"
                % (rnd, rnd + 1, args.budget, spent, round_s))
            break
        round_started = time.monotonic()
        for w in workloads:
            cmd = commands[w.name]
            for a in ready:
                cell = (w.name, a.name)
                if cell in stopped:
                    continue
                if a.name in rejected:
                    results[cell] = [measure.RunResult(
                        status=rejected[a.name], seconds=0.0, peak_bytes=0, rss_bytes=0,
                        faults=0, stdout_sha="", stdout_head="", stderr_tail=rejected[a.name],
                        oscar={})]
                    stopped.add(cell)
                    continue
                if w.kind == "server":
                    # the server under the allocator, the load tool (clean_env({})) without it
                    env = clean_env({})
                    env.update(a.env)
                    if a.preload:
                        env["LD_PRELOAD"] = a.preload
                    r = servers.run(cmd, env, clean_env({}), timeout, oscar_stats=a.is_oscar)
                else:
                    env = clean_env(cmd.env)
                    env.update(a.env)
                    if a.preload:
                        env["LD_PRELOAD"] = a.preload
                    r = measure.run(cmd.argv, env, timeout, stdin=cmd.stdin, cwd=cmd.cwd or work,
                                    oscar_stats=a.is_oscar, digest=cmd.digest)
                results.setdefault(cell, []).append(r)
                log("[%d/%d] %-9s %-16s %-14s %8.3f s %9.1f MiB%s"
                    % (rnd + 1, runs, w.name, a.name, r.status, r.seconds, r.peak_bytes / 2**20,
                       " %10.0f req/s" % r.throughput if r.throughput is not None else ""))
                # A cell stops when a run failed, or when one more run as long as this one
                # would take its runs past the cell budget (servers run for a fixed time
                # whatever the allocator: they get every round).
                over = sum(x.seconds for x in results[cell]) + r.seconds > args.cell_budget
                if r.status != "ok" or (over and w.kind != "server"):
                    stopped.add(cell)
        round_s = time.monotonic() - round_started
        done_rounds = rnd + 1

    rows = []
    for w in workloads:
        base_runs = [r for r in results.get((w.name, "glibc"), []) if r.status == "ok"]
        baseline = None
        if base_runs:
            baseline = {"sha": base_runs[0].stdout_sha,
                        "time_s": statistics.median(r.seconds for r in base_runs),
                        "mem_mib": statistics.median(r.peak_bytes for r in base_runs) / 2**20}
            if w.kind == "server":
                baseline["throughput"] = statistics.median(r.throughput for r in base_runs)
                p99 = [r.p99_ms for r in base_runs if r.p99_ms is not None]
                baseline["p99_ms"] = statistics.median(p99) if p99 else None
        for a in ready:
            if (w.name, a.name) in results:
                rows.append(aggregate(w.name, a, results[(w.name, a.name)], baseline, w.kind))

    if args.syscalls == "on" or (args.syscalls == "auto" and suite):
        count_peer_syscalls(rows, workloads, commands, ready, work, timeout)

    sweep = None
    if args.pauses == "on" or (args.pauses == "auto" and any(w.name == "scanstress" for w in workloads)):
        sweep = pauses.sweep(progs, ready, clean_env, timeout, rejected, quick=args.quick or args.smoke,
                             smoke=args.smoke, log=log)

    elapsed = time.monotonic() - started
    meta = ("Command: `python3 bench/run.py %s`. "
            "Machine: %s. Date: %s. Size: %s, %d round(s): up to that many runs per cell (the CSV's runs column), interleaved, median; "
            "suite took %.0f s." % (" ".join(argv if argv is not None else sys.argv[1:]),
                                     machine_description(),
                                     datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                                     size, done_rounds, elapsed))
    names = [a.name for a in ready]
    wnames = [w.name for w in workloads]
    report.write_csv(rows, os.path.join(out, "results.csv"))
    text = report.markdown(rows, names, wnames, meta)
    if sweep:
        pauses.write_csv(sweep, os.path.join(out, "pauses.csv"))
        text += "\n" + pauses.markdown(sweep)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text)
    try:
        report.plots(rows, names, wnames, out)
        if sweep:
            pauses.plot(sweep, os.path.join(out, "pause_vs_live.png"))
    except ImportError:
        log("skip: plots: matplotlib is not installed (Debian package python3-matplotlib)")
    log("bench: done in %.0f s: %s" % (elapsed, ", ".join(
        os.path.join(out, f) for f in sorted(os.listdir(out)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
