#!/usr/bin/env python3
"""Fork benchmark (issues 4 and 18): fork a process holding 10 MB, 100 MB and 1 GB of live
small (1000-byte) objects, under glibc and under Oscar, and report the median time fork()
takes to return in the parent, the time until the child runs, that time per GiB of live
objects, and Oscar's heap copy rate.

    python3 bench/fork/run.py [--sizes 10,100,1000] [--repeats 5] [--modes strict,fast]
                              [--lib path/to/liboscar.so] [--rounds 1]

With --rounds N each (size, mode) is run N times, glibc and Oscar taking turns, and the
median of all forks is shown (the machine's load changes between runs: alternating keeps
the comparison fair). --lib compares another build (say, one made before a change).
Prints a Markdown table. Needs the build (bench/fork/fork_time, src/liboscar.so)."""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("OSCAR_BUILD_DIR") or REPO / "build")
PROGRAM = BUILD / "bench" / "fork" / "fork_time"
LIB = BUILD / "src" / "liboscar.so"


def measure(mb, repeats, preload, mode=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OSCAR_") and k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = str(preload)
    if mode:
        env["OSCAR_MODE"] = mode
    out = subprocess.run([str(PROGRAM), str(mb), str(repeats)], env=env, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit("fork_time %s MB failed (%s): %s%s" % (mb, out.returncode, out.stdout, out.stderr))
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("fork ")]
    return [float(r[1]) for r in rows], [float(r[2]) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,100,1000", help="MB of live objects, comma-separated")
    ap.add_argument("--repeats", type=int, default=5, help="forks per run (the median is shown)")
    ap.add_argument("--modes", default="strict", help="Oscar's modes, comma-separated")
    ap.add_argument("--lib", default=str(LIB), help="the liboscar.so to measure")
    ap.add_argument("--rounds", type=int, default=1, help="runs per size and mode, taking turns")
    args = ap.parse_args()
    lib = Path(args.lib)
    for path in (PROGRAM, lib):
        if not path.exists():
            sys.exit("missing %s: build first (cmake --build build)" % path)
    print("| live objects | mode | glibc fork (ms) | glibc child ready (ms) | oscar fork (ms) "
          "| oscar child ready (ms) | oscar child ready per GiB (ms) | oscar heap copy rate (GB/s) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mb in (int(s) for s in args.sizes.split(",")):
        for mode in args.modes.split(","):
            g_parent, g_child, o_parent, o_child = [], [], [], []
            for _ in range(args.rounds):
                p, c = measure(mb, args.repeats, None)
                g_parent += p
                g_child += c
                p, c = measure(mb, args.repeats, lib, mode)
                o_parent += p
                o_child += c
            med = statistics.median
            gib = mb * 1e6 / (1 << 30)
            print("| %d MB | %s | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f |"
                  % (mb, mode, med(g_parent), med(g_child), med(o_parent), med(o_child),
                     med(o_child) / gib, mb / 1000 / (med(o_child) / 1000)), flush=True)


if __name__ == "__main__":
    main()
