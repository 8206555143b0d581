#!/usr/bin/env python3
"""The shape of the engine (issue 30): sizes, flags per struct, cross-file calls.

    shape.py sizes SRC [TOP]          largest .c files and functions, per folder
    shape.py flags SRC [TOP]          boolean flags per struct in net/ http/ proxy/ app/
    shape.py calls SRC OUT...         cross-file calls in callgrind output files
    shape.py calls-diff SRC A B [C]   the same for B - A (and C - B), by file pair
    shape.py summary SRC FIRST AGAIN TWO H2AGAIN H2TWO IDLE   the table of shape.sh's steps
    shape.py selftest                 checks the three analyses on a small fixture

SRC is a source tree (a checkout, or a `git archive` of one). Every .c and .h outside tests/,
build*/ and dot folders is read; nothing is compiled here (tests/bench/shape.sh builds and runs).

Sizes. A file's size is its line count (wc -l). A function is found the way tests/layering.sh
finds one in a clang-formatted tree (BreakBeforeBraces: Linux): a line starting at column 0
with a letter or '_' and holding '(' opens a signature; the signature is a definition when a
line that is exactly '{' follows before any line ending in ';'; the function ends at the next
line starting with '}'. Its size counts the lines from the signature's first line to the
closing brace, both included (layering.sh's "NR - start" is one less).

Flags. A field of a struct defined in net/ http/ proxy/ app/ (in a .c or a .h) is a boolean
flag when it is a plain scalar (no pointer, no array, no function pointer) and either
  (a) its type is bool/_Bool or it is a one-bit bit-field (`unsigned x : 1`), or
  (b) its type is int, unsigned, unsigned int, signed, short, char, uint8_t, int8_t or
      (u)int16/32_t, it is assigned at least once, and every assignment to it anywhere in the
      tree's sources (outside tests/) stores a 0/1 value: a constant 0, 1, true or false, a
      comparison (==, !=, <, <=, >, >=), a negation (!e), a && or || expression, a ternary
      whose two arms are 0/1 constants, another field that is itself a flag, or a field of
      its own name (fields stored only from each other and 0/1 values are flags: the greatest
      fixed point); and it is never incremented, decremented, compound-assigned (+= |= ...)
      nor has its address taken (&x->name).
This is the strict count. The loose count also accepts a store from a plain variable
(`r->paused = pause;`), which a textual check cannot prove to be 0/1: the strict count is a
lower bound, the loose one is nearer the truth for parameters that carry a yes/no.
An "assignment to it" is any `->name =` or `.name =` in the sources (including designated
initializers `.name = ...`); fields are told apart by name only, so a name shared by two structs
is judged by the assignments to both (a counter in one struct that shares its name with a flag
in another makes both non-flags: the count can be low, never high, for rule (b)). The check is
textual (regular expressions over comment-stripped source), not a compiler's: a macro that
assigns a field through token pasting, or a write through a pointer to the field obtained
without '&', is not seen. `shape.py selftest` runs it on a fixture that exercises each rule.

Calls. Reads callgrind output (any name compression) and counts the calls whose caller and
callee are functions of two different project files: files under SRC, not under tests/.
Library code (libc, OpenSSL, libuv, c-ares, nghttp2, llhttp compiled from /usr/share/llhttp,
libyaml, jansson) lives outside SRC and is never counted, and a call from the project into a
library that calls back into the project is not a project call either (callgrind records the
library as the caller of the callback). Calls between two .c files are the headline figure;
calls to or from a static inline function of a header (kept out of line by -fno-inline) in
another file are reported on their own line. A file's calls are told from its debug info:
paths that are not absolute (glibc's) or not a file of SRC are not the project's.
"""
import collections
import os
import re
import sys
import tempfile

ENGINE = ("net", "http", "proxy", "app")
MAIN_STRUCTS = ("px_client", "px_xchg", "px_upreq", "px_upconn", "px_engine", "px_ctx", "px_sandbox")
SKIP_DIRS = ("tests", ".git", ".ci")


def source_files(src, exts=(".c",)):
    """Yields (relative path, absolute path) of the sources outside tests/ and build dirs."""
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        if rel == ".":
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")
                             and not d.startswith("."))
        else:
            dirs.sort()
        for f in sorted(files):
            if f.endswith(exts):
                p = os.path.join(root, f)
                yield os.path.relpath(p, src), p


