#!/usr/bin/env python3
"""Oscar's debugging modes next to the debugging tools users already know (issue 20, item 9).

    python3 bench/debug_peers.py [--quick | --smoke] [--timeout S] [--runs N] [--out DIR]
                                 [--tools a,b] [--workloads x,y] [--no-reports] [--build-dir B]

Two parts, both written into --out (default bench/results/debug-peers-<timestamp>/):

1. Time and memory: a few of the benchmark programs (<build>/bench/programs) under glibc,
   Oscar strict, Oscar fast, Valgrind memcheck, Electric Fence (EF_PROTECT_FREE=1) and
   AddressSanitizer (the program's source rebuilt with -fsanitize=address -O2 into
   <build>/debug-peers/). Runs are interleaved (round 1 runs every cell once, then round 2,
   ...), each cell is the median of its runs (3; --quick and --smoke: 1), and a run that
   crashes, exits non-zero, times out or prints other output than glibc is recorded with its
   reason and not repeated. Memory is bench/measure.py's formula (docs/benchmarks.md,
   "Memory"), with the naive peak RSS (VmHWM) beside it. results.csv, results.md.
2. Reports: the same use-after-free (examples/uaf_demo.c, the README's demo, built -g -O0)
   under each tool; each tool's stderr goes to reports/<tool>.txt and all of them to
   reports.md. Electric Fence prints no report, only SIGSEGV: with gdb installed, gdb's
   backtrace at the fault is shown as what a user of it would do next.

A tool that is missing is one line, `skip: <tool>: <reason>`; as root, valgrind and
electric-fence are installed with apt-get first. docs/debugging-peers.md has the figures.
"""

import argparse
import csv
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import measure  # noqa: E402
import run as bench_run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
UAF_SOURCE = os.path.join(REPO, "examples", "uaf_demo.c")
EFENCE = "libefence.so.0"
# The same compiler flags as bench/CMakeLists.txt, so the ASan build differs only by the
# sanitizer.
BENCH_FLAGS = ["-O2", "-g", "-fno-builtin", "-Wall", "-pthread"]

# (name, program, {"smoke": args, "full": args}, what it does). Full sizes keep Oscar strict
# at about 5-20 s a run and Valgrind under 25 s on 2 cores, so three rounds fit in ~15 min.
WORKLOADS = [
    ("churn", "churn", {"smoke": [20000], "full": [1000000]},
     "1 thread replacing objects of 16-512 B in a table of 10000"),
    ("lifetimes", "lifetimes", {"smoke": [200, 4000], "full": [30000, 4000]},
     "4000 long-lived objects replaced slowly, bursts of 32 temporaries"),
    ("stl", "stl", {"smoke": [1], "full": [40]},
     "std::map/unordered_map/list/vector of strings and vectors (C++)"),
    ("realloc", "realloc_growth", {"smoke": [10], "full": [500]},
     "buffers grown to 4-64 KiB by 1-64 B realloc steps"),
    ("bigobj", "bigobj", {"smoke": [10], "full": [1000]},
     "objects of 64 KiB-4 MiB, every page touched, 8 alive"),
    # Debian's own binaries (bench/workloads.py builds their inputs): a program that computes
    # more than it allocates, where Valgrind's instrumentation of every instruction shows. There
    # is no ASan build of them (it would need their sources rebuilt): that cell says so.
    ("sqlite", "@sqlite", {"smoke": 100, "full": 3000},
     "sqlite3 (:memory:, lookaside off) running generated inserts/indexes/selects (rows)"),
    ("xz", "@xz", {"smoke": 32, "full": 512}, "xz -6 -T1 compressing generated text (KiB)"),
]

TOOLS = ["glibc", "oscar-strict", "oscar-fast", "valgrind", "electric-fence", "asan"]
TOOL_NOTES = {
    "glibc": "no preload: the baseline",
    "oscar-strict": "LD_PRELOAD=liboscar.so OSCAR_MODE=strict",
    "oscar-fast": "LD_PRELOAD=liboscar.so OSCAR_MODE=fast",
    "valgrind": "valgrind --tool=memcheck -q --error-exitcode=99",
    "electric-fence": "LD_PRELOAD=libefence.so.0 EF_PROTECT_FREE=1",
    "asan": "rebuilt with gcc/g++ -fsanitize=address -O2 -g -fno-builtin",
}


