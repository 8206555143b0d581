#!/usr/bin/env python3
"""Runs the example commands of the documentation and compares their output with the text.

Used by test_docs.sh. A documentation block is a fenced block (```...```). The convention:

- A block holding lines that start with "$ " is a command block: each "$ command" line is run
  with bash (stdout and stderr together), `airlock` on PATH being the built binary, and what it
  prints must equal the lines after it up to the next "$ " line (trailing blank lines aside).
  A line "..." in the shown output stands for any number of lines.
- HTML comments on the lines right above a block's opening fence steer it:
    <!-- file: NAME -->       the block's text is the file NAME of the document's directory
    <!-- run in: DIR -->      its commands run in DIR of the repository ("." = the root)
    <!-- setup: SHELL -->     its commands run in a fresh directory where SHELL ran first
    <!-- not checked: WHY --> the block is not run (counted and listed with WHY)
    <!-- checked: WHERE -->   the block is run elsewhere (WHERE starts with the path of the test
                              or script that runs it, which must exist); listed
- Otherwise a document's commands run in a scratch directory of its own, holding its files.
- Paths under /tmp/ in commands and shown outputs are moved under the test's scratch directory.

`docs_check.py --block DOC TEST TEXT` prints the text of DOC's first block holding a line that
contains TEXT, for TEST (a test that runs a block marked `checked: tests/integration/TEST`); it
exits 1 when there is no such block or when the block is not marked as checked by TEST.

Blocks of other kinds (```sh without a marker, yaml, json...) are listed when they look like
commands (sh, bash, shell), as "not run". Prints one line per block, then a summary; exits 1
when a shown output differs.
"""
import os
import re
import subprocess
import sys

MARK = re.compile(r"^\s*<!-- (file|run in|setup|not checked|checked): (.*) -->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")

# Setup for documents whose owners have not marked their blocks yet: the files their commands
# read, made in the document's scratch directory (shell, run there before its commands).
EXTERNAL_SETUP = {
    "docs/allowlist.md": (
        "awk '/^## Format/{f=1} f&&/^```yaml/{g=1;next} g&&/^```/{exit} g' "
        "\"$DOC\" > allowlist.yaml && "
        "printf 'url_prefixes:\\n  - host: a.example\\n    methods: [GET]\\n    paht: /x\\n' "
        "> bad.yaml"
    ),
    "docs/ca-trust.md": "printf 'domains: [github.com, pypi.org, 10.1.2.3]\\n' > allowlist.yaml",
    "docs/replacements.md": (
        "awk '/^```json/{g=1;next} g&&/^```/{exit} g' \"$DOC\" > replacements.json"
    ),
}

# Commands of those documents that cannot run here: (document, start of the command): why.
EXTERNAL_SKIP = {}


def blocks(path):
    """(line number of the fence, language, text lines, {marker: value}) for each block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        marks = {}
        j = i - 1
        while j >= 0 and MARK.match(lines[j]):
            mm = MARK.match(lines[j])
            marks[mm.group(1)] = mm.group(2)
            j -= 1
        start = i
        i += 1
        body = []
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        out.append((start + 1, lang, body, marks))
    return out


def commands(body):
    """[(command, [shown output lines])] of a command block."""
    out = []
    for line in body:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    for _, shown in out:
        while shown and shown[-1].strip() == "":
            shown.pop()
    return out


def matches(shown, got):
    if not shown:
        return not got
    if shown[0] == "...":
        return any(matches(shown[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and shown[0] == got[0] and matches(shown[1:], got[1:])


def print_block(doc, test, text):
    for line, _, body, marks in blocks(doc):
        if any(text in b for b in body):
            if not marks.get("checked", "").startswith("tests/integration/" + test):
                print(f"{doc}:{line}: not marked 'checked: tests/integration/{test}'",
                      file=sys.stderr)
                return 1
            print("\n".join(body))
            return 0
    print(f"{doc}: no block holding {text!r}", file=sys.stderr)
    return 1


def main():
    if sys.argv[1] == "--block":
        return print_block(*sys.argv[2:5])
    root, scratch = sys.argv[1], sys.argv[2]
    docs = sys.argv[3:]
    tmp = os.path.join(scratch, "tmp")
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ)
    n_ok = n_fail = n_skip = n_else = n_unrun = 0
    for doc in docs:
        path = os.path.join(root, doc)
        bl = blocks(path)
        ddir = os.path.join(scratch, re.sub(r"[^A-Za-z0-9]+", "_", doc))
        os.makedirs(ddir, exist_ok=True)
        for line, lang, body, marks in bl:
            if "file" in marks:
                f = os.path.join(ddir, marks["file"])
                os.makedirs(os.path.dirname(f), exist_ok=True)
                with open(f, "w", encoding="utf-8") as fh:
                    fh.write("\n".join(body) + "\n")
        if doc in EXTERNAL_SETUP:
            subprocess.run(["bash", "-c", EXTERNAL_SETUP[doc]], cwd=ddir, check=True,
                           env=dict(env, DOC=path))
        for line, lang, body, marks in bl:
            where = f"{doc}:{line}"
            cmd_block = any(b.startswith("$ ") for b in body)
            if "not checked" in marks:
                n_skip += 1
                print(f"NOT CHECKED - {where} ({marks['not checked']})")
                continue
            if "checked" in marks:
                # the marker starts with the file that runs the block: it must exist
                runner = marks["checked"].split()[0] if marks["checked"].split() else ""
                if not runner or not os.path.isfile(os.path.join(root, runner)):
                    n_fail += 1
                    print(f"FAIL - {where}: 'checked: {marks['checked']}' names no file")
                    continue
                n_else += 1
                print(f"CHECKED ELSEWHERE - {where} ({marks['checked']})")
                continue
            if not cmd_block:
                if lang in ("sh", "bash", "shell", "console"):
                    n_unrun += 1
                    print(f"NOT RUN - {where} (```{lang} block without a marker)")
                continue
            if "run in" in marks:
                cwd = os.path.join(root, marks["run in"])
            elif "setup" in marks:
                cwd = os.path.join(scratch, re.sub(r"[^A-Za-z0-9]+", "_", where))
                os.makedirs(cwd, exist_ok=True)
                subprocess.run(["bash", "-c", marks["setup"]], cwd=cwd, check=True, env=env)
            else:
                cwd = ddir
            for cmd, shown in commands(body):
                why = [w for (d, c), w in EXTERNAL_SKIP.items() if d == doc and cmd.startswith(c)]
                if why:
                    n_skip += 1
                    print(f"NOT CHECKED - {where} $ {cmd} ({why[0]})")
                    continue
                run = cmd.replace("/tmp/", tmp + "/")
                want = [s.replace("/tmp/", tmp + "/") for s in shown]
                p = subprocess.run(["bash", "-c", run], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=60)
                got = p.stdout.decode("utf-8", "replace").split("\n")
                while got and got[-1] == "":
                    got.pop()
                if matches(want, got):
                    n_ok += 1
                    print(f"ok - {where} $ {cmd}")
                else:
                    n_fail += 1
                    print(f"FAIL - {where} $ {cmd}")
                    print("  shown:\n" + "\n".join("    " + s for s in shown))
                    print("  got:\n" + "\n".join("    " + s for s in got))
    print(f"docs: {n_ok} commands match, {n_fail} differ; blocks: {n_skip} not checked "
          f"(marked), {n_else} checked elsewhere, {n_unrun} shell blocks not run (unmarked)")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
