#!/usr/bin/env python3
"""oscar symbolize: resolve the frames of a saved Oscar report offline.

    oscar symbolize [--debug-dir DIR]... [--path-map OLD=NEW]... [--force] < report.txt

Reads a report (or a whole stderr log) on standard input and writes it back with every frame
line `    #N 0xPC [in FUNCTION ](MODULE+0xOFFSET)` that has no FILE:LINE yet resolved by addr2line
(binutils) from MODULE at OFFSET: `    #N 0xPC in FUNCTION FILE:LINE (MODULE+0xOFFSET)`, one line
per inlined function (innermost first, the same pc), numbers of the stack renumbered. Frames that
already name a file and line are kept as they are (--force resolves them again). Every other line
is copied unchanged.

Where the module lives elsewhere now (a report from another machine or build directory),
--path-map OLD=NEW rewrites the start of its path; --debug-dir DIR also looks for DIR/<module
path> and DIR/<module file name> (a separately saved unstripped copy). A module that cannot be
found or read, or a missing addr2line, leaves its frames unchanged (the reason goes to stderr
once). Exit status 0, or 2 for a usage error.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

# (FUNCTION may have spaces: a demangled C++ name, `Foo::bar(int) const`.)
FRAME = re.compile(r"^(?P<indent>\s*)#(?P<n>\d+) (?P<pc>0x[0-9a-f]+) (?:in (?P<func>.+?) )?"
                   r"(?:(?P<file>\S+):(?P<line>\d+) )?\((?P<module>[^()+]+)\+(?P<off>0x[0-9a-f]+)\)\s*$")
# The header of an access stack: its frame #0 is the faulting instruction, not a return address.
ACCESS_HEADER = re.compile(r"^(READ|WRITE) by thread \d+ here:$")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="oscar symbolize", description=__doc__.split("\n\n")[1])
    p.add_argument("--debug-dir", action="append", default=[], help="look for modules here too")
    p.add_argument("--path-map", action="append", default=[], metavar="OLD=NEW",
                   help="rewrite module paths starting with OLD")
    p.add_argument("--force", action="store_true", help="resolve frames that have FILE:LINE too")
    p.add_argument("--addr2line", default=os.environ.get("ADDR2LINE") or shutil.which("addr2line"),
                   help="the addr2line to run (default: from PATH)")
    args = p.parse_args(argv)
    for m in args.path_map:
        if "=" not in m:
            p.error("--path-map takes OLD=NEW, not %r" % m)
    return args


def locate(module, args):
    """The file to read for module (after --path-map and --debug-dir), or None."""
    candidates = [module]
    for m in args.path_map:
        old, new = m.split("=", 1)
        if module.startswith(old):
            candidates.insert(0, new + module[len(old):])
    for d in args.debug_dir:
        candidates.append(os.path.join(d, module.lstrip("/")))
        candidates.append(os.path.join(d, os.path.basename(module)))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.R_OK):
            return c
    return None


def resolve(addr2line, path, addresses):
    """{address: [(function, file, line), ...] innermost first} from one addr2line run."""
    if not addresses:
        return {}
    cmd = [addr2line, "-a", "-f", "-i", "-C", "-e", path] + ["0x%x" % a for a in addresses]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.splitlines()
    result, current, i = {}, None, 0
    while i < len(out):
        line = out[i]
        if re.fullmatch(r"0x[0-9a-f]+", line):
            current = int(line, 16)
            result[current] = []
            i += 1
            continue
        if current is None or i + 1 >= len(out):
            break
        func, loc = line, out[i + 1].split(" (discriminator")[0]
        file, _, num = loc.rpartition(":")
        result[current].append((None if func == "??" else func,
                                None if file in ("", "??") or not num.isdigit() or num == "0" else file,
                                int(num) if num.isdigit() else 0))
        i += 2
    return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    lines = sys.stdin.read().splitlines()
    # First pass: which (module, address) pairs need resolving.
    frames = []  # (index in lines, match, lookup address)
    exact = False
    for i, line in enumerate(lines):
        if ACCESS_HEADER.match(line):
            exact = True
            continue
        m = FRAME.match(line)
        if not m:
            exact = False
            continue
        off = int(m.group("off"), 16)
        first = m.group("n") == "0"
        # Return addresses point after the call: look up the call itself.
        frames.append((i, m, off if (exact and first) else max(off - 1, 0)))
    wanted = {}
    for _, m, at in frames:
        if args.force or not m.group("file"):
            wanted.setdefault(m.group("module"), set()).add(at)
    resolved, warned = {}, set()
    if wanted and not args.addr2line:
        sys.stderr.write("oscar symbolize: addr2line (binutils) is not installed: frames left as they are\n")
        wanted = {}
    for module, addrs in wanted.items():
        path = locate(module, args)
        if not path:
            if module not in warned:
                sys.stderr.write("oscar symbolize: cannot read %s: its frames are left as they are\n" % module)
                warned.add(module)
            continue
        for a, entries in resolve(args.addr2line, path, sorted(addrs)).items():
            resolved[(module, a)] = entries
    # Second pass: write, renumbering each stack.
    by_line = {i: (m, at) for i, m, at in frames}
    number = 0
    out = []
    for i, line in enumerate(lines):
        if i not in by_line:
            number = 0
            out.append(line)
            continue
        m, at = by_line[i]
        entries = resolved.get((m.group("module"), at))
        if not entries or not any(f or file for f, file, _ in entries):
            out.append(line[:m.start("n")] + str(number) + line[m.end("n"):])
            number += 1
            continue
        for k, (func, file, num) in enumerate(entries):
            # addr2line's names are demangled; the report's symbol-table name is the fallback
            # for the outermost frame.
            name = func or (m.group("func") if k == len(entries) - 1 else None)
            text = "%s#%d %s " % (m.group("indent"), number, m.group("pc"))
            if name:
                text += "in %s " % name
            if file:
                text += "%s:%d " % (file, num)
            text += "(%s+%s)" % (m.group("module"), m.group("off"))
            out.append(text)
            number += 1
    sys.stdout.write("\n".join(out) + ("\n" if out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