def read(p):
    with open(p, encoding="utf-8", errors="replace") as fh:
        return fh.read()


# ------------------------------------------------------------------------------------ sizes
SIG = re.compile(r"^[A-Za-z_].*\(")


def functions(text):
    """[(name, first line, lines)] of the function definitions in a clang-formatted .c."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if SIG.match(lines[i]) and not lines[i].rstrip().endswith(";"):
            start = i
            j = i
            while j < len(lines) and lines[j] != "{" and not lines[j].rstrip().endswith(";"):
                j += 1
            if j < len(lines) and lines[j] == "{":
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                head = " ".join(lines[start:j])
                m = re.search(r"([A-Za-z_]\w*)\s*\(", head)
                name = m.group(1) if m else "?"
                out.append((name, start + 1, k - start + 1))
                i = k + 1
                continue
            i = j + 1 if j > i else i + 1
            continue
        i += 1
    return out


def sizes(src, top=10):
    per_folder = collections.OrderedDict()
    files, funcs = [], []
    for rel, p in source_files(src):
        text = read(p)
        n = text.count("\n")
        folder = rel.split(os.sep)[0] if os.sep in rel else "."
        fs = functions(text)
        d = per_folder.setdefault(folder, {"files": 0, "lines": 0, "funcs": 0, "over100": 0,
                                           "maxfile": (0, ""), "maxfn": (0, "")})
        d["files"] += 1
        d["lines"] += n
        d["funcs"] += len(fs)
        d["maxfile"] = max(d["maxfile"], (n, rel))
        files.append((n, rel))
        for name, line, size in fs:
            d["over100"] += size > 100
            d["maxfn"] = max(d["maxfn"], (size, "%s:%d %s" % (rel, line, name)))
            funcs.append((size, rel, line, name))
    print("== sizes (.c outside tests/; function = signature line .. closing brace)")
    print("%-10s %5s %7s %6s %7s  %-40s %s" % ("folder", "files", "lines", "funcs", ">100ln",
                                              "largest file", "largest function"))
    for folder, d in per_folder.items():
        print("%-10s %5d %7d %6d %7d  %-40s %s" % (
            folder, d["files"], d["lines"], d["funcs"], d["over100"],
            "%s (%d)" % (d["maxfile"][1], d["maxfile"][0]),
            "%s (%d)" % (d["maxfn"][1], d["maxfn"][0])))
    eng = lambda rel: rel.split(os.sep)[0] in ENGINE
    ef = sorted((f for f in files if eng(f[1])), reverse=True)
    efn = sorted((f for f in funcs if eng(f[1])), reverse=True)
    print("engine (%s): %d files, %d lines, %d functions, %d over 100 lines, %d files over 800"
          % (" ".join(f + "/" for f in ENGINE), len(ef), sum(f[0] for f in ef), len(efn),
             sum(f[0] > 100 for f in efn), sum(f[0] > 800 for f in ef)))
    print("largest engine files:")
    for n, rel in ef[:top]:
        print("  %5d %s" % (n, rel))
    print("largest engine functions:")
    for size, rel, line, name in efn[:top]:
        print("  %5d %s:%d %s" % (size, rel, line, name))


# ------------------------------------------------------------------------------------ flags
def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    # string and char literals: their content could look like an assignment
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', '""', text)


STRUCT_OPEN = re.compile(r"\b(?:typedef\s+)?struct\s+(\w+)\s*\{")
INT_TYPES = {"int", "unsigned", "unsigned int", "signed", "signed int", "short", "unsigned short",
             "char", "unsigned char", "uint8_t", "int8_t", "uint16_t", "int16_t", "uint32_t",
             "int32_t"}
BOOL_TYPES = {"bool", "_Bool"}


def struct_bodies(text):
    """Yields (struct name, body) of each `struct NAME {...}` definition (nested ones included
    in their outer struct's body as well as on their own)."""
    for m in STRUCT_OPEN.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def fields(body, prefix=""):
    """[(name, kind, shown)] where kind is 'bool', 'bit1', 'int' or None (not a candidate) and
    shown names a nested struct's member through it (gath.on)."""
    out = []
    depth, start, decls = 0, 0, []
    for i, ch in enumerate(body):  # the declarations at depth 0
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            decls.append(body[start:i])
            start = i + 1
    for decl in decls:
        if "{" in decl:  # a nested struct or union: its members are this struct's
            inner = decl[decl.index("{") + 1:decl.rindex("}")]
            name = decl[decl.rindex("}") + 1:].strip()
            out += fields(inner, prefix + (name + "." if re.match(r"^\w+$", name) else ""))
            continue
        decl = " ".join(decl.split())
        if not decl or "(" in decl:
            continue
        decl = re.sub(r"^(?:const|volatile|_Atomic)\s+", "", decl)
        m = re.match(r"((?:unsigned|signed)\s+(?:int|char|short)|(?:unsigned|signed)|\w+)\s+(.*)$",
                     decl)
        if not m:
            continue
        typ, rest = m.group(1), m.group(2)
        for d in rest.split(","):
            d = d.strip()
            bm = re.match(r"^(\w+)\s*:\s*(\d+)$", d)
            if bm:
                out.append((bm.group(1), "bit1" if bm.group(2) == "1" else None,
                            prefix + bm.group(1)))
                continue
            nm = re.match(r"^(\w+)$", d)
            if not nm:  # a pointer, an array or anything else
                dm = re.match(r"^[*\s]*(\w+)", d)
                if dm:
                    out.append((dm.group(1), None, prefix + dm.group(1)))
                continue
            kind = "bool" if typ in BOOL_TYPES else "int" if typ in INT_TYPES else None
            out.append((nm.group(1), kind, prefix + nm.group(1)))
    return out


ASSIGN = re.compile(r"(?:->|\.)\s*(\w+)\s*(=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|<<=|>>=)(?!=)")
CHANGE = re.compile(r"(?:->|\.)\s*(\w+)\s*(?:\+\+|--)|(?:\+\+|--)\s*[\w\[\]]+(?:(?:->|\.)\w+)*"
                    r"(?:->|\.)(\w+)")
ADDR = re.compile(r"(?<!&)&(?!&)\s*\(?\s*[\w\[\]]+(?:(?:->|\.)\w+)*(?:->|\.)(\w+)\b(?!\s*(?:->|\.|\[|\())")


def unary_amp(text, i):
    """Whether the '&' at text[i] takes an address (not a binary and): what precedes it is an
    operator, an opening bracket, a comma or a keyword such as return."""
    j = i - 1
    while j >= 0 and text[j] in " \t\n":
        j -= 1
    if j < 0 or text[j] in "=(,;{}[?:!<>+-*/%|^~":
        return True
    m = re.search(r"(\w+)$", text[:j + 1])
    return bool(m and m.group(1) in ("return", "case", "sizeof"))
CONST01 = re.compile(r"^\(?\s*(?:0|1|0u|1u|0U|1U|true|false)\s*\)?$")
FIELD_RHS = re.compile(r"^\(?\s*[\w\[\]]+(?:(?:->|\.)\w+)*(?:->|\.)(\w+)\s*\)?$")


def rhs_at(text, i):
    """The expression after an '=' at text[i:], up to the ';', ',' or '}' that ends it at depth 0."""
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch in ";," and depth == 0:
            break
        j += 1
    return " ".join(text[i:j].split())


def rhs_is01(rhs, flags):
    """1: rhs stores 0 or 1; 0: it may not; a field name: it does if that field is a flag."""
    if CONST01.match(rhs):
        return 1
    r = rhs
    while r.startswith("(") and r.endswith(")") and balanced(r[1:-1]):
        r = r[1:-1].strip()
    if r.startswith("!") and not r.startswith("!="):
        return 1
    top = depth0(r)
    if re.search(r"==|!=|<=|>=|&&|\|\|", top) or re.search(r"(?<![<\-])<(?![<=])|(?<![>\-])>(?![>=])", top):
        if "?" not in top:
            return 1
    t = re.match(r"^(.*?)\?(.*):(.*)$", top)
    if t and "?" not in t.group(2):
        # a ternary at depth 0: its arms are read from the original text at the same offsets
        a, b = r[len(t.group(1)) + 1:len(t.group(1)) + 1 + len(t.group(2))], r[len(t.group(1)) + len(t.group(2)) + 2:]
        return int(bool(CONST01.match(a.strip()) and CONST01.match(b.strip())))
    fm = FIELD_RHS.match(r)
    if fm:
        return fm.group(1)
    if re.match(r"^[a-z_]\w*$", r):
        return VAR
    return 0


VAR = ("var",)  # a store from a plain variable: 0/1 only under --loose


def balanced(s):
    d = 0
    for ch in s:
        d += {"(": 1, ")": -1}.get(ch, 0)
        if d < 0:
            return False
    return d == 0


def depth0(s):
    """s with everything inside parentheses blanked out."""
    out, d = [], 0
    for ch in s:
        if ch == "(":
            d += 1
        elif ch == ")":
            d -= 1
            out.append(" ")
            continue
        out.append(ch if d == 0 else " ")
    return "".join(out)


def analyse_flags(src, loose=False):
    """{struct: [(field, kind, is_flag, why)]} for the structs of the engine's folders."""
    texts = {rel: strip_comments(read(p)) for rel, p in source_files(src, (".c", ".h"))}
    structs = collections.OrderedDict()
    for rel, text in texts.items():
        if rel.split(os.sep)[0] not in ENGINE:
            continue
        for name, body in struct_bodies(text):
            if name in structs:
                continue
            structs[name] = (rel, fields(body))
    stores = collections.defaultdict(list)  # field name -> [rhs or None for a non-plain store]
    for rel, text in texts.items():
        for m in ASSIGN.finditer(text):
            if m.group(2) != "=":
                stores[m.group(1)].append(None)
            else:
                stores[m.group(1)].append(rhs_at(text, m.end()))
        for m in CHANGE.finditer(text):
            stores[m.group(1) or m.group(2)].append(None)
        for m in ADDR.finditer(text):
            if unary_amp(text, m.start()):
                stores[m.group(1)].append(None)
    cand = {f for _, fs in structs.values() for f, k, _ in fs if k == "int"}
    typed = {f for _, fs in structs.values() for f, k, _ in fs if k in ("bool", "bit1")}
    verdict = {}
    for f in cand:
        vals = stores.get(f, [])
        if not vals:
            verdict[f] = (0, "never assigned")
        elif any(v is None for v in vals):
            verdict[f] = (0, "counted, compound-assigned or address taken")
        else:
            verdict[f] = ([rhs_is01(v, None) for v in vals], "")
    changed = True
    while changed:  # fields stored from other fields: a fixed point
        changed = False
        for f, (v, why) in verdict.items():
            if not isinstance(v, list):
                continue
            res = []
            for r in v:
                if r is VAR:
                    r = 1 if loose else 0
                elif r == f:
                    r = 1  # x->f = y->f: neutral, the other stores decide
                elif isinstance(r, str):
                    if r in typed or (r in verdict and verdict[r][0] == 1):
                        r = 1
                    elif r in verdict and verdict[r][0] == 0:
                        r = 0
                res.append(r)
            if all(r == 1 for r in res):
                verdict[f] = (1, "")
                changed = True
            elif any(r == 0 for r in res):
                verdict[f] = (0, "stores a value that is not 0/1")
                changed = True
            else:
                verdict[f] = (res, "")
    out = collections.OrderedDict()
    for name, (rel, fs) in structs.items():
        rows = []
        for f, k, shown in fs:
            if k in ("bool", "bit1"):
                rows.append((shown, k, True, "type"))
            elif k == "int":
                v, why = verdict[f]
                ok = v == 1 or isinstance(v, list)  # only stored from each other: flags
                rows.append((shown, k, ok, "every store is 0/1" if ok else why))
            else:
                rows.append((shown, k, False, "not a scalar candidate"))
        out[name] = (rel, rows)
    return out


def flags(src, top=10, verbose=False):
    res = analyse_flags(src)
    lres = analyse_flags(src, loose=True)
    nflags = lambda rows: sum(r[2] for r in rows)
    print("== flags per struct (structs defined in %s; definition: shape.py's header; "
          "strict, and loose = also stored from a plain variable)" % " ".join(f + "/" for f in ENGINE))
    ranked = sorted(((nflags(rows), nflags(lres[name][1]), len(rows), name, rel)
                     for name, (rel, rows) in res.items()), key=lambda r: (-r[0], -r[1], r[3]))
    print("%d structs, %d fields, %d flags strict, %d loose" % (
        len(ranked), sum(r[2] for r in ranked), sum(r[0] for r in ranked),
        sum(r[1] for r in ranked)))
    print("structs with the most flags (strict / loose of fields):")
    for n, nl, nf, name, rel in ranked[:top]:
        print("  %3d / %3d of %3d  %s (%s)" % (n, nl, nf, name, rel))
    print("main structs (strict / loose of fields: strict flags; + loose only):")
    tot = [0, 0, 0]
    for name in MAIN_STRUCTS:
        if name not in res:
            print("  %-12s (not defined in this tree)" % name)
            continue
        rel, rows = res[name]
        fl = [r[0] for r in rows if r[2]]
        ll = [r[0] for r, q in zip(rows, lres[name][1]) if q[2] and not r[2]]
        tot = [tot[0] + len(fl), tot[1] + len(fl) + len(ll), tot[2] + len(rows)]
        print("  %-12s %3d / %3d of %3d: %s%s" % (name, len(fl), len(fl) + len(ll), len(rows),
                                                 " ".join(fl), " + " + " ".join(ll) if ll else ""))
    print("  %-12s %3d / %3d of %3d" % ("total", tot[0], tot[1], tot[2]))
    if verbose:
        for name, (rel, rows) in res.items():
            for (f, k, ok, why), q in zip(rows, lres[name][1]):
                if k:
                    print("  %s.%s %s %s%s (%s)" % (name, f, k, "FLAG" if ok else "-",
                                                  " loose-FLAG" if q[2] and not ok else "", why))


# ------------------------------------------------------------------------------------ calls
def parse_callgrind(path):
    """[(caller file, caller fn, callee file, callee fn, count)] of every call record."""
    files, fns = {}, {}
    out = []

    def name(table, v):
        m = re.match(r"^\((\d+)\)(?:\s+(.*))?$", v)
        if not m:
            return v
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "?")

    fl = fi = fn = None
    cfi = cfn = None
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith("fl="):
                fl = name(files, line[3:])
                fi = None
            elif line.startswith("fi=") or line.startswith("fe="):
                fi = name(files, line[3:])
            elif line.startswith("fn="):
                fn = name(fns, line[3:])
                fi = None
            elif line.startswith("cfi=") or line.startswith("cfl="):
                cfi = name(files, line[4:])
            elif line.startswith("cfn="):
                cfn = name(fns, line[4:])
            elif line.startswith("calls="):
                n = int(line[6:].split()[0])
                out.append((fi or fl, fn, cfi or fl, cfn, n))
                cfi = cfn = None
    return out


