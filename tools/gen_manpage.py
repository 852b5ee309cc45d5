#!/usr/bin/env python3
"""Generate the manual page oscar(1) at build time.

    gen_manpage.py --template docs/oscar.1.in --options src/base/options.def
                   --interfaces docs/interfaces.md --version 0.1.0 --libdir /usr/lib/...
                   --out build/cli/oscar.1 [--gzip build/cli/oscar.1.gz]

The OPTIONS and MODES sections come from the options table (src/base/options.def, the rows
the library parses and `oscar run` turns into flags: OSCAR_STACK_DEPTH is --stack-depth), the
MESSAGES section from the reports table and the warnings list of docs/interfaces.md. The rest
of the page is the template's prose, with @OPTIONS@, @MODES@, @MESSAGES@, @VERSION@ and
@LIBDIR@ replaced. Nothing here lists a setting by hand.
"""

import argparse
import gzip
import re
import sys


# --- src/base/options.def ------------------------------------------------------------------

def strip_comments(text):
    """Remove C comments, leaving string literals alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            i = text.index("*/", i + 2) + 2
            out.append(" ")
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_args(body):
    """Top-level comma-separated arguments of a macro call (strings may hold commas)."""
    args, cur, depth, i = [], [], 0, 0
    while i < len(body):
        c = body[i]
        if c == '"':
            j = i + 1
            while body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            cur.append(body[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    args.append("".join(cur).strip())
    return args


def c_value(arg):
    """A C argument: adjacent string literals joined, NULL as None, integers as int."""
    if arg.startswith('"'):
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
        return "".join(bytes(p, "utf-8").decode("unicode_escape") for p in parts)
    if arg == "NULL":
        return None
    if re.fullmatch(r"-?\d+[lLuU]*", arg):
        return int(arg.rstrip("lLuU"))
    return arg


def read_options(path):
    text = strip_comments(open(path, encoding="utf-8").read())
    rows = []
    for m in re.finditer(r"\bOSCAR_OPTION\s*\(", text):
        depth, i = 1, m.end()
        start = i
        while depth:
            c = text[i]
            if c == '"':
                i += 1
                while text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
        args = [c_value(a) for a in split_args(text[start:i - 1])]
        if len(args) != 8:
            sys.exit("gen_manpage: %s: a row with %d fields, not 8: %r" % (path, len(args), args))
        ident, env, kind, default, lo, hi, choices, desc = args
        rows.append(dict(id=ident, env=env, kind=kind, default=default, min=lo, max=hi,
                         choices=choices.split("|") if choices else None, desc=desc))
    if not rows:
        sys.exit("gen_manpage: no OSCAR_OPTION rows in %s" % path)
    return rows


def flag_name(env):
    """The `oscar run` option of a setting (the same rule as cli/oscar.c's flag_name)."""
    name = env[len("OSCAR_"):] if env.startswith("OSCAR_") else env
    return name.lower().replace("_", "-")


# --- troff ---------------------------------------------------------------------------------

def esc(text):
    """Plain text to troff: backslashes, hyphens, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text[:1] in (".", "'"):
        text = "\\&" + text
    return text


def md_inline(text):
    """Markdown inline text (`code`, **bold**) to troff."""
    out = []
    for i, part in enumerate(re.split(r"`([^`]*)`", text)):
        if i % 2:
            out.append("\\fB" + esc(part) + "\\fR")
        else:
            part = esc(part)
            part = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fR", part)
            out.append(part)
    line = "".join(out)
    if line[:1] in (".", "'"):
        line = "\\&" + line
    return line


def default_text(row):
    if row["kind"] == "STRING":
        return "unset"
    if row["kind"] == "CHOICE" and isinstance(row["default"], int) \
            and 0 <= row["default"] < len(row["choices"]):
        return row["choices"][row["default"]]
    return str(row["default"])


def values_text(row):
    if row["kind"] == "STRING":
        return "a path"
    if row["kind"] == "CHOICE":
        return ", ".join(row["choices"])
    if row["kind"] == "BOOL":
        return "0 or 1"
    return "%s to %s" % (row["min"], row["max"])


def options_section(rows):
    lines = []
    for row in rows:
        flag = flag_name(row["env"])
        if row["kind"] == "BOOL":
            head = "\\fB\\-\\-%s\\fR, \\fB\\-\\-no\\-%s\\fR" % (esc(flag), esc(flag))
        elif row["kind"] == "CHOICE":
            head = "\\fB\\-\\-%s\\fR=%s" % (esc(flag), "|".join(
                "\\fB%s\\fR" % esc(c) for c in row["choices"]))
        elif row["kind"] == "STRING":
            head = "\\fB\\-\\-%s\\fR=\\fIPATH\\fR" % esc(flag)
        else:
            head = "\\fB\\-\\-%s\\fR=\\fIN\\fR" % esc(flag)
        lines += [".TP", head,
                  "Sets \\fB%s\\fR (default %s; %s)." % (esc(row["env"]), esc(default_text(row)),
                                                           esc(values_text(row))),
                  esc(row["desc"][:1].upper() + row["desc"][1:]) + "."]
    return "\n".join(lines)


def modes_section(rows):
    lines = []
    for row in rows:
        if row["kind"] != "CHOICE" or row["env"] != "OSCAR_MODE":
            continue
        lines.append("Chosen with \\fB\\-\\-%s\\fR=\\fINAME\\fR or \\fB%s\\fR=\\fINAME\\fR; "
                     "the default is \\fB%s\\fR. The modes are %s."
                     % (esc(flag_name(row["env"])), esc(row["env"]), esc(default_text(row)),
                        ", ".join("\\fB%s\\fR" % esc(c) for c in row["choices"])))
        # The description reads "name: what it does; name: ..." when it names each mode.
        parts = [p.strip() for p in re.split(r";\s+(?=(?:%s):)" % "|".join(
            re.escape(c) for c in row["choices"]), row["desc"])]
        for p in parts:
            m = re.match(r"(%s):\s*(.*)" % "|".join(re.escape(c) for c in row["choices"]), p,
                         re.S)
            if m:
                lines += [".TP", "\\fB%s\\fR" % esc(m.group(1)), esc(m.group(2)) + "."]
            else:
                lines += [".PP", esc(p) + "."]
    if not lines:
        lines.append("Oscar has one mode (no OSCAR_MODE row in the options table).")
    return "\n".join(lines)


# --- docs/interfaces.md --------------------------------------------------------------------

def table_rows(lines):
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if cells and all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        rows.append(cells)
    return rows


def messages_section(path):
    try:
        text = open(path, encoding="utf-8").read()
    except OSError as e:
        print("gen_manpage: warning: %s: %s" % (path, e), file=sys.stderr)
        return "See docs/interfaces.md in the source."
    lines = text.splitlines()
    out = []
    # The messages table: the first table whose header starts with "first line"; its last
    # column says when, the ones between what happens then ("then", "signal").
    for i, line in enumerate(lines):
        if line.startswith("|") and line.strip("| ").lower().startswith("first line"):
            rows = table_rows(lines[i:])
            header, body = rows[0], rows[1:]
            out.append("Each message's first line is stable and can be searched for. Under "
                       "it: when the line is printed, then what happens.")
            for cells in body:
                when = md_inline(cells[-1])
                if when and not cells[-1].rstrip("`*").endswith("."):
                    when += "."
                rest = "; ".join("%s: %s" % (h[:1].upper() + h[1:], md_inline(c))
                                 for h, c in zip(header[1:-1], cells[1:-1]))
                out += [".TP", md_inline(cells[0]),
                        (when[:1].upper() + when[1:] + " " + rest + ".").strip()]
            break
    # A list of warnings, where the document has one apart from the table.
    for i, line in enumerate(lines):
        items = []
        for item in lines[i + 1:]:
            if not item.startswith("- "):
                break
            items.append(item[2:])
        if line.startswith("Warnings") and items:
            out += [".PP", md_inline(line.rstrip(":")) + ":"]
            for item in items:
                out += [".IP \\(bu 2", md_inline(item)]
            break
    if not out:
        print("gen_manpage: warning: no messages table in %s" % path, file=sys.stderr)
        return "See docs/interfaces.md in the source."
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--template", required=True)
    ap.add_argument("--options", required=True)
    ap.add_argument("--interfaces", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--gzip", help="also write a gzip-compressed copy here (reproducible)")
    a = ap.parse_args()
    rows = read_options(a.options)
    page = open(a.template, encoding="utf-8").read()
    subst = {"@OPTIONS@": options_section(rows), "@MODES@": modes_section(rows),
             "@MESSAGES@": messages_section(a.interfaces), "@VERSION@": esc(a.version),
             "@LIBDIR@": esc(a.libdir)}
    for key, value in subst.items():
        page = page.replace(key, value)
    left = re.findall(r"@[A-Z]+@", page)
    if left:
        sys.exit("gen_manpage: %s: unknown placeholders %s" % (a.template, left))
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(page)
    if a.gzip:
        with open(a.gzip, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
                f.write(page.encode("utf-8"))


if __name__ == "__main__":
    main()