def log(msg):
    print(msg, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one run per cell (full sizes)")
    p.add_argument("--smoke", action="store_true",
                   help="tiny sizes, one run per cell, short timeout (the test's mode, < 60 s)")
    p.add_argument("--runs", type=int, help="runs per cell (default 3; --quick, --smoke: 1)")
    p.add_argument("--timeout", type=float,
                   help="seconds before one run is killed (default 120; --smoke 20)")
    p.add_argument("--tools", help="comma-separated, from: " + ",".join(TOOLS))
    p.add_argument("--workloads", help="comma-separated, from: " + ",".join(w[0] for w in WORKLOADS))
    p.add_argument("--no-reports", action="store_true", help="skip part 2 (the reports)")
    p.add_argument("--reports-only", action="store_true", help="skip part 1 (the timings)")
    p.add_argument("--no-install", action="store_true",
                   help="never apt-get install valgrind or electric-fence")
    p.add_argument("--out", help="output directory (default bench/results/debug-peers-<timestamp>)")
    p.add_argument("--build-dir", help="Oscar build directory (default $OSCAR_BUILD_DIR or <repo>/build)")
    return p.parse_args(argv)


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith(("OSCAR_", "EF_", "ASAN_"))}
    env["LC_ALL"] = "C"
    env.update(extra or {})
    return env


def efence_path():
    for d in ("/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib"):
        if os.path.exists(os.path.join(d, EFENCE)):
            return os.path.join(d, EFENCE)
    return None


def install_missing(no_install):
    """apt-get install valgrind / electric-fence when missing and we are root."""
    wanted = []
    if not shutil.which("valgrind"):
        wanted.append("valgrind")
    if not efence_path():
        wanted.append("electric-fence")
    if not wanted or no_install or os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    log("installing: %s" % " ".join(wanted))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    proc = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + wanted,
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:  # the package lists may be missing on a fresh machine
        subprocess.run(["apt-get", "update"], capture_output=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + wanted,
                       capture_output=True, env=env)


def build_asan(source, out_dir, extra=(), suffix="-asan"):
    """Compile `source` with AddressSanitizer into out_dir/<name><suffix> (cached by mtime);
    (path, None) or (None, reason)."""
    name = os.path.splitext(os.path.basename(source))[0]
    exe = os.path.join(out_dir, name + suffix)
    if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(source):
        return exe, None
    cc = "g++" if source.endswith(".cc") else "gcc"
    if not shutil.which(cc):
        return None, "%s not found" % cc
    std = ["-std=c++17"] if cc == "g++" else ["-std=gnu11"]
    cmd = [cc] + std + list(extra) + ["-fsanitize=address", "-fno-omit-frame-pointer",
                                      "-I", os.path.dirname(source), source, "-o", exe]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, "%s -fsanitize=address failed: %s" % (cc, (proc.stderr.strip().splitlines()
                                                                 or ["?"])[-1][:160])
    return exe, None


class Tools:
    """What each tool needs to run a command, or why it cannot run here."""

    def __init__(self, build, asan_dir, wanted):
        self.build, self.asan_dir = build, asan_dir
        self.lib = os.path.join(build, "src", "liboscar.so")
        self.efence = efence_path()
        self.skip = {}
        for tool in wanted:
            why = None
            if tool.startswith("oscar") and not os.path.exists(self.lib):
                why = "%s is not built" % self.lib
            elif tool == "valgrind" and not shutil.which("valgrind"):
                why = "valgrind is not installed (apt-get install valgrind)"
            elif tool == "electric-fence" and not self.efence:
                why = "%s is not installed (apt-get install electric-fence)" % EFENCE
            elif tool == "asan" and not shutil.which("gcc"):
                why = "gcc is not installed"
            if why:
                self.skip[tool] = why
        self.tools = [t for t in wanted if t not in self.skip]

    def command(self, tool, exe, source, args):
        """(argv, env) for one run, or (None, reason)."""
        argv = [exe] + [str(a) for a in args]
        if tool == "glibc":
            return argv, clean_env()
        if tool == "oscar-strict":
            return argv, clean_env({"LD_PRELOAD": self.lib, "OSCAR_MODE": "strict"})
        if tool == "oscar-fast":
            return argv, clean_env({"LD_PRELOAD": self.lib, "OSCAR_MODE": "fast"})
        if tool == "valgrind":
            return ["valgrind", "--tool=memcheck", "-q", "--error-exitcode=99"] + argv, clean_env()
        if tool == "electric-fence":
            return argv, clean_env({"LD_PRELOAD": self.efence, "EF_PROTECT_FREE": "1",
                                    "EF_DISABLE_BANNER": "1"})
        if tool == "asan":
            asan_exe, why = build_asan(source, self.asan_dir, BENCH_FLAGS)
            if not asan_exe:
                return None, why
            return [asan_exe] + argv[1:], clean_env()
        raise ValueError(tool)