def project_file(src, path):
    """The path relative to src when it is a project source (not tests/), else None."""
    if not path or not os.path.isabs(path):  # glibc's debug info names relative paths
        return None
    p = os.path.realpath(path)
    if not p.startswith(src + os.sep) or not os.path.isfile(p):
        return None
    rel = os.path.relpath(p, src)
    return None if rel.split(os.sep)[0] in SKIP_DIRS else rel


def cross_calls(src, outs):
    """Counters: (caller file, callee file) -> calls for .c->.c and ->.h, plus edge sets."""
    src = os.path.realpath(src)
    cc, ch = collections.Counter(), collections.Counter()
    edges_c, edges_h = set(), set()
    same = 0
    cache = {}
    for path in outs:
        for a, fa, b, fb, n in parse_callgrind(path):
            if a not in cache:
                cache[a] = project_file(src, a)
            if b not in cache:
                cache[b] = project_file(src, b)
            ra, rb = cache[a], cache[b]
            if ra is None or rb is None:
                continue
            if ra == rb:
                same += n
            elif ra.endswith(".h") or rb.endswith(".h"):
                ch[(ra, rb)] += n
                edges_h.add((fa, fb))
            else:
                cc[(ra, rb)] += n
                edges_c.add((fa, fb))
    return cc, ch, edges_c, edges_h, same


