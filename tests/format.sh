#!/bin/bash
# Fails when a C file is not as the repository's .clang-format writes it (clang-format 14,
# --dry-run -Werror over the tracked .c and .h files; outside a git work tree, every .c/.h
# under the tree but .git and build directories). A RATCHET: tests/format-pending.txt lists
# the files not yet formatted (they were being edited by others when this check came in);
# every other file must be clean, and a listed file that became clean fails until its line is
# removed from the list, so the list only shrinks. To format a file:
#   clang-format-14 -i FILE   (then delete FILE's line from tests/format-pending.txt)
# Exits 77 (skipped) when clang-format 14 is not installed: another version formats otherwise.
set -u
export LC_ALL=C
cd "${1:-$(dirname "$0")/..}" || exit 2
pending=tests/format-pending.txt

cf=
for c in clang-format-14 clang-format; do
    if command -v "$c" > /dev/null && "$c" --version | grep -q 'version 14\.'; then
        cf=$c
        break
    fi
done
[ -n "$cf" ] || { echo "format: clang-format 14 not found: skipped"; exit 77; }

list_files() {
    if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
        git ls-files -z -- '*.c' '*.h' | while IFS= read -r -d '' f; do
            [ -f "$f" ] && printf '%s\0' "$f" # tracked but deleted in the work tree: skipped
        done
    else
        find . \( -name .git -o -name 'build*' -a -exec test -f '{}/CMakeCache.txt' \; \) -prune \
            -o -type f \( -name '*.c' -o -name '*.h' \) -printf '%P\0'
    fi
}

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
list_files | sort -z > "$tmp/files0"
tr '\0' '\n' < "$tmp/files0" > "$tmp/files"
[ -s "$tmp/files" ] || { echo "format: no .c/.h files found"; exit 1; }
# The style must load: a broken .clang-format would otherwise read as "every file clean".
"$cf" --style=file --assume-filename=x.c --dump-config > /dev/null 2> "$tmp/cfg" ||
    { echo "format: clang-format cannot load .clang-format:"; head -5 "$tmp/cfg"; exit 1; }
# One clang-format for all files (fast); it names each offending file on a diagnostic line.
xargs -0 "$cf" --style=file --dry-run -Werror < "$tmp/files0" > "$tmp/out" 2>&1
grep -E '^[^ :]+:[0-9]+:[0-9]+: (error|warning): ' "$tmp/out" | cut -d: -f1 | sort -u \
    > "$tmp/dirty"
grep -vE '^[[:space:]]*(#|$)' "$pending" | sed 's/[[:space:]]*$//' | sort -u > "$tmp/pending"

bad=0
while read -r f; do
    echo "format: $f is not clang-formatted (run: $cf -i $f)"; bad=1
done < <(comm -23 "$tmp/dirty" "$tmp/pending")
while read -r f; do
    if grep -qxF -- "$f" "$tmp/files"; then
        echo "format: $f is clean now: delete its line from $pending"
    else
        echo "format: $f is listed in $pending but is not a tracked .c/.h file: delete its line"
    fi
    bad=1
done < <(comm -13 "$tmp/dirty" "$tmp/pending")
if [ "$bad" -eq 0 ]; then
    echo "format: $(($(wc -l < "$tmp/files") - $(wc -l < "$tmp/pending"))) files clean," \
        "$(wc -l < "$tmp/pending") pending in $pending"
fi
exit "$bad"
