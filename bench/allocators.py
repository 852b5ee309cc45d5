"""The allocators the harness can compare, one table row each.

An allocator is a shared library put in front of glibc with LD_PRELOAD (None for glibc
itself, the baseline) plus environment settings. To add an Oscar configuration, add one line to
ALLOCATORS (or ABLATION for `--ablation`); to compare an outside library without editing
anything, pass `--allocator name=/path/lib.so[:ENV=VAL,...]` to bench/run.py.
"""

import dataclasses
import glob
import os
import subprocess

OSCAR = "@oscar"  # placeholder for <build>/src/liboscar.so, resolved at run time
# placeholder for MarkUs's libgc.so: $OSCAR_MARKUS_LIB, else <build>/markus/lib/libgc.so, as
# bench/build_markus.sh installs it (its source is not in Debian: docs/benchmarks.md)
MARKUS = "@markus"
# placeholder for <build>/bench/shims/libdelayfree.so: glibc (or the allocator preloaded after
# it) with a quarantine and nothing else, what delaying reuse costs by itself
DELAYFREE = "@delayfree"


@dataclasses.dataclass
class Allocator:
    name: str
    lib: object = None          # None (glibc), OSCAR, a soname, an absolute path or a glob
    env: dict = dataclasses.field(default_factory=dict)
    package: str = None         # Debian package that ships `lib` (for --install)
    note: str = ""


# Banners and self-checks the page-protection debuggers print would otherwise land on stderr
# of every run; they change nothing else.
QUIET_EF = {"EF_DISABLE_BANNER": "1"}
QUIET_DUMA = {"DUMA_DISABLE_BANNER": "1", "DUMA_OUTPUT_STDERR": "0"}
SCUDO_GLOB = "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-x86_64.so"
# Scudo's quarantine is off by default. These are the standalone runtime's flag names (the
# older runtime's QuarantineSizeKb spelling is not parsed by it): a 64 MiB global quarantine,
# 1 MiB per thread, chunks of up to 64 KiB quarantined.
SCUDO_QUARANTINE = {"SCUDO_OPTIONS": "quarantine_size_kb=65536:thread_local_quarantine_size_kb=1024:"
                                     "quarantine_max_chunk_size=65536"}
# MarkUs prints each stop of the world ("World-stopped marking took N msecs") into this log
# when GC_PRINT_STATS is set; measure.py substitutes {statsdir} and reads it back.
MARKUS_LOG = {"GC_PRINT_STATS": "1", "GC_LOG_FILE": "{statsdir}/markus-gc.log"}

ALLOCATORS = [
    Allocator("glibc", None, note="baseline, no preload"),
    Allocator("oscar", OSCAR, note="default settings (strict mode)"),
    Allocator("oscar-fast", OSCAR, {"OSCAR_MODE": "fast"},
              note="objects share shadow pages, freed ones poisoned, never reused"),
    Allocator("oscar-unbatched", OSCAR, {"OSCAR_RUN_PAGES": "1"},
              note="one shadow per mmap: classic Oscar"),
    Allocator("mimalloc", "libmimalloc.so.2", package="libmimalloc2.0"),
    Allocator("jemalloc", "libjemalloc.so.2", package="libjemalloc2"),
    Allocator("tcmalloc", "libtcmalloc_minimal.so.4", package="libtcmalloc-minimal4"),
    Allocator("scudo", SCUDO_GLOB, package="libclang-rt-14-dev",
              note="LLVM's standalone Scudo runtime from compiler-rt"),
    Allocator("electric-fence", "libefence.so.0", QUIET_EF, package="electric-fence"),
    Allocator("duma", "libduma.so.0", QUIET_DUMA, package="duma"),
]