def report_calls(label, cc, ch, ec, eh, same, top=10):
    tot = sum(cc.values())
    print("%s: %d cross-file calls between .c files (%d distinct caller->callee function pairs, "
          "%d file pairs); %d calls to or from another file's header inline functions; %d within "
          "one file" % (label, tot, len(ec), len(cc), sum(ch.values()), same))
    for (a, b), n in cc.most_common(top):
        print("  %6d %s -> %s" % (n, a, b))


def calls(src, outs, top=10):
    cc, ch, ec, eh, same = cross_calls(src, outs)
    report_calls("calls", cc, ch, ec, eh, same, top)
    return cc


def calls_diff(src, a, b, c=None, top=10):
    """b - a and, given c, c - b: the calls one more step costs (positive counts only)."""
    ra = cross_calls(src, [a])
    rb = cross_calls(src, [b])
    d = rb[0].copy()
    d.subtract(ra[0])
    print("difference %s - %s: %d cross-file calls" % (os.path.basename(b), os.path.basename(a),
                                                       sum(d.values())))
    for (x, y), n in d.most_common(top):
        if n:
            print("  %6d %s -> %s" % (n, x, y))


def summary(src, first, again, two, h2again, h2two, idle):
    """One table of the steps shape.sh runs, and what one request and one connection cost."""
    rows = []
    for label, path in (("first", first), ("again", again), ("two", two),
                        ("h2-again", h2again), ("h2-two", h2two), ("idle", idle)):
        cc, ch, ec, eh, same = cross_calls(src, [path])
        rows.append((label, sum(cc.values()), sum(ch.values()), same, len(ec), len(cc)))
    print("== summary: calls between project functions, per step")
    print("%-10s %10s %10s %10s %10s %10s" % ("step", "cross .c", "to .h", "same file",
                                              "fn pairs", "file pairs"))
    for r in rows:
        print("%-10s %10d %10d %10d %10d %10d" % r)
    v = {r[0]: r[1] for r in rows}
    allc = {r[0]: r[1] + r[2] + r[3] for r in rows}  # every call between project functions

    def line(proto, one, two):
        req, reqall = v[two] - v[one], allc[two] - allc[one]
        print("%s one request on an open connection: %d cross-file calls of %d project calls "
              "(%.0f%%; %s - %s); the connection's own share: %d cross-file of %d"
              % (proto, req, reqall, 100.0 * req / max(reqall, 1), two, one, v[one] - req,
                 allc[one] - reqall))
    line("HTTP/1.1:", "again", "two")
    line("HTTP/2:  ", "h2-again", "h2-two")
    print("first request of a fresh airlock (HTTP/1.1, connection included): %d cross-file calls "
          "of %d" % (v["first"], allc["first"]))
    print("idle (timers alone over one step's time): %d" % v["idle"])


