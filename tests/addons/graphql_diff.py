#!/usr/bin/env python3
"""Differential test of airlock's GraphQL parser (addons/addon_graphql_parse.c) against
graphql-core: a corpus of realistic GitHub API documents plus a few thousand mutations of them
(byte and token edits drawn with a fixed seed). For each input both sides must agree on
accept/reject and on every operation's type and top-level fields, computed as the reference
proxy computes them (inline fragments at the root resolved two levels deep; a named fragment
spread there makes the operation "unresolvable", shown as '!').

Deliberate differences (not counted as mismatches):
- graphql-core parses type-system definitions (SDL) too; airlock accepts only executable
  documents (operations and fragments), so a document with SDL must be rejected by airlock.
- airlock's caps (size, tokens, nesting, operations, fields): airlock answers "cap"; graphql-core
  may accept. Nesting past Python's recursion limit makes graphql-core fail instead.
- graphql-core 2.x (Debian bookworm's python3-graphql-core) predates some lexical rules of
  the current spec that airlock follows (graphql-core 3 / graphql-js 16): \\u{...} escapes,
  surrogate-pair escapes, control characters inside strings, block strings, the null literal,
  directives on variable definitions. With graphql-core 2 inputs that may hold those are
  skipped (graphql-core 3, where installed, compares them all).

Usage: graphql_diff.py DRIVER [N_MUTATIONS]. Exit 0 on agreement, 1 on a mismatch, 77 when
graphql-core is not installed.
"""
import os
import random
import re
import subprocess
import sys

try:
    import graphql
    from graphql.language import ast as gast
    from graphql.language.parser import parse as gparse
except ImportError:
    print("graphql-core is not installed (python3-graphql-core): skipped")
    sys.exit(77)

V3 = int(getattr(graphql, "__version__", "2").split(".")[0]) >= 3
if V3:
    OpDef, FragDef = gast.OperationDefinitionNode, gast.FragmentDefinitionNode
    Field, Inline = gast.FieldNode, gast.InlineFragmentNode
else:
    OpDef, FragDef = gast.OperationDefinition, gast.FragmentDefinition
    Field, Inline = gast.Field, gast.InlineFragment

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "graphql")


def load_corpus():
    docs = []
    for name in sorted(os.listdir(CORPUS)):
        if name.endswith(".graphql"):
            with open(os.path.join(CORPUS, name), encoding="utf-8") as f:
                docs.append(f.read())
    return docs


def top_fields(selections):
    """The reference proxy's _collect_top_level_fields: list, or None (unresolvable)."""
    fields = []
    for sel in selections:
        if isinstance(sel, Field):
            fields.append(sel.name.value)
        elif isinstance(sel, Inline):
            for inner in sel.selection_set.selections:
                if isinstance(inner, Field):
                    fields.append(inner.name.value)
                elif isinstance(inner, Inline):
                    for nested in inner.selection_set.selections:
                        if isinstance(nested, Field):
                            fields.append(nested.name.value)
                        else:
                            return None
                else:
                    return None
        else:
            return None
    return fields


def op_type(op):
    t = op.operation
    return t.value if V3 else t


def expected(text):
    try:
        doc = gparse(text, no_location=True)
    except RecursionError:
        return "deep"
    except Exception:  # GraphQLSyntaxError and friends
        return "err"
    words = []
    for d in doc.definitions:
        if not isinstance(d, (OpDef, FragDef)):
            return "err"  # deliberate: airlock accepts executable documents only
        if isinstance(d, OpDef):
            f = top_fields(d.selection_set.selections)
            words.append(op_type(d) + ":" + ("!" if f is None else ",".join(f)))
    return " ".join(["ok"] + words)


def normalise(line):
    """airlock's line with the fields of unresolvable operations dropped, as in expected()."""
    if not line.startswith("ok"):
        return line
    words = []
    for w in line.split()[1:]:
        t, _, f = w.partition(":")
        words.append(t + ":" + ("!" if f.endswith("!") else f))
    return " ".join(["ok"] + words)


V2_SKIP = re.compile(r'\\u\{|\\u[dD][89abAB]|[\x00-\x08\x0b\x0c\x0e-\x1f]|"""|\bnull\b|'
                     r'\$[^(){}]*@')

ALPHABET = list('{}()[]:$@!=.,"\\#\n\t ') + list("azAZ_09-+eE") + [
    "on", "...", "query", "mutation", "subscription", "fragment", '"""', "\u00e9", "\u00a0",
    "\ufeff", "\x00", "\x01", "\r", "type ", "\\u", "\\u{1F600}", "1.", "0x", "&", "|", "'",
]
TOKEN = re.compile(r'"""(?:\\"""|[^"]|"(?!""))*"""|"(?:\\.|[^"\\\n])*"|\.\.\.|[A-Za-z_]\w*|'
                   r'-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|#[^\n]*|\S')


def mutate(rng, text):
    kind = rng.randrange(8)
    if kind < 4 and text:  # byte-level edits
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(text) + 1)
            op = rng.randrange(4)
            if op == 0 and text:
                text = text[:i] + text[i + 1:]
            elif op == 1:
                text = text[:i] + rng.choice(ALPHABET) + text[i:]
            elif op == 2 and text:
                j = rng.randrange(len(text))
                text = text[:i] + text[j] + text[i:]
            else:
                k = rng.randint(1, 8)
                text = text[:i] + text[i:i + k] * 2 + text[i + k:]
        return text
    toks = TOKEN.findall(text)
    if not toks:
        return text
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(toks))
        op = rng.randrange(4)
        if op == 0:
            del toks[i]
        elif op == 1:
            toks.insert(i, toks[rng.randrange(len(toks))])
        elif op == 2:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
        else:
            toks.insert(i, rng.choice(ALPHABET))
        if not toks:
            break
    return " ".join(toks)


def main():
    driver = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
    rng = random.Random(20260101)
    corpus = load_corpus()
    inputs = list(corpus)
    extra = ["", " ", "{}", "{ a }", "query", "{ a(x: ) }", "type Query { a: Int }",
             "{ a } type Query { b: Int }", "fragment on on on { a }", "{ ...on }", "{ a" * 200]
    inputs += extra
    while len(inputs) < len(corpus) + len(extra) + n:
        inputs.append(mutate(rng, rng.choice(corpus)))
    if not V3:
        inputs = [t for t in inputs if not V2_SKIP.search(t)]
    data = b"".join(b"%d\n" % len(t.encode()) + t.encode() for t in inputs)
    out = subprocess.run([driver], input=data, stdout=subprocess.PIPE, check=True).stdout
    lines = out.decode().splitlines()
    assert len(lines) == len(inputs), (len(lines), len(inputs))
    bad = caps = accepted = 0
    for text, got in zip(inputs, lines):
        want = expected(text)
        if got == "cap" or want == "deep":
            caps += 1
            continue
        if want.startswith("ok"):
            accepted += 1
        if normalise(got) != want:
            bad += 1
            if bad <= 20:
                print("MISMATCH\n  input: %r\n  graphql-core: %s\n  airlock:      %s"
                      % (text[:400], want, got))
    print("graphql-core %s: %d inputs (%d corpus), %d accepted, %d over a cap, %d mismatches"
          % (getattr(graphql, "__version__", "?"), len(inputs), len(corpus), accepted, caps, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