# Only by name (--allocators) or through a suite (--suite protect): the reuse-preventing
# designs and Oscar's modes named explicitly, so that the table keeps its meaning when the
# default mode changes.
EXTRA = [
    Allocator("scudo-quarantine", SCUDO_GLOB, SCUDO_QUARANTINE, package="libclang-rt-14-dev",
              note="Scudo with a 64 MiB quarantine (1 MiB per thread, chunks up to 64 KiB)"),
    Allocator("markus", MARKUS, MARKUS_LOG,
              note="MarkUs (S&P 2020): quarantine + stop-the-world conservative mark on the "
                   "Boehm collector; built by bench/build_markus.sh"),
    Allocator("glibc-delay", DELAYFREE, {"DELAYFREE_KIB": "1024"},
              note="glibc, each freed object zeroed and held until 1 MiB of later frees "
                   "passed (bench/shims/delayfree.c): a quarantine with no mark"),
    Allocator("mimalloc-delay", (DELAYFREE, "libmimalloc.so.2"), {"DELAYFREE_KIB": "1024"},
              package="libmimalloc2.0",
              note="the same in front of mimalloc: the floor under protect mode's time"),
    Allocator("oscar-strict", OSCAR, {"OSCAR_MODE": "strict"}, note="OSCAR_MODE=strict"),
    Allocator("oscar-protect", OSCAR, {"OSCAR_MODE": "protect"},
              note="OSCAR_MODE=protect: poison + quarantine, conservative mark, reuse what no "
                   "pointer reaches (issue 17); marks concurrent where the kernel can track "
                   "writes (Linux 6.7+)"),
    Allocator("oscar-protect-stop", OSCAR, {"OSCAR_MODE": "protect", "OSCAR_MARK": "stop"},
              note="protect mode, every mark with the world stopped (OSCAR_MARK=stop: what "
                   "kernels before 6.7 get)"),
    Allocator("oscar-protect-concurrent", OSCAR, {"OSCAR_MODE": "protect",
                                                  "OSCAR_MARK": "concurrent"},
              note="protect mode, marks concurrent from 8 MiB of heap on (OSCAR_MARK=concurrent: "
                   "userfaultfd's asynchronous write-protect, a last stop that reads the pages "
                   "written meanwhile)"),
    Allocator("oscar-protect-snapshot", OSCAR, {"OSCAR_MODE": "protect", "OSCAR_MARK": "snapshot"},
              note="protect mode, snapshot marks from 8 MiB of heap on (OSCAR_MARK=snapshot: a "
                   "copy-on-write child reads the process as it was; no last stop)"),
    Allocator("oscar-protect-1thread", OSCAR, {"OSCAR_MODE": "protect", "OSCAR_MARK_THREADS": "1"},
              note="protect mode, every mark read by the marking thread alone "
                   "(OSCAR_MARK_THREADS=1: no helper thread, what a process on one CPU gets)"),
]

# --ablation: Oscar with one optimisation at a time: the shadow batch size (OSCAR_RUN_PAGES:
# shadows created per mmap), revocation by guard markers instead of mmap(PROT_NONE), and the
# cost of recording allocation/free stacks. Add future settings as one more line.
ABLATION = [
    Allocator("glibc", None, note="baseline, no preload"),
    Allocator("oscar-nostacks", OSCAR, {"OSCAR_STACK_DEPTH": "0"}, note="no stack recording"),
    Allocator("oscar-noguards", OSCAR, {"OSCAR_GUARDS": "0"}, note="revoke with mmap(PROT_NONE)"),
    Allocator("oscar-run1", OSCAR, {"OSCAR_RUN_PAGES": "1"}, note="no batching"),
    Allocator("oscar-run8", OSCAR, {"OSCAR_RUN_PAGES": "8"}),
    Allocator("oscar-run64", OSCAR, {"OSCAR_RUN_PAGES": "64"}, note="the default"),
    Allocator("oscar-run256", OSCAR, {"OSCAR_RUN_PAGES": "256"}),
    Allocator("oscar-fast", OSCAR, {"OSCAR_MODE": "fast"}, note="several objects per shadow page"),
    Allocator("oscar-fast-keep0", OSCAR, {"OSCAR_MODE": "fast", "OSCAR_KEEP_FREED_MIB": "0"},
              note="fast mode, every freed page's memory given back (reused pages zeroed again)"),
] + [
    # Fast mode with K = OSCAR_OBJECTS_PER_PAGE objects per shadow page (the dissertation's
    # Figure 4.6 on our design): `--allocators glibc,oscar-fast-k1,...` and bench/kcurve.py.
    Allocator("oscar-fast-k%d" % k, OSCAR, {"OSCAR_MODE": "fast", "OSCAR_OBJECTS_PER_PAGE": str(k)},
              note="K=%d objects per shadow page" % k) for k in (1, 2, 4, 8, 16)]



@dataclasses.dataclass
class Resolved:
    """An allocator ready to run: the library to preload (None for glibc) and its settings."""
    name: str
    preload: str
    env: dict
    is_oscar: bool
    note: str = ""