# ------------------------------------------------------------------------------------ selftest
FIXTURE = {
    "proxy/px_a.h": """
struct px_a {
    int done;          /* flag: stored 0, 1, a comparison, a negation */
    int count;         /* not: incremented */
    unsigned seen : 1; /* flag: a one-bit bit-field */
    unsigned two : 2;  /* not: two bits */
    bool ok;           /* flag: bool */
    int mode;          /* not: stores 3 */
    int copy;          /* flag: stores another flag */
    int never;         /* not: never assigned */
    int addr;          /* not: address taken */
    int *p, arr[4];    /* not: pointer, array */
    int tern;          /* flag: a ternary of 0 and 1 */
    int var;           /* not: stores a variable (a flag when loose) */
    int same;          /* flag: stored 1 and from a field of its own name */
    int sh, shc;       /* not: sh is counted elsewhere, shc stores it */
    struct {
        int inner;     /* flag: in a nested anonymous struct */
    } sub;
    void (*cb)(int);   /* not: a function pointer */
};
""",
    "proxy/px_a.c": """
#include "px_a.h"
/* a.mode = 1; in a comment is not a store */
static void set(struct px_a *a, int v)
{
    a->done = 0;
    a->done = 1;
    a->done = (v == 2);
    a->done = !v;
    a->count++;
    a->seen = 1;
    a->two = 3;
    a->mode = 0;
    a->mode = 3;
    a->copy = a->done;
    take(&a->addr);
    a->addr = 1;
    a->tern = v > 0 ? 1 : 0;
    a->var = v;
    a->same = 1;
    a->same = b->same;
    a->shc = a->sh;
    a->done = a->sh && a->shc;
    a->sub.inner = v && 1;
}

int px_a_long(int x)
{
    int y = 0;
    if (x)
        y = 1;
    return y;
}
""",
    "proxy/px_b.c": """
int px_b_one(struct px_b *b)
{
    b->sh += 2;
    return 1;
}
""",
    "tests/proxy/test_a.c": """
void t(struct px_a *a)
{
    a->done = 7; /* tests/ is not the program */
}
""",
}
FIXTURE_FLAGS = {"done", "seen", "ok", "copy", "tern", "sub.inner", "same"}

