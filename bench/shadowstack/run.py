#!/usr/bin/env python3
"""Overhead of parallel shadow stacks (`oscar cc`) on CPU-bound workloads, side by side with
-fstack-protector-strong and -fstack-protector-all (docs/shadow-stacks.md, "Figures").

    bench/shadowstack/run.py --oscar BUILD/cli/oscar --sqlite DIR --lua DIR [--runs 5]

--sqlite DIR: a folder with SQLite's amalgamation (sqlite3.c, sqlite3.h) and test/speedtest1.c
  somewhere below DIR or its parent (Debian: apt-get source sqlite3; ./configure; make sqlite3.c).
--lua DIR: Lua's source (its src/ folder; Debian: apt-get source lua5.4).
--bzip2 DIR: bzip2's source (Debian: apt-get source bzip2): compresses and decompresses a
  file of about 10 MB (SQLite's amalgamation or, without it, this repository's sources, repeated).
--before OSCAR: a second `oscar` (an older build, e.g. a copy of BUILD/cli and BUILD/shadowstack
  from before a change): adds the configurations before-check and before-overwrite, built with
  it, so that one interleaved run compares the two instrumentations.
Every workload is built once per configuration, with the same flags (-O2) except the one under
test; runs are interleaved (configuration by configuration, round by round) and the minimum (--stat
median: the median) CPU time (user + system, from wait4) is kept. Prints a Markdown table: seconds, overhead against
plain, geometric means, and text size growth.
"""
import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CONFIGS = [
    ("plain", [], "-fno-stack-protector"),
    ("ssp-strong", [], "-fstack-protector-strong"),
    ("ssp-all", [], "-fstack-protector-all"),
    ("pss-check", ["--mode=check"], "-fno-stack-protector"),
    ("pss-overwrite", ["--mode=overwrite"], "-fno-stack-protector"),
    ("pss-random", ["--mode=check", "--offset=random"], "-fno-stack-protector"),
    ("pss-immediate", ["--mode=check", "--offset=immediate"], "-fno-stack-protector"),
]


BEFORE = [
    ("before-check", ["--mode=check"], "-fno-stack-protector"),
    ("before-overwrite", ["--mode=overwrite"], "-fno-stack-protector"),
]


def compile_cmd(oscar, cfg, args, before=None):
    name, pss, ssp = cfg
    cc = ["gcc", "-O2", ssp] + args
    if name.startswith("pss"):
        return [oscar, "cc"] + pss + ["--"] + cc
    if name.startswith("before"):
        return [before, "cc"] + pss + ["--"] + cc
    return cc


def text_size(path):
    out = subprocess.run(["size", "-A", str(path)], stdout=subprocess.PIPE, text=True).stdout
    for line in out.splitlines():
        if line.startswith(".text "):
            return int(line.split()[1])
    return 0


def cpu_time(cmd, cwd):
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd, proc.returncode, err[-500:]))
    return ru.ru_utime + ru.ru_stime, time.time() - t0