def real_commands(name, which, size, tools, workdir, commands, dead):
    """A Debian program from bench/workloads.py's table, under every tool but ASan."""
    import workloads as wl_mod
    ctx = wl_mod.Context(programs_dir="", workdir=workdir, build_dir=tools.build)
    cmd = {"sqlite": wl_mod._sqlite, "xz": wl_mod._xz}[which](ctx, size)
    if not shutil.which(cmd.argv[0]):
        for tool in tools.tools:
            dead[(name, tool)] = "skip: %s is not installed" % cmd.argv[0]
        log("skip: %s: %s is not installed" % (name, cmd.argv[0]))
        return
    exe = shutil.which(cmd.argv[0])
    for tool in tools.tools:
        if tool == "asan":
            dead[(name, tool)] = "n/a: needs the program rebuilt from source"
            continue
        argv, env = tools.command(tool, exe, None, cmd.argv[1:])
        env.update(cmd.env)
        digest = round_floats if which == "sqlite" else None
        commands[(name, tool)] = (argv, env, cmd.stdin, digest)


def round_floats(out):
    """sqlite3 prints averages with 15 significant digits; under Valgrind, whose x87 unit
    computes long double with 64-bit precision only, the last digit can differ: compare 10."""
    return re.sub(rb"\d+\.\d+", lambda m: b"%.10g" % float(m.group()), out)


def failure_note(result):
    tail = [line for line in result.stderr_tail.strip().splitlines() if line.strip()]
    return tail[-1].strip()[:120] if tail else ""