def parse_spec(spec):
    """--allocator name=/path/lib.so[:ENV=VAL,...] -> Allocator."""
    if "=" not in spec:
        raise ValueError("--allocator wants name=/path/to/lib.so[:ENV=VAL,...], got %r" % spec)
    name, rest = spec.split("=", 1)
    path, _, settings = rest.partition(":")
    env = {}
    for item in filter(None, settings.split(",")):
        key, eq, val = item.partition("=")
        if not eq:
            raise ValueError("bad setting %r in --allocator %s" % (item, spec))
        env[key] = val
    return Allocator(name.strip(), path, env, note="given on the command line")


def _ldconfig():
    """soname -> path for the x86-64 libraries the dynamic loader knows."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return {}
    found = {}
    for line in out.splitlines()[1:]:
        if "=>" in line and ("x86-64" in line or "64bit" in line):
            soname = line.split()[0]
            found.setdefault(soname, line.split("=>")[1].strip())
    return found


def markus_lib(oscar_lib):
    """Where MarkUs's libgc.so should be: $OSCAR_MARKUS_LIB, else <build>/markus/lib/libgc.so."""
    if os.environ.get("OSCAR_MARKUS_LIB"):
        return os.environ["OSCAR_MARKUS_LIB"]
    build = os.path.dirname(os.path.dirname(oscar_lib or ""))
    return os.path.join(build, "markus", "lib", "libgc.so")


def _locate(lib, oscar_lib):
    if isinstance(lib, tuple):  # (preloaded together, in this order)
        paths = [_locate(one, oscar_lib) for one in lib]
        return None if None in paths else " ".join(paths)
    if lib is DELAYFREE:
        build = os.path.dirname(os.path.dirname(oscar_lib or ""))
        path = os.path.join(build, "bench", "shims", "libdelayfree.so")
        return path if os.path.exists(path) else None
    if lib is OSCAR:
        return oscar_lib if oscar_lib and os.path.exists(oscar_lib) else None
    if lib is MARKUS:
        path = markus_lib(oscar_lib)
        return path if os.path.exists(path) else None
    if any(ch in lib for ch in "*?["):
        hits = sorted(glob.glob(lib))
        return hits[-1] if hits else None
    if os.path.isabs(lib):
        return lib if os.path.exists(lib) else None
    known = _ldconfig().get(lib)
    if known and os.path.exists(known):
        return known
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib",
              "/usr/local/lib"):
        if os.path.exists(os.path.join(d, lib)):
            return os.path.join(d, lib)
    return None


def apt_install(packages, log):
    """apt-get install the packages; returns True if apt-get succeeded."""
    if not packages:
        return True
    log("install: apt-get install -y " + " ".join(packages))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq"] + packages):
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        except OSError as exc:
            log("install: %s: %s" % (cmd[0], exc))
            return False
        if proc.returncode != 0:
            log("install: %s failed: %s" % (" ".join(cmd[:2]), proc.stderr.strip()[-300:]))
            return False
    return True


def resolve(allocators, oscar_lib, install, log):
    """Locate each allocator's library; returns the runnable ones and prints one
    `skip: <name>: <reason>` line for each of the others."""
    if install:
        missing = [a.package for a in allocators
                   if a.lib not in (None, OSCAR, MARKUS, DELAYFREE) and a.package
                   and not _locate(a.lib, oscar_lib)]
        apt_install(sorted(set(missing)), log)
    ready = []
    for a in allocators:
        if a.lib is None:
            ready.append(Resolved(a.name, None, dict(a.env), False, a.note))
            continue
        path = _locate(a.lib, oscar_lib)
        if path is None:
            if a.lib is OSCAR:
                why = "liboscar.so not found at %s (build the project first)" % oscar_lib
            elif a.lib is MARKUS:
                why = ("%s not found (its source is not in Debian: bench/build_markus.sh SRC "
                       "<build>/markus, or set OSCAR_MARKUS_LIB)" % markus_lib(oscar_lib))
            elif a.lib is DELAYFREE:
                why = "bench/shims/libdelayfree.so not built (build the project first)"
            elif a.package:
                why = "%s not found (Debian package %s; rerun with --install)" % (a.lib, a.package)
            else:
                why = "%s does not exist" % a.lib
            log("skip: %s: %s" % (a.name, why))
            continue
        is_oscar = a.lib is OSCAR or os.path.basename(path).startswith("liboscar")
        ready.append(Resolved(a.name, path, dict(a.env), is_oscar, a.note))
    return ready
