#!/usr/bin/env python3
"""Check that src/ keeps its mutable state grouped (docs/architecture.md, "State").

A file's mutable state lives in one struct named for it, `<name>_state` (`static struct {
... } reclaim_state;`, or a `struct <name>_state` declared in the file's header when other
files read it), each field commented with who writes it and under which lock. This script
reads every .c file under src/, lists its file-scope object definitions and sorts them:

  grouped  a struct whose name ends in `_state`
  tls      a `__thread` / `_Thread_local` variable (per thread, kept as it is: the struct's
           comment names them)
  shared   a global that other files read through their header (`extern` there, with a
           comment saying who writes it), kept by name: `oscar_region`, `oscar_stats`, ...
  apart    a mutable object APART below names, with why it cannot be in the struct
  loose    any other file-scope object that is not const: what the rule forbids

Each field of a grouped struct must be covered by a comment: on its line, or a comment block
right above it (a run of fields without a blank line shares the block above it).

A `static` object inside a function is state too and is sorted the same way. Constants
(`static const T x`, `T *const x`), functions, prototypes, typedefs and `extern`
declarations are not state here. Exit status 1 if a file gains a
loose global, unless the file is in ALLOWED below (files being changed by others today; each
entry names why); a file of ALLOWED that no longer has any loose global gets a note saying it
can leave the list.

    python3 tools/state.py             # per file: grouped, tls, loose; then the totals
    python3 tools/state.py --loose     # every loose global, one per line (file:line name)
    python3 tools/state.py --json
    python3 tools/state.py --at REV    # the same figures for a git revision's src/
"""
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"

# Files that still hold loose globals, each with why: they are being reworked elsewhere
# (issue 19 item 4 left them for later). Remove an entry when its file is converted.
ALLOWED = {
}

DIRECTIVE = re.compile(r"[ \t]*#")
# Objects that stay apart from their file's struct, each with why.
APART = {
    ("heap/thread.c", "empty_cache"): "a sentinel: its address is a new thread's oscar_tc; "
                                      "nothing writes it, and struct thread_cache ends in a "
                                      "flexible array, which cannot be a member",
    ("heap/thread.c", "dead_cache"): "a sentinel, as empty_cache",
    ("export/export_signal.c", "slot (in a function)"): "sigwait's cache of the next "
        "definition (dlsym), as the NEXT macro's: one per wrapper, set once with release",
    ("export/fork.c", "slot (in a function)"): "_Fork's and clone's caches of libc's "
        "definition (libc_fn), one per wrapper, set once with release",
    ("scan/roots.c", "own_marker"): "a marker, not state: its address lies in liboscar.so's "
        "initialised .data (set to 1), which is how a walk finds the library's own writable "
        "mappings; in roots_state (all zero, .bss) it would no longer be there",
}

KEYWORDS = {"static", "extern", "const", "volatile", "inline", "register", "restrict",
            "_Atomic", "__thread", "_Thread_local", "struct", "union", "enum", "unsigned",
            "signed", "int", "char", "long", "short", "float", "double", "void", "bool",
            "_Bool", "sizeof", "__typeof__", "typeof", "_Noreturn"}