def run_timings(args, tools, programs, sizes_key, runs, timeout):
    workloads = [w for w in WORKLOADS if not args.workloads or w[0] in args.workloads.split(",")]
    results = {}   # (workload, tool) -> [RunResult]
    dead = {}      # (workload, tool) -> status text (not repeated)
    baseline_sha = {}
    commands = {}
    workdir = os.path.join(tools.asan_dir, "inputs")  # generated inputs, cached
    os.makedirs(workdir, exist_ok=True)
    for name, program, sizes, _ in workloads:
        if program.startswith("@"):
            real_commands(name, program[1:], sizes[sizes_key], tools, workdir, commands, dead)
            continue
        exe = os.path.join(programs, program)
        source = None
        for ext in (".c", ".cc"):
            if os.path.exists(os.path.join(HERE, "programs", program + ext)):
                source = os.path.join(HERE, "programs", program + ext)
        if not os.path.exists(exe):
            for tool in tools.tools:
                dead[(name, tool)] = "skip: %s not built" % exe
            continue
        for tool in tools.tools:
            argv, env = tools.command(tool, exe, source, sizes[sizes_key])
            if argv is None:
                dead[(name, tool)] = "skip: " + env
                log("skip: %s under %s: %s" % (name, tool, env))
            else:
                commands[(name, tool)] = (argv, env)
    for rnd in range(runs):
        for name, _, _, _ in workloads:
            for tool in tools.tools:
                key = (name, tool)
                if key in dead or key not in commands:
                    continue
                argv, env = commands[key][:2]
                stdin, digest = commands[key][2:] if len(commands[key]) > 2 else (None, None)
                r = measure.run(argv, env, timeout, stdin=stdin, digest=digest)
                status = r.status
                if status == "ok":
                    if tool == "glibc":
                        baseline_sha.setdefault(name, r.stdout_sha)
                    elif name in baseline_sha and r.stdout_sha != baseline_sha[name]:
                        status = "wrong output"
                if status != "ok":
                    note = failure_note(r)
                    dead[key] = status + (" after %.0f s" % r.seconds) + (": " + note if note else "")
                    log("round %d: %-10s %-15s %s" % (rnd + 1, name, tool, dead[key]))
                    continue
                results.setdefault(key, []).append(r)
                log("round %d: %-10s %-15s %7.2f s  %7.1f MiB" % (rnd + 1, name, tool, r.seconds,
                                                                  r.peak_bytes / 2**20))
    rows = []
    for name, program, sizes, desc in workloads:
        base = results.get((name, "glibc"))
        base_t = statistics.median(x.seconds for x in base) if base else None
        base_m = statistics.median(x.peak_bytes for x in base) / 2**20 if base else None
        for tool in tools.tools:
            key = (name, tool)
            size = sizes[sizes_key]
            row = {"workload": name, "tool": tool,
                   "args": " ".join(map(str, size if isinstance(size, list) else [size])),
                   "runs": len(results.get(key, [])), "status": "ok", "note": ""}
            if key in dead:
                row["status"], _, row["note"] = dead[key].partition(": ")
            ok = results.get(key)
            if ok:
                row["time_s"] = statistics.median(x.seconds for x in ok)
                row["mem_mib"] = statistics.median(x.peak_bytes for x in ok) / 2**20
                row["rss_mib"] = statistics.median(x.rss_bytes for x in ok) / 2**20
                if base_t:
                    row["time_ratio"] = row["time_s"] / base_t
                if base_m:
                    row["mem_ratio"] = row["mem_mib"] / base_m
            rows.append(row)
    return workloads, rows


def short_status(row):
    """'crash: SIGSEGV (mprotect() failed)' for a table cell."""
    text = row["status"]
    note = row.get("note", "")
    m = re.search(r"ElectricFence Exiting: (.*)", note)
    if m:  # "mprotect() failed: " (it prints no reason): out of mappings or memory
        note = m.group(1).strip().rstrip(":")
    if note and not note.startswith("skip"):
        text += " (%s)" % note[:60].replace("|", "/")
    return text


