#!/bin/bash
# Fails when a file of the repository reads, cites or names something outside it: the
# "shared" folder a developer's checkout may have beside it, the design and style notes and
# reference documents kept there, or a CMake path that climbs out of the source tree.
# A clone on another machine has none of them, so a test that reads them fails there and a
# comment that cites them sends the reader nowhere: say it here, or in README.md / docs/.
# Lists every offending line as FILE:LINE: text. Files: `git ls-files` in a git work tree
# (tracked files only), otherwise every file under the tree but build directories
# (tests/clean_checkout.sh runs it on such a copy).
set -u
cd "${1:-$(dirname "$0")/..}" || exit 2
# Written so that this file does not match itself ("\." and "[s]" are not "." and "s" here).
names='\.\./shared|[s]hared/sigv4-vectors|DESIGN\.md|STYLE\.md'
names+='|airut-proxy-behaviour\.md|mitm-anchors\.md|agentbox-network-spec\.md|sigv4-notes\.md'
names+='|CMAKE_(CURRENT_)?SOURCE_DIR\}/\.\.'

list_files() {
    if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
        git ls-files -z | while IFS= read -r -d '' f; do
            [ -f "$f" ] && printf '%s\0' "$f" # tracked but deleted in the work tree: skipped
        done
    else
        find . \( -name .git -o -name 'build*' -a -exec test -f '{}/CMakeCache.txt' \; \) -prune \
            -o -type f -printf '%P\0'
    fi
}

hits=$(list_files | { xargs -0 -r grep -InE "$names" --; true; })
n_files=$(list_files | tr -cd '\0' | wc -c)
if [ "$n_files" -eq 0 ]; then
    echo "standalone: no files found under $(pwd)"
    exit 1
fi
if [ -n "$hits" ]; then
    printf '%s\n' "$hits" | sed 's/^/standalone: /'
    echo "standalone: $(printf '%s\n' "$hits" | wc -l) line(s) in" \
        "$(printf '%s\n' "$hits" | cut -d: -f1 | sort -u | wc -l) file(s) of $n_files refer" \
        "outside the repository"
    exit 1
fi
echo "standalone: $n_files files, none refers outside the repository"
