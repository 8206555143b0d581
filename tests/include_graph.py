#!/usr/bin/python3
"""The include graph of airlock's source folders, for tests/layering.sh and docs/layers.md.

A module is one stem inside a folder: x.c (or x.cpp) with x.h and x_int.h; a header whose stem
has no source file is a module of its own (px_msg.h). Any file of module x that includes a
header of module y is an edge x -> y, recorded with the first include line that makes it.
Folders are nodes of the same kind one level up: base/x.c including "ca/y.h" is base -> ca.

The finer graph ("uses") has one node per source file and an edge x -> z when x.c names a
function that z.c defines (not static): a header shared by several files (px_client_int.h,
px_xchg_int.h, px_upstream_int.h) is split by who defines what it declares, so a cycle
hidden inside one module of the include graph shows. Comments and strings are skipped; a
definition is a line at column 0 ending in ") {" or followed by "{" (house style). It is a
reading of the text, not of the compiler's symbols: a function made by a macro is not seen.

  include_graph.py [--root DIR] --check KNOWN   compare the cycles with KNOWN (see below)
  include_graph.py [--root DIR] --cycles        print each cycle and the includes inside it
  include_graph.py [--root DIR] --text          the readable drawing (docs/layers.md)
  include_graph.py [--root DIR] --dot           Graphviz dot of the folders and of proxy/

KNOWN is a file of known cycles, one per line: "folder: module module ..." for the include
graph, "folder uses: file file ..." for the finer graph (file = source file without .c).
--check fails (exit 1) when a cycle is not listed, when a listed cycle grew (its modules are
in a larger cycle), and when a listed cycle no longer exists as written (it shrank or is gone:
remove or shorten the line, so the list never claims more debt than there is). Lines starting
with '#' and blank lines are ignored. Python 3 standard library only.
"""
import argparse
import os
import re
import sys