def strip(text):
    """The text with comments, string and character literals blanked and preprocessor lines
    removed; newlines are kept so that offsets still give line numbers."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and DIRECTIVE.match(text, i):
            # a preprocessor line, with its continuations
            while i < n:
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                if text[i] == "\n":
                    break
                if text.startswith("/*", i):  # a comment inside a directive
                    j = text.find("*/", i + 2)
                    j = n if j < 0 else j + 2
                    out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
                    i = j
                    continue
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
            at_line_start = False
            continue
        out.append(c)
        if c == "\n":
            at_line_start = True
        elif c not in " \t":
            at_line_start = False
        i += 1
    return "".join(out)


def closing(s, i, open_c, close_c):
    """Index of the close_c that closes the open_c at s[i] (len(s) if none does)."""
    depth = 0
    for k in range(i, len(s)):
        if s[k] == open_c:
            depth += 1
        elif s[k] == close_c:
            depth -= 1
            if depth == 0:
                return k
    return len(s)


def drop_attributes(s):
    """Remove __attribute__((...)), _Alignas(...), alignas(...) with balanced parentheses."""
    while True:
        m = re.search(r"\b(__attribute__|_Alignas|alignas|__extension__)\b\s*", s)
        if not m:
            return s
        j = m.end()
        if m.group(1) == "__extension__" or j >= len(s) or s[j] != "(":
            s = s[:m.start()] + s[j:]
            continue
        k = closing(s, j, "(", ")")
        s = s[:m.start()] + " " + s[k + 1:]


def top_level_statements(code, bodies=None):
    """(line, text) of each statement at file scope; function bodies are skipped (appended
    to `bodies` as (line, text) if given), the braces of a struct body or an initializer are
    kept in the statement."""
    stmts, buf, depth, start = [], [], 0, None
    line = 1
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "\n":
            line += 1
        if depth == 0:
            if start is None and not c.isspace():
                start = line
            if c == ";":
                stmts.append((start, "".join(buf)))
                buf, start = [], None
                i += 1
                continue
            if c == "{":
                head = drop_attributes("".join(buf)).rstrip()
                if head.endswith(")") and "=" not in head:
                    # a function definition: skip its body
                    body_at, body_line = i, line
                    i = closing(code, i, "{", "}")
                    line += code.count("\n", body_at, i)
                    if bodies is not None:
                        bodies.append((body_line, code[body_at:i + 1]))
                    buf, start = [], None
                    i += 1
                    continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        buf.append(c)
        i += 1
    return stmts


def split_top(s, sep):
    """s split on sep where no (), [] or {} is open."""
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def without_braces(s):
    """s with every {...} (struct bodies, initializers) reduced to {}."""
    out, depth = [], 0
    for c in s:
        if c == "{":
            if depth == 0:
                out.append("{}")
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def matching_open(s, end):
    """Index of the bracket that opens the one closing at s[end]."""
    close = s[end]
    open_ = {")": "(", "]": "["}[close]
    depth = 0
    for k in range(end, -1, -1):
        if s[k] == close:
            depth += 1
        elif s[k] == open_:
            depth -= 1
            if depth == 0:
                return k
    return 0


def declarator(d):
    """(name, text before the name) of a declarator, or None for a function's prototype."""
    # a prototype's trailing attribute macros: f(int) OSCAR_HIDDEN
    d = re.sub(r"\)\s*(?:[A-Z][A-Z0-9_]*\s*)+$", ")", d.strip())
    while True:
        d = d.rstrip()
        if d.endswith("]"):
            d = d[:matching_open(d, len(d) - 1)]
        elif d.endswith(")"):
            k = matching_open(d, len(d) - 1)
            inner, before = d[k + 1:-1], d[:k].rstrip()
            if inner.lstrip().startswith("*"):
                d = before + " " + inner  # (*name): grouping parentheses
            elif before.endswith(")") or before.endswith("]"):
                d = before  # the parameters of a function pointer
            else:
                return None  # name(parameters): a function
        else:
            break
    m = re.search(r"(\w+)$", d)
    if not m or m.group(1) in KEYWORDS:
        return None
    return m.group(1), d[:m.start()]


def objects(stmt, exported=frozenset()):
    """[(name, kind)] for the objects a file-scope statement defines; kind is 'grouped',
    'tls', 'loose' or 'const'. Empty for functions, prototypes, typedefs, externs and tag
    declarations."""
    s = without_braces(drop_attributes(stmt)).strip()
    words = re.findall(r"\w+", s)
    if not words or words[0] in ("typedef", "extern", "_Static_assert", "static_assert",
                                 "asm", "__asm__"):
        return []
    tls = "__thread" in words or "_Thread_local" in words
    parts = [split_top(p, "=")[0] for p in split_top(s, ",")]
    first = declarator(parts[0])
    if not first:
        return []
    spec = first[1]
    if "*" in spec or "(" in spec:
        spec = re.split(r"[*(]", spec, 1)[0]
    spec_words = re.findall(r"\w+", spec)
    if not spec_words:
        return []  # a bare tag declaration, "struct x {}"
    out = []
    for i, p in enumerate(parts):
        got = first if i == 0 else declarator(p)
        if not got:
            continue
        name, before = got
        ptr = before[len(spec):] if i == 0 else before
        if "*" in ptr:
            is_const = bool(re.search(r"\*\s*const\s*$", ptr))
        else:
            is_const = "const" in spec_words
        if tls:
            kind = "tls"
        elif is_const:
            kind = "const"
        elif name.endswith("_state") and ("struct" in spec_words or "union" in spec_words):
            kind = "grouped"
        elif "static" not in spec_words and name in exported:
            kind = "shared"
        else:
            kind = "loose"
        out.append((name, kind))
    return out


LOCAL_STATIC = re.compile(r"(?:^|[;{}])\s*(static\b[^;]*);", re.S)


def local_statics(bodies, exported):
    """(line, name, kind) of the static objects defined inside function bodies."""
    out = []
    for line, body in bodies:
        for m in LOCAL_STATIC.finditer(body):
            at = line + body.count("\n", 0, m.start(1))
            for name, kind in objects(m.group(1), exported):
                out.append((at, name, kind))
    return out


def exported_names(src):
    """Names declared `extern` in a header under src/."""
    names = set()
    for path in src.rglob("*.h"):
        for line, stmt in top_level_statements(strip(path.read_text())):
            s = without_braces(drop_attributes(stmt)).strip()
            if not s.startswith("extern") or s.startswith('extern "'):
                continue
            for p in split_top(s, ","):
                got = declarator(split_top(p, "=")[0])
                if got:
                    names.add(got[0])
    return names


