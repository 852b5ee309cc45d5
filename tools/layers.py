#!/usr/bin/env python3
"""Check src/'s layer rule and print the structure's figures.

The layers and their order come from src/README.md (the line starting "Layers, bottom to
top:"), so there is one list. Each file under src/<layer>/ may include only headers of its own
layer or of a layer below it, written as "layer/file.h". Prints: files, layers, include arrows
between files, arrows that point up, and include cycles (between files and between layers).
Exit status 1 if any arrow points up, any include is not of the "layer/file" form, or there is
a cycle.

    python3 tools/layers.py            # figures and violations
    python3 tools/layers.py --json     # the same as JSON
    python3 tools/layers.py --at REV   # include figures of an older tree (git), e.g. one
                                       # from before src/ had layers: files, arrows, cycles
"""
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A function declared at the start of a line of a header, and one defined in a .c file.
DECLARED = re.compile(r'^(?!static|typedef|extern "|#|struct \w+ \{|enum|\s)(?:[\w \*]|__attribute__\(\([^)]*\)\))+?\b(\w+)\s*\([^;{)]*(?:\([^)]*\)[^;{)]*)*\)\s*;', re.M)
DEFINED = re.compile(r'^(?!static)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{', re.M)


def layer_order():
    text = (SRC / "README.md").read_text()
    m = re.search(r"^Layers, bottom to top:\s*(.+)$", text, re.M)
    if not m:
        sys.exit("src/README.md: no line 'Layers, bottom to top: ...'")
    return [w.strip(" `.") for w in m.group(1).split(",")]


def sources():
    return sorted(p for p in SRC.rglob("*") if p.is_file() and p.suffix in (".c", ".h", ".def"))


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan), plus self-loops."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def analyse():
    order = layer_order()
    rank = {name: i for i, name in enumerate(order)}
    files = sources()
    problems, arrows, up = [], [], []
    graph, layer_graph = {}, {}
    for path in files:
        rel = path.relative_to(SRC).as_posix()
        if "/" not in rel:
            problems.append(f"src/{rel}: not inside a layer folder")
            continue
        layer = rel.split("/")[0]
        if layer not in rank:
            problems.append(f"src/{rel}: folder '{layer}' is not a layer of src/README.md")
            continue
        graph.setdefault(rel, set())
        for inc in INCLUDE.findall(path.read_text()):
            if inc.startswith("../../include/"):
                continue  # the public header, include/oscar.h
            target = SRC / inc
            if "/" not in inc or not target.is_file():
                problems.append(f"src/{rel}: include \"{inc}\" is not of the form \"layer/file\"")
                continue
            to_layer = inc.split("/")[0]
            arrows.append((rel, inc))
            graph[rel].add(inc)
            if to_layer != layer:
                layer_graph.setdefault(layer, set()).add(to_layer)
            if rank.get(to_layer, len(order)) > rank[layer]:
                up.append((rel, inc))
    # A hidden arrow up: a function declared in one layer's header but defined in a higher
    # layer's file (the call looks local, the code is not).
    defined_in = {}
    for path in files:
        if path.suffix == ".c":
            for name in DEFINED.findall(path.read_text()):
                defined_in.setdefault(name, path.relative_to(SRC).as_posix())
    for path in files:
        if path.suffix != ".h":
            continue
        rel = path.relative_to(SRC).as_posix()
        layer = rel.split("/")[0]
        for name in DECLARED.findall(path.read_text()):
            where = defined_in.get(name)
            if where and rank.get(where.split("/")[0], -1) > rank.get(layer, len(order)):
                up.append((rel, f"{where} (declares {name}, defined above)"))
    file_cycles = cycles(graph)
    layer_cycles = cycles(layer_graph)
    return {
        "layers": order,
        "files": len([f for f in files if f.suffix in (".c", ".h")]),
        "files_per_layer": {l: len([f for f in files if f.relative_to(SRC).parts[0] == l
                                    and f.suffix in (".c", ".h")]) for l in order},
        "include_arrows": len(arrows),
        "arrows_up": [f"src/{a} -> src/{b}" for a, b in up],
        "file_cycles": file_cycles,
        "layer_cycles": layer_cycles,
        "problems": problems,
    }


def figures_at(rev):
    """Files, include arrows and include cycles of src/ at a git revision (any layout)."""
    import subprocess
    names = subprocess.run(["git", "-C", str(REPO), "ls-tree", "-r", "--name-only", rev, "src"],
                           capture_output=True, text=True, check=True).stdout.split()
    names = [n for n in names if n.endswith((".c", ".h", ".def"))]
    by_base = {}
    for n in names:
        by_base.setdefault(n.split("/")[-1], n)
    graph, arrows, lines = {}, 0, 0
    for n in names:
        text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{n}"],
                              capture_output=True, text=True, check=True).stdout
        lines += text.count("\n")
        graph.setdefault(n, set())
        for inc in INCLUDE.findall(text):
            target = "src/" + inc if "src/" + inc in names else by_base.get(inc.split("/")[-1])
            if target and target != n:
                graph[n].add(target)
                arrows += 1
    cyc = cycles(graph)
    # Modules: a .c and its .h are one (what calls between files amount to).
    mod = lambda n: n.rsplit(".", 1)[0]
    mgraph = {}
    for a, tos in graph.items():
        mgraph.setdefault(mod(a), set()).update(mod(b) for b in tos if mod(b) != mod(a))
    mcyc = cycles(mgraph)
    # Arrows that point up under today's layers (each file placed by its name today).
    order = layer_order()
    today = {p.name: p.relative_to(SRC).parts[0] for p in sources() if len(p.relative_to(SRC).parts) > 1}
    rank = {l: i for i, l in enumerate(order)}
    up = sum(1 for a, tos in graph.items() for b in tos
             if a.split("/")[-1] in today and b.split("/")[-1] in today
             and rank[today[b.split("/")[-1]]] > rank[today[a.split("/")[-1]]])
    print(f"at {rev}: module cycles {len(mcyc)} (largest {max((len(c) for c in mcyc), default=0)} "
          f"modules of {len(mgraph)}), include arrows that point up under today's layers {up}")
    print(f"at {rev}: files {len([n for n in names if not n.endswith('.def')])}, lines {lines}, "
          f"folders {len({n.rsplit('/', 1)[0] for n in names})}, include arrows {arrows}, "
          f"include cycles {len(cyc)} (largest {max((len(c) for c in cyc), default=0)} files)")
    for c in cyc:
        print("  ", " ".join(c))


def main():
    if "--at" in sys.argv:
        figures_at(sys.argv[sys.argv.index("--at") + 1])
        return
    r = analyse()
    if "--json" in sys.argv:
        print(json.dumps(r, indent=2))
    else:
        print("layers (bottom to top):", ", ".join(r["layers"]))
        print("files:", r["files"], " per layer:",
              ", ".join(f"{k} {v}" for k, v in r["files_per_layer"].items()))
        print("include arrows between files:", r["include_arrows"])
        print("arrows up:", len(r["arrows_up"]))
        for a in r["arrows_up"]:
            print("  ", a)
        print("include cycles between files:", len(r["file_cycles"]))
        for c in r["file_cycles"]:
            print("  ", " ".join(c))
        print("include cycles between layers:", len(r["layer_cycles"]))
        for c in r["layer_cycles"]:
            print("  ", " ".join(c))
        for p in r["problems"]:
            print("problem:", p)
    bad = r["arrows_up"] or r["file_cycles"] or r["layer_cycles"] or r["problems"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