CALLGRIND = """# callgrind format
version: 1
creator: fixture
cmd: airlock
events: Ir
fl=(1) {src}/proxy/px_a.c
fn=(1) set
5 10
cfi=(2) {src}/proxy/px_b.c
cfn=(2) px_b_one
calls=3 2
6 30
cfn=(3) px_a_long
calls=2 22
7 10
cfi=(3) /usr/lib/libc.c
cfn=(4) memcpy
calls=5 1
8 5
cfi=(5) proxy/px_b.c
cfn=(6) strlen
calls=6 1
8 6
cfi=(4) {src}/proxy/px_a.h
cfn=(5) px__inline
calls=4 1
9 4
fl=(2)
fn=(2)
2 2
cfl=(1)
cfn=(1)
calls=1 5
3 10
fl=(3)
fn=(4)
1 1
cfi=(2)
cfn=(2)
calls=9 2
1 9
"""


def selftest():
    bad = 0
    with tempfile.TemporaryDirectory(prefix="shape-selftest.") as d:
        for rel, text in FIXTURE.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as fh:
                fh.write(text)
        res = analyse_flags(d)
        got = {f for f, k, ok, why in res["px_a"][1] if ok}
        if got != FIXTURE_FLAGS:
            print("selftest FAIL flags: got %s, expected %s" % (sorted(got), sorted(FIXTURE_FLAGS)))
            bad = 1
        lgot = {f for f, k, ok, why in analyse_flags(d, loose=True)["px_a"][1] if ok}
        if lgot != FIXTURE_FLAGS | {"var"}:
            print("selftest FAIL loose flags: got %s" % sorted(lgot))
            bad = 1
        names = {f for f, *_ in res["px_a"][1]}
        for f in ("p", "arr", "never", "var", "addr", "mode", "count", "two"):
            if f not in names:
                print("selftest FAIL fields: %s not read" % f)
                bad = 1
        fs = functions(FIXTURE["proxy/px_a.c"])
        exp = [("set", 4, 22), ("px_a_long", 27, 7)]
        if fs != exp:
            print("selftest FAIL functions: got %s, expected %s" % (fs, exp))
            bad = 1
        cg = os.path.join(d, "callgrind.out")
        with open(cg, "w") as fh:
            fh.write(CALLGRIND.replace("{src}", os.path.realpath(d)))
        cwd = os.getcwd()
        os.chdir(d)  # a relative path (glibc's) must not be taken for the tree's file
        try:
            cc, ch, ec, eh, same = cross_calls(d, [cg])
        finally:
            os.chdir(cwd)
        exp_cc = {("proxy/px_a.c", "proxy/px_b.c"): 3, ("proxy/px_b.c", "proxy/px_a.c"): 1}
        if dict(cc) != exp_cc or dict(ch) != {("proxy/px_a.c", "proxy/px_a.h"): 4} or same != 2:
            print("selftest FAIL calls: got %s %s same=%d" % (dict(cc), dict(ch), same))
            bad = 1
    print("selftest: %s" % ("FAIL" if bad else "ok (flags, functions, callgrind calls)"))
    return bad


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1])
        return 2
    cmd = argv[1]
    if cmd == "selftest":
        return selftest()
    if cmd == "sizes":
        sizes(argv[2], int(argv[3]) if len(argv) > 3 else 10)
    elif cmd == "flags":
        flags(argv[2], int(argv[3]) if len(argv) > 3 and argv[3] != "-v" else 10,
              verbose="-v" in argv)
    elif cmd == "calls":
        calls(argv[2], argv[3:])
    elif cmd == "summary":
        summary(argv[2], *argv[3:9])
    elif cmd == "calls-diff":
        calls_diff(argv[2], *argv[3:])
    else:
        print(__doc__.split("\n\n")[1])
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