def uncommented_fields(raw, code, line, stmt):
    """(line, text) of each field of a state struct's body that no comment covers: one on its
    own line, or a comment block right above it or above the fields it follows without a
    blank line."""
    open_at = stmt.find("{")
    if open_at < 0:
        return []
    depth, close_at = 0, -1
    for k in range(open_at, len(stmt)):
        if stmt[k] == "{":
            depth += 1
        elif stmt[k] == "}":
            depth -= 1
            if depth == 0:
                close_at = k
                break
    lead = len(stmt) - len(stmt.lstrip())  # `line` is that of the first non-blank
    first = line + stmt.count("\n", lead, open_at)   # the line of "{"
    last = line + stmt.count("\n", lead, close_at)   # the line of "}"
    raw_lines, code_lines = raw.split("\n"), code.split("\n")
    out, covered = [], False
    for n in range(first + 1, last):
        r, c = raw_lines[n - 1].strip(), code_lines[n - 1].strip()
        if not r:
            covered = False
        elif not c:
            covered = True  # a comment line
        elif r == c and not covered:
            out.append((n, c))
    return out


def analyse(src=SRC):
    files = {}
    exported = exported_names(src)
    problems = []
    for path in sorted(src.rglob("*.c")):
        rel = path.relative_to(src).as_posix()
        raw = path.read_text()
        code = strip(raw)
        entry = {"grouped": [], "shared": [], "tls": [], "apart": [], "loose": [], "const": []}
        bodies = []
        found = []
        for line, stmt in top_level_statements(code, bodies):
            for name, kind in objects(stmt, exported):
                found.append((line, name, kind))
                if kind == "grouped" and rel not in ALLOWED:
                    for n, text in uncommented_fields(raw, code, line, stmt):
                        problems.append(f"src/{rel}:{n}: a field of {name} without a comment "
                                        f"(who writes it, under which lock): {text}")
        # A static inside a function is state too (only its name's scope is smaller).
        found += [(line, name + " (in a function)", kind)
                  for line, name, kind in local_statics(bodies, exported)]
        for line, name, kind in found:
            if kind == "loose" and (rel, name) in APART:
                kind = "apart"
            entry[kind].append((line, name))
        files[rel] = entry
    for rel, e in files.items():
        if e["loose"] and rel not in ALLOWED:
            for line, name in e["loose"]:
                problems.append(f"src/{rel}:{line}: '{name}' is loose state: "
                                "put it in the file's <name>_state struct")
    notes = []
    for rel in ALLOWED:
        if rel not in files or not files[rel]["loose"]:
            notes.append(f"src/{rel} has no loose global: it can leave tools/state.py's ALLOWED")
    return files, problems, notes


def tree_at(rev, into):
    """src/ of a git revision, unpacked under `into`."""
    import subprocess
    import tarfile
    import io
    data = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"],
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        t.extractall(into)
    return Path(into) / "src"


def main():
    if "--at" in sys.argv:
        # The figures of an older tree (its problems are not this tree's: exit 0).
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            files, problems, notes = analyse(tree_at(sys.argv[sys.argv.index("--at") + 1], d))
        report(files, [], [])
        return
    files, problems, notes = analyse()
    report(files, problems, notes)
    sys.exit(1 if problems else 0)


def report(files, problems, notes):
    if "--json" in sys.argv:
        print(json.dumps({"files": files, "problems": problems}, indent=2))
    elif "--loose" in sys.argv:
        for rel, e in files.items():
            for line, name in e["loose"]:
                print(f"src/{rel}:{line} {name}")
    else:
        total = {k: 0 for k in ("grouped", "shared", "tls", "apart", "loose")}
        for rel, e in files.items():
            if not any(e[k] for k in total):
                continue
            for k in total:
                total[k] += len(e[k])
            tag = "  (allowed for now)" if rel in ALLOWED and e["loose"] else ""
            print(f"src/{rel}: grouped {len(e['grouped'])}, shared {len(e['shared'])}, "
                  f"tls {len(e['tls'])}, apart {len(e['apart'])}, "
                  f"loose {len(e['loose'])}{tag}"
                  + (": " + ", ".join(n for _, n in e["loose"]) if e["loose"] else ""))
        allowed = sum(len(files[r]["loose"]) for r in ALLOWED if r in files)
        print(f"total: grouped {total['grouped']}, shared {total['shared']}, tls {total['tls']}, "
              f"apart {total['apart']}, "
              f"loose {total['loose']} "
              f"(of which {allowed} in files allowed for now)")
    for n in notes:
        print("note:", n)
    for p in problems:
        print("problem:", p)


if __name__ == "__main__":
    main()
