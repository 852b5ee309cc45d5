"""The workloads, one table row each: what to run, at a smoke size (seconds under Oscar, for
the test suite) and a full size (for the numbers in docs/benchmarks.md).

Sizes are set by Oscar, not glibc: Oscar costs a system call or more per small allocation, so
a workload that takes 1 s under glibc can take minutes under Oscar, Electric Fence or DUMA. Full
sizes keep Oscar at ~2-10 s per run, so the whole suite fits in 30 minutes on 2 cores.
"""

import dataclasses
import os
import random
import re

import servers

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "inputs")


@dataclasses.dataclass
class Command:
    argv: list
    env: dict = dataclasses.field(default_factory=dict)
    stdin: str = None   # path of a file to feed on stdin
    cwd: str = None
    digest: object = None  # stdout bytes -> the part compared with glibc's (default: all of it)


@dataclasses.dataclass
class Context:
    programs_dir: str   # <build>/bench/programs
    workdir: str        # scratch directory for generated inputs and outputs
    build_dir: str = "" # Oscar's build directory (speedtest1 is built under it)


@dataclasses.dataclass
class Workload:
    name: str
    kind: str            # "micro" (bench/programs), "real" (a Debian program) or "server"
    description: str
    sizes: dict          # {"smoke": n, "full": n}
    make: object         # (ctx, n) -> Command, or servers.Server for kind "server"
    requires: list = dataclasses.field(default_factory=list)  # [(executable, Debian package)]
    # (ctx) -> why it cannot run here (a program built outside the project), or None
    missing: object = None
    in_default: bool = True  # False: only by name or through a suite (SUITES)


def _micro(program, *extra):
    """bench/programs/<program> N extra...; a size that is a tuple gives several arguments."""
    def make(ctx, n):
        args = list(n) if isinstance(n, tuple) else [n]
        return Command([os.path.join(ctx.programs_dir, program)] + [str(a) for a in args + list(extra)])
    return make


# ---- generated inputs (deterministic, cached in the work directory) -------------------------

WORDS = ("alloc free page shadow canonical heap memory object pointer thread kernel mapping "
         "running testing sorting reading writing parsing lorem ipsum dolor sit amet").split()


def _text_file(ctx, lines):
    path = os.path.join(ctx.workdir, "text-%d.txt" % lines)
    if not os.path.exists(path):
        rng = random.Random(lines)
        with open(path, "w") as f:
            for i in range(lines):
                f.write(" ".join(rng.choice(WORDS) + str(rng.randrange(50))
                                 for _ in range(12)) + "\n")
    return path


def _c_file(ctx, functions):
    """A large C file: many functions with loops, switches and local structs, so the compiler
    builds big trees, RTL and CFGs."""
    path = os.path.join(ctx.workdir, "big-%d.c" % functions)
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("struct pt { int x, y; double w; };\n")
            for i in range(functions):
                f.write("int f%d(int a, int b) {\n  struct pt p = { a, b, %d.5 };\n"
                        "  int acc = %d;\n  for (int i = 0; i < a; i++) {\n"
                        "    switch ((i + b) %% 5) {\n" % (i, i, i))
                for c in range(5):
                    f.write("    case %d: acc += p.x * %d - (p.y >> %d); break;\n" % (c, c + i, c))
                f.write("    }\n    if (acc > %d) acc ^= (int)p.w;\n  }\n" % (i * 13))
                if i:
                    f.write("  return acc + f%d(b, a - 1);\n}\n" % (i - 1))
                else:
                    f.write("  return acc;\n}\n")
    return path