def tables(workloads, rows, tools):
    by = {(r["workload"], r["tool"]): r for r in rows}
    cols = tools.tools
    out = ["### Time: ratio to glibc (median seconds)", "",
           "| workload | args | " + " | ".join(cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for name, _, _, _ in workloads:
        cells = []
        args = ""
        for tool in cols:
            r = by.get((name, tool))
            if not r:
                cells.append("")
                continue
            args = r["args"]
            if "time_s" in r and r["status"] == "ok":
                ratio = r.get("time_ratio")
                cells.append("%s (%.2f s)" % ("%.1fx" % ratio if ratio is not None else "?",
                                              r["time_s"]))
            else:
                cells.append(short_status(r))
        out.append("| %s | %s | %s |" % (name, args, " | ".join(cells)))
    out += ["", "### Memory: peak MiB (bench/measure.py's formula) / naive peak RSS MiB", "",
            "| workload | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for name, _, _, _ in workloads:
        cells = []
        for tool in cols:
            r = by.get((name, tool))
            if r and "mem_mib" in r and r["status"] == "ok":
                cells.append("%.1f / %.1f" % (r["mem_mib"], r["rss_mib"]))
            else:
                cells.append("-" if r else "")
        out.append("| %s | %s |" % (name, " | ".join(cells)))
    # Geometric mean of the time ratios over the workloads every tool finished.
    out += ["", "Geometric mean of the time ratios (workloads the tool finished):", ""]
    for tool in cols:
        ratios = [by[(n, tool)]["time_ratio"] for n, _, _, _ in workloads
                  if (n, tool) in by and by[(n, tool)].get("time_ratio")
                  and by[(n, tool)]["status"] == "ok"]
        if ratios:
            g = 1.0
            for x in ratios:
                g *= x
            out.append("- %s: %.1fx over %d of %d workloads" % (tool, g ** (1 / len(ratios)),
                                                                len(ratios), len(workloads)))
        else:
            out.append("- %s: finished none" % tool)
    return "\n".join(out) + "\n"


# ---- part 2: the same use-after-free under every tool -------------------------------------

def trim_report(text, tool):
    """Drop what changes from run to run or says nothing about the bug: pids, ASan's shadow
    byte map and legend, the build directory prefix."""
    text = re.sub(r"==\d+==", "==PID==", text)
    text = re.sub(r"thread \d+ ", "thread PID ", text)
    if tool == "asan":
        text = re.sub(r"Shadow bytes around the buggy address:.*?(?===PID==ABORTING)",
                      "[shadow byte map and legend: 35 lines cut]\n", text, flags=re.S)
    return text


def run_reports(tools, out_dir, asan_dir, timeout):
    """The README's uaf_demo under each tool: {tool: (status, report text)}."""
    reports = {}
    exe = os.path.join(asan_dir, "uaf_demo")
    flags = ["-g", "-O0", "-fno-builtin", "-fno-omit-frame-pointer"]
    proc = subprocess.run(["gcc"] + flags + [UAF_SOURCE, "-o", exe], capture_output=True, text=True)
    if proc.returncode != 0:
        log("skip: reports: gcc failed: %s" % proc.stderr.strip()[-200:])
        return reports
    for tool in tools.tools:
        if tool == "oscar-fast":
            continue  # fast mode does not promise a report for a read of a data field
        if tool == "asan":  # -O0 like the others (Tools.command would build it -O2)
            asan_exe, why = build_asan(UAF_SOURCE, asan_dir, flags, suffix="-O0-asan")
            if not asan_exe:
                log("skip: report under asan: %s" % why)
                continue
            argv, env = [asan_exe], clean_env()
        else:
            argv, env = tools.command(tool, exe, UAF_SOURCE, [])
        if tool == "electric-fence":
            env.pop("EF_DISABLE_BANNER", None)
        try:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            reports[tool] = ("timeout", "")
            continue
        status = describe_rc(p.returncode)
        text = "$ %s\n%s%s[%s]\n" % (command_line(tool), p.stdout, p.stderr, status)
        if tool == "electric-fence" and shutil.which("gdb"):
            # The preload goes to the program only, not to gdb itself.
            genv = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
            try:
                g = subprocess.run(["gdb", "-q", "-batch", "-nx",
                                    "-ex", "set environment LD_PRELOAD=" + tools.efence,
                                    "-ex", "set environment EF_DISABLE_BANNER=1",
                                    "-ex", "run", "-ex", "bt", "--args"] + argv,
                                   env=genv, stdin=subprocess.DEVNULL, capture_output=True,
                                   text=True, timeout=timeout)
                gdb_out = g.stdout
            except subprocess.TimeoutExpired:
                gdb_out = "(gdb timed out)"
            lines = [line for line in gdb_out.splitlines()
                     if re.match(r"(Program received|#\d|\d+\s)", line)
                     or "SIGSEGV" in line]
            text += "\n$ gdb -batch -ex run -ex bt --args %s   (same environment)\n%s\n" % (
                "./uaf_demo", "\n".join(lines))
        text = trim_report(text, tool)
        reports[tool] = (status, text)
        with open(os.path.join(out_dir, "reports", tool + ".txt"), "w") as f:
            f.write(text)
    return reports


def describe_rc(rc):
    if rc < 0:
        import signal
        try:
            return "killed by " + signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %d" % rc


def command_line(tool):
    return {
        "glibc": "./uaf_demo",
        "oscar-strict": "LD_PRELOAD=build/src/liboscar.so OSCAR_MODE=strict ./uaf_demo",
        "valgrind": "valgrind --tool=memcheck -q --error-exitcode=99 ./uaf_demo",
        "electric-fence": "LD_PRELOAD=libefence.so.0 EF_PROTECT_FREE=1 ./uaf_demo",
        "asan": "./uaf_demo-asan      # built with gcc -g -O0 -fsanitize=address",
    }.get(tool, tool)


def machine():
    """run.py's machine line (CPU, kernel, glibc, commit), plus the peers' versions."""
    versions = []
    for cmd in (["valgrind", "--version"], ["gcc", "-dumpfullversion"]):
        if shutil.which(cmd[0]):
            versions.append(cmd[0] + " " + subprocess.run(cmd, capture_output=True,
                                                          text=True).stdout.strip())
    if efence_path() and shutil.which("dpkg-query"):
        v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "electric-fence"],
                           capture_output=True, text=True).stdout.strip()
        versions.append("electric-fence " + (v or "?"))
    return "%s; %s" % (bench_run.machine_description(), ", ".join(versions))


def main(argv):
    args = parse_args(argv)
    build = os.path.abspath(args.build_dir or os.environ.get("OSCAR_BUILD_DIR")
                            or os.path.join(REPO, "build"))
    sizes_key = "smoke" if args.smoke else "full"
    runs = args.runs or (1 if (args.quick or args.smoke) else 3)
    timeout = args.timeout or (20.0 if args.smoke else 120.0)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    out_dir = args.out or os.path.join(HERE, "results", "debug-peers-" + stamp)
    os.makedirs(os.path.join(out_dir, "reports"), exist_ok=True)
    asan_dir = os.path.join(build, "debug-peers")
    os.makedirs(asan_dir, exist_ok=True)
    programs = os.path.join(build, "bench", "programs")
    if not os.path.isdir(programs):
        log("error: %s is missing: configure with -DOSCAR_BUILD_BENCH=ON and build" % programs)
        return 2

    install_missing(args.no_install or args.smoke)
    wanted = args.tools.split(",") if args.tools else list(TOOLS)
    unknown = [t for t in wanted if t not in TOOLS]
    if unknown:
        log("error: unknown tool %s (known: %s)" % (",".join(unknown), ",".join(TOOLS)))
        return 2
    if "glibc" not in wanted:
        wanted.insert(0, "glibc")
    tools = Tools(build, asan_dir, wanted)
    for tool, why in tools.skip.items():
        log("skip: %s: %s" % (tool, why))
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    started = datetime.datetime.now(datetime.timezone.utc)
    header = ("%s UTC; %s; load average at start %s; %d run(s) per cell, timeout %.0f s; command: "
              "python3 bench/debug_peers.py %s" % (started.strftime("%Y-%m-%d %H:%M"), machine(), load,
                                                   runs, timeout, " ".join(argv)))
    log(header)

    if not args.reports_only:
        timings(args, tools, programs, sizes_key, runs, timeout, out_dir, header, argv)
    if not args.no_reports:
        reports = run_reports(tools, out_dir, asan_dir, max(timeout, 60.0))
        with open(os.path.join(out_dir, "reports.md"), "w") as f:
            f.write("# The same use-after-free (examples/uaf_demo.c, gcc -g -O0) under each tool\n\n")
            for tool, (status, text) in reports.items():
                f.write("## %s (%s)\n\n```\n%s```\n\n" % (tool, status, text))
        for tool, (status, _) in reports.items():
            log("report: %-15s %s" % (tool, status))
    log("wrote %s" % out_dir)
    return 0


def timings(args, tools, programs, sizes_key, runs, timeout, out_dir, header, argv):
    workloads, rows = run_timings(args, tools, programs, sizes_key, runs, timeout)
    with open("/proc/loadavg") as f:
        load_end = " ".join(f.read().split()[:3])
    table = tables(workloads, rows, tools)
    fields = ["workload", "tool", "args", "runs", "status", "note", "time_s", "time_ratio",
              "mem_mib", "mem_ratio", "rss_mib"]
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for row in rows:
            w.writerow({k: ("%.4g" % v if isinstance(v, float) else v) for k, v in row.items()})
    md = ["# Debugging tools side by side", "", header,
          "; load average at end %s" % load_end, "", table, "Tools:", ""]
    md += ["- %s: %s" % (t, TOOL_NOTES[t]) for t in tools.tools]
    md += ["- skip: %s: %s" % (t, why) for t, why in tools.skip.items()]
    md += ["", "Workloads:", ""]
    md += ["- %s (`%s`): %s" % (n, p, d) for n, p, _, d in workloads]
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    log("")
    log(table)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