def find(root, name):
    for base in (root, root.parent):
        hits = sorted(base.rglob(name))
        if hits:
            return hits[0]
    sys.exit("cannot find %s under %s" % (name, root))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oscar", required=True)
    ap.add_argument("--sqlite")
    ap.add_argument("--lua")
    ap.add_argument("--bzip2")
    ap.add_argument("--before")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--json", help="also write every run's CPU time here")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--stat", choices=["min", "median"], default="min",
                    help="min (default) resists other jobs on a shared machine best")
    ap.add_argument("--speedtest-size", type=int, default=60)
    ap.add_argument("--configs", default=",".join(c[0] for c in CONFIGS))
    ap.add_argument("--workdir", help="build here; binaries of plain and ssp-* already there are "
                    "reused (the pss-* ones are always rebuilt)")
    opts = ap.parse_args()
    wanted = opts.configs.split(",")
    if opts.before:
        wanted += [c[0] for c in BEFORE if c[0] not in wanted]
    configs = [c for c in CONFIGS + BEFORE if c[0] in wanted]
    work = Path(opts.workdir) if opts.workdir else Path(tempfile.mkdtemp(prefix="pss-bench-"))
    work.mkdir(parents=True, exist_ok=True)

    def fresh(out, cfg):
        return not (cfg[0].startswith("pss") or not out.exists())
    workloads = []  # (name, {cfg: argv}, cwd)
    binaries = {}   # (program, cfg) -> path
    if opts.sqlite:
        root = Path(opts.sqlite)
        amal, speed = find(root, "sqlite3.c"), find(root, "speedtest1.c")
        for cfg in configs:
            out = work / ("speedtest1-" + cfg[0])
            if not fresh(out, cfg):
              subprocess.run(compile_cmd(opts.oscar, cfg, [
                "-DSQLITE_OMIT_LOAD_EXTENSION", "-DSQLITE_THREADSAFE=0", "-I", str(amal.parent),
                "-o", str(out), str(speed), str(amal), "-lm"], opts.before), check=True)
            binaries[("speedtest1", cfg[0])] = out
        workloads.append(("sqlite speedtest1 --size %d" % opts.speedtest_size,
                          {c[0]: [str(binaries[("speedtest1", c[0])]), "--memdb", "--size",
                                  str(opts.speedtest_size)] for c in configs}, work))
    if opts.lua:
        src = Path(opts.lua) / "src"
        files = [str(p) for p in sorted(src.glob("*.c")) if p.name not in ("luac.c",)]
        for cfg in configs:
            out = work / ("lua-" + cfg[0])
            if not fresh(out, cfg):
              subprocess.run(compile_cmd(opts.oscar, cfg, [
                "-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-o", str(out)] + files +
                ["-lm", "-ldl", "-Wl,-E"], opts.before), check=True)
            binaries[("lua", cfg[0])] = out
        for script, arg in (("fib.lua", "32"), ("strings.lua", "300000"),
                            ("sort.lua", "300000"), ("trees.lua", "16")):
            workloads.append(("lua %s %s" % (script, arg),
                              {c[0]: [str(binaries[("lua", c[0])]), str(HERE / "lua" / script),
                                      arg] for c in configs}, work))
    if opts.bzip2:
        src = Path(opts.bzip2)
        files = [str(src / n) for n in ("blocksort.c", "huffman.c", "crctable.c", "randtable.c",
                                         "compress.c", "decompress.c", "bzlib.c", "bzip2.c")]
        for cfg in configs:
            out = work / ("bzip2-" + cfg[0])
            if not fresh(out, cfg):
                subprocess.run(compile_cmd(opts.oscar, cfg, [
                    "-D_FILE_OFFSET_BITS=64", "-o", str(out)] + files, opts.before), check=True)
            binaries[("bzip2", cfg[0])] = out
        data = work / "bzip2-input"
        if not data.exists():
            seed = (find(Path(opts.sqlite), "sqlite3.c") if opts.sqlite else None)
            blob = seed.read_bytes() if seed else b"".join(
                p.read_bytes() for p in sorted((HERE.parent.parent / "src").rglob("*.[ch]")))
            with open(data, "wb") as f:
                while f.tell() < 10 << 20:
                    f.write(blob)
        packed = work / "bzip2-input.bz2"
        if not packed.exists():
            with open(packed, "wb") as f:
                subprocess.run([str(binaries[("bzip2", "plain")]), "-9", "-c", str(data)],
                               stdout=f, check=True)
        workloads.append(("bzip2 -9 (compress 10 MB)",
                          {c[0]: [str(binaries[("bzip2", c[0])]), "-9", "-c", str(data)]
                           for c in configs}, work))
        workloads.append(("bzip2 -d (decompress)",
                          {c[0]: [str(binaries[("bzip2", c[0])]), "-d", "-c", str(packed)]
                           for c in configs}, work))
    if opts.build_only:
        return
    times = {(w[0], c[0]): [] for w in workloads for c in configs}
    for r in range(opts.runs):
        for name, cmds, cwd in workloads:
            for cfg in configs:
                cpu, _ = cpu_time(cmds[cfg[0]], cwd)
                times[(name, cfg[0])].append(cpu)
        print("round %d/%d done (load average %.2f %.2f %.2f)" % ((r + 1, opts.runs)
              + os.getloadavg()), file=sys.stderr)
    if opts.json:
        import json
        with open(opts.json, "w") as f:
            json.dump({"%s|%s" % k: v for k, v in times.items()}, f, indent=1)
    names = [c[0] for c in configs]
    print("| workload | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    ratios = {n: [] for n in names}
    for name, _, _ in workloads:
        pick = min if opts.stat == "min" else statistics.median
        base = pick(times[(name, "plain")])
        cells = []
        for n in names:
            med = pick(times[(name, n)])
            ratios[n].append(med / base)
            cells.append("%.3f s" % med if n == "plain" else
                         "%.3f s (%+.1f%%)" % (med, 100 * (med / base - 1)))
        print("| %s | %s |" % (name, " | ".join(cells)))
    geo = ["%+.1f%%" % (100 * (math.exp(sum(map(math.log, ratios[n])) / len(ratios[n])) - 1))
           for n in names]
    print("| **geometric mean** | " + " | ".join(geo) + " |")
    print()
    print("| binary (.text bytes) | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for prog in sorted({p for p, _ in binaries}):
        base = text_size(binaries[(prog, "plain")])
        cells = []
        for n in names:
            s = text_size(binaries[(prog, n)])
            cells.append("%d" % s if n == "plain" else "%d (%+.1f%%)" % (s, 100 * (s / base - 1)))
        print("| %s | %s |" % (prog, " | ".join(cells)))


if __name__ == "__main__":
    main()