def _sql_file(ctx, rows):
    """An SQL workload after speedtest1's flavour (speedtest1 itself is only in the source
    package): bulk inserts, an index, point and range selects, updates, deletes, a join."""
    path = os.path.join(ctx.workdir, "work-%d.sql" % rows)
    if not os.path.exists(path):
        rng = random.Random(rows)
        with open(path, "w") as f:
            f.write("CREATE TABLE t1(a INTEGER, b INTEGER, c TEXT);\n"
                    "CREATE TABLE t2(a INTEGER PRIMARY KEY, b TEXT);\nBEGIN;\n")
            for i in range(rows):
                f.write("INSERT INTO t1 VALUES(%d,%d,'%s');\n"
                        % (i, rng.randrange(1000000), " ".join(rng.choice(WORDS) for _ in range(6))))
                if i % 4 == 0:
                    f.write("INSERT INTO t2 VALUES(%d,'%s');\n" % (i, rng.choice(WORDS) * 3))
            f.write("COMMIT;\nCREATE INDEX i1b ON t1(b);\nCREATE INDEX i1c ON t1(c);\n")
            for i in range(rows // 20):
                lo = rng.randrange(1000000)
                f.write("SELECT count(*), avg(b) FROM t1 WHERE b BETWEEN %d AND %d;\n"
                        % (lo, lo + 5000))
            f.write("BEGIN;\n")
            for i in range(rows // 10):
                f.write("UPDATE t1 SET c = c || 'x' WHERE a = %d;\n" % rng.randrange(rows))
            f.write("DELETE FROM t1 WHERE b % 7 = 0;\nCOMMIT;\n"
                    "SELECT count(*), sum(length(t1.c)) FROM t1 JOIN t2 ON t1.a = t2.a;\n"
                    "SELECT c, count(*) FROM t1 GROUP BY c ORDER BY 2 DESC, 1 LIMIT 5;\n")
    return path


def _xz_input(ctx, kib):
    path = os.path.join(ctx.workdir, "data-%d.bin" % kib)
    if not os.path.exists(path):
        rng = random.Random(kib)
        chunk = []
        size = 0
        while size < kib * 1024:   # text with some repetition: compressible, not trivially
            line = " ".join(rng.choice(WORDS) + str(rng.randrange(10000)) for _ in range(10))
            chunk.append(line)
            size += len(line) + 1
        with open(path, "w") as f:
            f.write("\n".join(chunk))
    return path


def _gcc(ctx, n):
    src = _c_file(ctx, n)
    return Command(["gcc", "-O2", "-c", src, "-o", os.path.join(ctx.workdir, "big.o")])


def _python(ctx, n):
    # /usr/bin/python3, not the harness's interpreter: the system's build is what we measure.
    return Command(["/usr/bin/python3", os.path.join(INPUTS, "python_work.py"), str(n)],
                   env={"PYTHONMALLOC": "malloc", "PYTHONDONTWRITEBYTECODE": "1"})


def _perl(ctx, n):
    return Command(["perl", os.path.join(INPUTS, "perl_words.pl"), _text_file(ctx, n), "1"])


def _sqlite(ctx, n):
    # -lookaside 0 0 turns off SQLite's own small-object pool, so its allocations reach malloc.
    return Command(["sqlite3", "-batch", "-lookaside", "0", "0", ":memory:"],
                   stdin=_sql_file(ctx, n))


def speedtest1_path(build_dir):
    """SQLite's own benchmark program: $OSCAR_SPEEDTEST1, else <build>/speedtest1/speedtest1
    as bench/build_speedtest1.sh builds it (it ships only in Debian's source package)."""
    return os.environ.get("OSCAR_SPEEDTEST1") or os.path.join(build_dir, "speedtest1", "speedtest1")


def _speedtest1_missing(ctx):
    path = speedtest1_path(ctx.build_dir)
    if os.access(path, os.X_OK):
        return None
    return ("%s is not built (only Debian's source package has it: bench/build_speedtest1.sh "
            "%s, or rerun with --install)" % (path, os.path.dirname(path)))


def _speedtest1_digest(out):
    """speedtest1 prints a timing after each test: compare the test names only."""
    return b"\n".join(m.group(1) for m in re.finditer(rb"^ *(\d+ - [^.]*?)\.*\s+[\d.]+s$", out, re.M))


def _speedtest1(ctx, size):
    # --lookaside 0 0: SQLite's own small-object pool off, so its allocations reach malloc;
    # --memdb: an in-memory database (its pages are malloc'd too), no disk I/O in the figure.
    return Command([speedtest1_path(ctx.build_dir), "--lookaside", "0", "0", "--memdb",
                    "--nomemstat", "--size", str(size)], digest=_speedtest1_digest)


def _cpython(ctx, n):
    return _python(ctx, n)


def _xz(ctx, kib):
    return Command(["xz", "-T1", "-6", "-c", _xz_input(ctx, kib)])


def _ps_file(ctx, pages):
    """A PostScript document: per page 150 filled or stroked Bezier paths in random colours
    and 60 rotated strings in 5 of the standard fonts at 6-40 pt."""
    path = os.path.join(ctx.workdir, "doc-%d.ps" % pages)
    if not os.path.exists(path):
        rng = random.Random(pages)
        fonts = ["Times-Roman", "Helvetica", "Courier", "Times-Bold", "Helvetica-Oblique"]
        with open(path, "w") as f:
            f.write("%%!PS-Adobe-3.0\n%%%%Pages: %d\n" % pages)
            for p in range(pages):
                f.write("%%%%Page: %d %d\n" % (p + 1, p + 1))
                for _ in range(150):
                    f.write("%.2f %.2f %.2f setrgbcolor newpath %d %d moveto "
                            % (rng.random(), rng.random(), rng.random(), rng.randrange(600),
                               rng.randrange(800)))
                    for _ in range(6):
                        f.write("%d %d %d %d %d %d curveto " % tuple(rng.randrange(800)
                                                                    for _ in range(6)))
                    f.write("closepath %s\n" % rng.choice(["fill", "stroke", "eofill"]))
                for _ in range(60):
                    angle = rng.uniform(-30, 30)
                    f.write("/%s findfont %d scalefont setfont %d %d moveto %.1f rotate (%s) show "
                            "%.1f rotate\n" % (rng.choice(fonts), rng.randrange(6, 40),
                                               rng.randrange(550), rng.randrange(780), angle,
                                               " ".join(rng.choice(WORDS) for _ in range(5)),
                                               -angle))
                f.write("showpage\n")
            f.write("%%EOF\n")
    return path


def _smt_file(ctx, problems, bits=12):
    """SMT-LIB2 (QF_BV): `problems` factorisations, each its own push/pop scope: find a and b,
    1 < a, b < 2^bits, with a * b = n for a random n of 2*bits-1 bits (sat when n is composite
    in range, unsat otherwise). Bit-blasting the multiplier and the CDCL search both allocate."""
    path = os.path.join(ctx.workdir, "factor-%d-%d.smt2" % (problems, bits))
    if not os.path.exists(path):
        rng = random.Random(problems)
        w = 2 * bits
        with open(path, "w") as f:
            f.write("(set-logic QF_BV)\n")
            for _ in range(problems):
                n = rng.randrange(1 << (bits - 2), 1 << (bits - 1))
                f.write("(push 1)\n(declare-fun a () (_ BitVec %d))\n"
                        "(declare-fun b () (_ BitVec %d))\n" % (w, w))
                f.write("(assert (= (bvmul a b) (_ bv%d %d)))\n" % (n, w))
                f.write("(assert (bvult (_ bv1 %d) a))\n(assert (bvult (_ bv1 %d) b))\n" % (w, w))
                f.write("(assert (bvult a (_ bv%d %d)))\n(assert (bvult b (_ bv%d %d)))\n"
                        % (1 << bits, w, 1 << bits, w))
                f.write("(check-sat)\n(pop 1)\n")
    return path


def _db_bench_digest(out):
    """db_bench prints timings; what must match glibc is which benchmarks ran and how many
    keys readrandom found."""
    return b"\n".join(m.group(1) + (b" " + m.group(2) if m.group(2) else b"")
                      for m in re.finditer(rb"^(\w+)\s+:.*?(\(\d+ of \d+ found\))?\s*$",
                                           out, re.M))


def _rocksdb(ctx, num):
    # fillrandom then readrandom of `num` 16-byte keys with 100-byte values, one thread, a
    # 256 KiB memtable (so it flushes and compacts in the background), no compression; the
    # seed is fixed so readrandom finds the same keys under every allocator.
    db = os.path.join(ctx.workdir, "rocksdb-%d" % num)
    return Command(["db_bench", "--benchmarks=fillrandom,readrandom", "--num=%d" % num,
                    "--db=" + db, "--seed=1", "--threads=1", "--compression_type=none",
                    "--write_buffer_size=262144", "--statistics=0", "--histogram=0",
                    "--wal_dir=" + db], digest=_db_bench_digest)


def _ghostscript(ctx, pages):
    # The raster (8-bit grey, 72 dpi) goes to stdout, so every allocator must render the same.
    return Command(["gs", "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE", "-sDEVICE=pgmraw", "-r72",
                    "-sOutputFile=-", _ps_file(ctx, pages)])


def _z3(ctx, problems):
    return Command(["z3", "-smt2", _smt_file(ctx, problems)])


def _server(factory):
    return lambda ctx, n: factory(n)


WORKLOADS = [
    Workload("larson", "micro", "4 threads each churning 1000 live objects of 16-512 B",
             {"smoke": 2000, "full": 60000}, _micro("larson", 4, 1000)),
    Workload("prodcons", "micro", "2 producer threads, 2 consumer threads free what the others allocated",
             {"smoke": 2000, "full": 100000}, _micro("prodcons", 2)),
    Workload("lifetimes", "micro", "4000 long-lived objects replaced slowly, bursts of 32 temporaries",
             {"smoke": 200, "full": 8000}, _micro("lifetimes", 4000)),
    Workload("realloc", "micro", "buffers grown to 4-64 KiB by 1-64 B realloc steps",
             {"smoke": 20, "full": 2000}, _micro("realloc_growth")),
    Workload("stl", "micro", "std::map/unordered_map/list/vector of strings and vectors (C++)",
             {"smoke": 1, "full": 15}, _micro("stl")),
    Workload("bigobj", "micro", "objects of 64 KiB-4 MiB, every page touched, 8 alive",
             {"smoke": 20, "full": 1000}, _micro("bigobj")),
    # Issue 17's workloads (--suite protect): each runs >= 0.5 s under glibc at its full size.
    Workload("churn", "micro", "1 thread replacing objects of 16-512 B in a table of 10000",
             {"smoke": 20000, "full": 10000000}, _micro("churn"), in_default=False),
    Workload("cpython", "real", "/usr/bin/python3 object rounds (dicts, lists, str), PYTHONMALLOC=malloc, >= 0.5 s",
             {"smoke": 1, "full": 50}, _cpython, [("/usr/bin/python3", "python3")], in_default=False),
    Workload("speedtest1", "real", "SQLite's speedtest1 (--lookaside 0 0 --memdb --size N)",
             {"smoke": 1, "full": 20}, _speedtest1, missing=_speedtest1_missing, in_default=False),
    Workload("prodcons2", "micro", "1 producer thread, 1 consumer thread freeing what it allocated",
             {"smoke": 2000, "full": 3000000}, _micro("prodcons", 1), in_default=False),
    Workload("scanstress", "micro", "200 MiB live of 32-256 B nodes in a ring, 1.5 M replaced",
             {"smoke": (8, 20000), "full": (200, 1500000)}, _micro("scanstress"), in_default=False),
    Workload("gcc", "real", "gcc -O2 -c on a generated C file (N functions)",
             {"smoke": 10, "full": 80}, _gcc, [("gcc", "gcc")]),
    Workload("python", "real", "/usr/bin/python3 pure-Python dict/list/str rounds, PYTHONMALLOC=malloc",
             {"smoke": 1, "full": 8}, _python, [("/usr/bin/python3", "python3")]),
    Workload("perl", "real", "perl word counts, regex rewriting and sorting of a generated text",
             {"smoke": 500, "full": 12000}, _perl, [("perl", "perl")]),
    Workload("sqlite", "real", "sqlite3 (:memory:, lookaside off) running generated inserts/indexes/selects",
             {"smoke": 300, "full": 12000}, _sqlite, [("sqlite3", "sqlite3")]),
    Workload("xz", "real", "xz -6 -T1 compressing generated text (KiB)",
             {"smoke": 128, "full": 1536}, _xz, [("xz", "xz-utils")]),
    Workload("rocksdb", "real", "rocksdb db_bench fillrandom,readrandom of N keys (256 KiB memtable)",
             {"smoke": 2000, "full": 20000}, _rocksdb, [("db_bench", "rocksdb-tools")]),
    Workload("ghostscript", "real", "gs rendering a generated N-page PostScript file to pgmraw at 72 dpi",
             {"smoke": 2, "full": 20}, _ghostscript, [("gs", "ghostscript")]),
    Workload("z3", "real", "z3 solving N generated 24-bit factorisation problems (QF_BV)",
             {"smoke": 2, "full": 20}, _z3, [("z3", "z3")]),
    Workload("redis", "server", "redis-server under redis-benchmark: N requests each of 7 commands, 20 clients",
             {"smoke": 1000, "full": 6000}, _server(servers.redis),
             [("redis-server", "redis-server"), ("redis-benchmark", "redis-tools")]),
    Workload("memcached", "server", "memcached (4 threads) under memcaslap for N s: 95% gets, 5% sets",
             {"smoke": 1, "full": 3}, _server(servers.memcached),
             [("memcached", "memcached"), ("memcaslap", "libmemcached-tools")]),
    Workload("nginx", "server", "nginx (master + 2 workers) under wrk for N s: a 2.3 KiB static page",
             {"smoke": 1, "full": 3}, _server(servers.nginx), [("nginx", "nginx"), ("wrk", "wrk")]),
]


# Named comparisons (--suite NAME): workloads and allocators run side by side.
SUITES = {
    # Issue 17: protect mode against its targets and the reuse-preventing designs. The
    # issue's timed workloads, then the two servers its targets name (throughput, p99).
    "protect": {
        "workloads": ["churn", "cpython", "speedtest1", "prodcons2", "scanstress", "redis",
                      "nginx"],
        "allocators": ["glibc", "mimalloc", "jemalloc", "scudo", "scudo-quarantine", "markus",
                       "glibc-delay", "mimalloc-delay", "oscar-strict", "oscar-fast", "oscar-protect", "oscar-protect-stop",
                       "oscar-protect-1thread"],
    },
}


def missing_requirements(workload):
    """The Debian packages whose executables this workload needs and cannot find."""
    missing = []
    for exe, pkg in workload.requires:
        if not servers.which(exe) and pkg not in missing:
            missing.append(pkg)
    return missing