FOLDERS = ["base", "signing", "ca", "dns", "addons", "audit", "net", "http", "proxy", "app"]
DRAWN = "proxy"  # the folder whose modules docs/layers.md draws by layer
SOURCES = (".c", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(name, stems):
    """The module a file belongs to: x.c, x.h and x_int.h are module x."""
    stem = os.path.splitext(name)[0]
    if stem.endswith("_int") and stem[: -len("_int")] in stems:
        return stem[: -len("_int")]
    return stem


def scan(root):
    """Returns (modules, edges, folder_edges).

    modules: {folder: sorted list of modules}
    edges: {folder: {(a, b): "file:line"}} between modules of one folder, a != b
    folder_edges: {(fa, fb): "file:line"} between folders, fa != fb
    """
    modules, edges, folder_edges = {}, {}, {}
    for folder in FOLDERS:
        path = os.path.join(root, folder)
        files = sorted(f for f in os.listdir(path) if f.endswith(SOURCES + (".h",)))
        stems = {os.path.splitext(f)[0] for f in files if f.endswith(SOURCES)}
        mods = set()
        fedges = {}
        for f in files:
            a = module_of(f, stems)
            mods.add(a)
            with open(os.path.join(path, f), encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    where = "%s/%s:%d" % (folder, f, n)
                    tfolder, _, tname = inc.rpartition("/")
                    tfolder = tfolder or folder
                    if tfolder != folder:
                        if tfolder in FOLDERS:
                            folder_edges.setdefault((folder, tfolder), where)
                        continue
                    b = module_of(tname, stems)
                    if b != a:
                        fedges.setdefault((a, b), where)
        modules[folder] = sorted(mods)
        edges[folder] = fedges
    return modules, edges, folder_edges


TOKENS = re.compile(r"[A-Za-z_]\w*")
SKIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][^;{}()=#]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{",
                        re.M)
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof"}


def scan_uses(root, folder):
    """Returns (files, edges): the source files of folder (without extension) and
    {(x, z): "name"} where x names a function defined in z (one name, for the report)."""
    path = os.path.join(root, folder)
    texts, defs = {}, {}
    for f in sorted(os.listdir(path)):
        if not f.endswith(SOURCES):
            continue
        with open(os.path.join(path, f), encoding="utf-8", errors="replace") as fh:
            t = SKIP.sub(" ", fh.read())
        stem = os.path.splitext(f)[0]
        texts[stem] = t
        for m in DEFINITION.finditer(t):
            if m.group(1) not in KEYWORDS:
                defs.setdefault(m.group(1), stem)
    edges = {}
    for x, t in texts.items():
        for name in sorted(set(TOKENS.findall(t))):
            z = defs.get(name)
            if z and z != x:
                edges.setdefault((x, z), name)
    return sorted(texts), edges


def sccs(nodes, edges):
    """Strongly connected components (Tarjan, iterative), each a sorted list."""
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            for j in range(i, len(succ[v])):
                w = succ[v][j]
                if w not in index:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append(sorted(comp))
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
    return out


def ranks(nodes, edges):
    """Topological rank of the condensation: 0 for a component that includes nothing in the
    folder, else one more than the highest component it includes. Returns (rank, comp_of)."""
    comps = sccs(nodes, edges)
    comp_of = {n: tuple(c) for c in comps for n in c}
    succ = {c: set() for c in comp_of.values()}
    for (a, b) in edges:
        if comp_of[a] != comp_of[b]:
            succ[comp_of[a]].add(comp_of[b])
    rank = {}

    def visit(c):  # the condensation is a DAG and small: plain recursion is enough
        if c not in rank:
            rank[c] = 1 + max((visit(s) for s in succ[c]), default=-1)
        return rank[c]

    for c in succ:
        visit(c)
    return rank, comp_of


def graphs(root):
    """Every graph the ratchet watches: {key: (nodes, edges)}, key "folder" for the include
    graph of a folder's modules, "folder uses" for its finer graph; plus the folder graph."""
    modules, edges, folder_edges = scan(root)
    out = {}
    for folder in FOLDERS:
        out[folder] = (modules[folder], edges[folder])
        out[folder + " uses"] = scan_uses(root, folder)
    return out, folder_edges


def cycles(g):
    """[(key, [nodes])] for every component of more than one node, keys in FOLDERS order."""
    keys = [k for f in FOLDERS for k in (f, f + " uses")]
    return [(k, c) for k in keys for c in sccs(*g[k]) if len(c) > 1]


def inner_edges(g, key, comp):
    s = set(comp)
    return sorted((a, b, w) for (a, b), w in g[key][1].items() if a in s and b in s)


def edge_note(key, w):
    return "names %s()" % w if key.endswith(" uses") else w


def read_known(path):
    known = []
    keys = set(FOLDERS) | {f + " uses" for f in FOLDERS}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, rest = line.partition(":")
            key = " ".join(key.split())
            if not sep or key not in keys or not rest.split():
                sys.exit("include_graph: %s:%d: expected 'folder[ uses]: module module ...'"
                         % (path, n))
            known.append((key, sorted(rest.split())))
    return known


def check(g, known):
    """The ratchet: returns the list of complaints (empty: the cycles are exactly as known)."""
    found = cycles(g)
    bad = []
    for key, comp in found:
        mine = [k for f, k in known if f == key and set(k) <= set(comp)]
        if mine == [comp]:
            continue
        if not mine and any(f == key and set(comp) < set(k) for f, k in known):
            continue  # a known cycle that shrank: reported below
        bad.append("cycle in %s %s: %s" % (key, "grew" if mine else "is new", " ".join(comp)))
        if mine:
            bad.append("  known as: %s" % "; ".join(" ".join(k) for k in mine))
        for a, b, w in inner_edges(g, key, comp):
            bad.append("  %s -> %s  (%s)" % (a, b, edge_note(key, w)))
    for key, k in known:
        if (key, k) in found or any(f == key and set(k) < set(c) for f, c in found):
            continue  # as known, or reported above as grown
        now = "; ".join(" ".join(c) for f, c in found if f == key and set(c) & set(k))
        bad.append("known cycle in %s is gone or smaller: %s (now: %s); take it off the list "
                   "in tests/layering.sh" % (key, " ".join(k), now or "no cycle"))
    return bad


HEADER = """# Layers

Generated by `tests/include_graph.py`; regenerate with
`python3 tests/include_graph.py --text > docs/layers.md` after changing an include
(`tests/layering.sh` fails while this file is out of date; `--dot` draws the same graphs for
Graphviz).

A module is `x.c` with `x.h` and `x_int.h`; `a -> b` means a file of `a` includes a header
of `b`. Rank 0 includes nothing of its folder; rank n includes modules below rank n only.
A cycle (modules that include each other, directly or round a loop) is drawn as one node,
marked `CYCLE`; cycles are debt: `tests/layering.sh` lists the known ones and fails on a new
one, on one that grew, and on one that is gone but still listed.

The finer graph ("uses", one node per source file, `x -> z` when `x.c` names a function that
`z.c` defines) shows cycles that a shared `_int.h` hides inside one module; its cycles are
listed at the end and held by the same list.
"""


def text(g, folder_edges):
    out = HEADER.split("\n") + ["## Folders", "", "```"]
    frank, fcomp = ranks(FOLDERS, folder_edges)
    for f in FOLDERS:
        targets = [b for (a, b) in sorted(folder_edges) if a == f]
        out.append("rank %d  %-8s -> %s" % (frank[fcomp[f]], f, ", ".join(targets) or "(nothing)"))
    out += ["```", "", "## %s/ by layer" % DRAWN, "", "```"]
    nodes, fe = g[DRAWN]
    rank, comp_of = ranks(nodes, fe)
    for r in range(max(rank.values()) + 1):
        out.append("rank %d" % r)
        for c in sorted(c for c in set(comp_of.values()) if rank[c] == r):
            ind = "  "
            if len(c) > 1:
                out.append("  CYCLE { %s }" % " ".join(c))
                ind = "    "
            for m in c:
                targets = [b + ("*" if comp_of[b] == c else "") for (a, b) in sorted(fe) if a == m]
                out.append("%s%-16s -> %s" % (ind, m, ", ".join(targets) or "(nothing)"))
    out += ["```", "", "`*`: an include inside the cycle.", "", "## Cycles", "",
            "Each with the edges inside it (the include line, or a function named across "
            "files).", ""]
    for key, comp in cycles(g):
        out.append("- `%s`: %s" % (key, " ".join(comp)))
        for a, b, w in inner_edges(g, key, comp):
            out.append("  - %s -> %s (`%s`)" % (a, b, edge_note(key, w)))
    return "\n".join(out) + "\n"


def dot(g, folder_edges):
    out = ["digraph airlock {", "  rankdir=TB;", "  node [shape=box, fontname=monospace];",
           "  subgraph cluster_folders {", '    label="folders";']
    for f in FOLDERS:
        out.append('    "dir:%s" [label="%s/"];' % (f, f))
    for (a, b) in sorted(folder_edges):
        out.append('    "dir:%s" -> "dir:%s";' % (a, b))
    out += ["  }", "  subgraph cluster_%s {" % DRAWN, '    label="%s/ (red: a cycle)";' % DRAWN]
    nodes, fe = g[DRAWN]
    rank, comp_of = ranks(nodes, fe)
    for m in nodes:
        red = ", color=red" if len(comp_of[m]) > 1 else ""
        out.append('    "%s" [label="%s\\nrank %d"%s];' % (m, m, rank[comp_of[m]], red))
    for (a, b) in sorted(fe):
        out.append('    "%s" -> "%s"%s;' % (a, b, " [color=red]" if comp_of[a] == comp_of[b]
                                            else ""))
    out += ["  }", "}"]
    return "\n".join(out) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="KNOWN")
    mode.add_argument("--cycles", action="store_true")
    mode.add_argument("--text", action="store_true")
    mode.add_argument("--dot", action="store_true")
    args = ap.parse_args()
    g, folder_edges = graphs(args.root)
    if args.check:
        bad = check(g, read_known(args.check))
        for line in bad:
            print("layering: " + line)
        return 1 if bad else 0
    if args.cycles:
        for key, comp in cycles(g):
            print("%s: %s" % (key, " ".join(comp)))
            for a, b, w in inner_edges(g, key, comp):
                print("    %s -> %s  (%s)" % (a, b, edge_note(key, w)))
        return 0
    sys.stdout.write(text(g, folder_edges) if args.text else dot(g, folder_edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
