#!/usr/bin/env python3
"""The messages table (src/base/messages.def) as markdown, for the README and
docs/interfaces.md, and the check that both show it as it is.

    python3 tools/messages.py            # print the table
    python3 tools/messages.py --write    # rewrite the tables in README.md and docs/interfaces.md
    python3 tools/messages.py --check    # exit 1 if either is stale

The table sits between the lines BEGIN and END below in each file."""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEF = REPO / "src" / "base" / "messages.def"
DOCS = [REPO / "README.md", REPO / "docs" / "interfaces.md"]
BEGIN = "<!-- messages table: generated from src/base/messages.def by tools/messages.py -->"
END = "<!-- end of messages table -->"
STRING = r'"((?:[^"\\]|\\.)*)"'


def rows():
    text = DEF.read_text()
    out = []
    for m in re.finditer(r"^MESSAGE\((.*?)\)\s*$(?=\s*(?:MESSAGE|\Z))", text, re.M | re.S):
        body = m.group(1)
        ident, kind = [x.strip() for x in body.split(",", 2)[:2]]
        strings = []
        for part in re.findall(r'((?:' + STRING + r'\s*)+)', body):
            strings.append("".join(re.findall(STRING, part[0])))
        text_, doc, then, when = strings
        out.append(dict(id=ident, kind=kind, text=text_, doc=doc, then=then, when=when))
    return out


def markdown():
    lines = [BEGIN, "| first line | then | when |", "| --- | --- | --- |"]
    for r in rows():
        lines.append(f"| {r['doc']} | {r['then']} | {r['when']} |")
    lines.append(END)
    return "\n".join(lines)


def replaced(text):
    table = markdown()
    if BEGIN in text and END in text:
        a = text.index(BEGIN)
        b = text.index(END) + len(END)
        return text[:a] + table + text[b:]
    return None


def main():
    if "--write" in sys.argv or "--check" in sys.argv:
        stale = []
        for doc in DOCS:
            text = doc.read_text()
            new = replaced(text)
            if new is None:
                stale.append(f"{doc.relative_to(REPO)}: no generated messages table")
            elif new != text:
                if "--write" in sys.argv:
                    doc.write_text(new)
                else:
                    stale.append(f"{doc.relative_to(REPO)}: messages table is stale "
                                 "(run python3 tools/messages.py --write)")
        for s in stale:
            print(s)
        sys.exit(1 if stale else 0)
    print(markdown())


if __name__ == "__main__":
    main()
