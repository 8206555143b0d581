#!/bin/bash
# Proves that a clean clone builds and passes its unit tests on its own: copies the files git
# tracks, as they are in the work tree (so an uncommitted change to a tracked file is tested
# too; an untracked file is not copied, as a clone would not have it), into a fresh temporary
# directory with nothing beside it (no shared folder, no build tree), builds there (Release) and
# runs `ctest -L unit`. Also fails when the generated build files name the original checkout.
# A test that reads a file outside the repository fails here, wherever it passes at home.
#   JOBS          parallel build/test jobs (default 2)
#   CLEAN_JUNIT   copy CTest's JUnit report to this path (tests/run-all.sh reads it)
#   CLEAN_KEEP    1 keeps the temporary directory (its path is printed)
#   CLEAN_DIR     an empty directory to work in instead of a new temporary one; it is kept (the
#                 copy in CLEAN_DIR/airlock, the build in CLEAN_DIR/build): tests/run-all.sh
#                 makes this its Release build, runs valgrind over its unit tests, then removes it
#   CLEAN_LABELS  the CTest label regex to run (default '^unit$'; run-all.sh: unit and release)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-2}
case "${CLEAN_JUNIT:-}" in "" | /*) ;; *) CLEAN_JUNIT=$PWD/$CLEAN_JUNIT ;; esac
T0=$(date +%s)
say() { echo "clean-checkout: [$(($(date +%s) - T0)) s] $*"; }
die() { echo "clean-checkout: FAILED: $*" >&2; exit 1; }

# Outside a git work tree (a `git archive` unpacked), every file is what a clone would have,
# but the build directories this suite makes (build*/) and Python's caches.
in_git=1
git -C "$SRC" rev-parse --is-inside-work-tree > /dev/null 2>&1 || in_git=0
if [ -n "${CLEAN_DIR:-}" ]; then
    TMP=$(cd "$CLEAN_DIR" && pwd) || die "no directory $CLEAN_DIR"
    [ -z "$(ls -A "$TMP")" ] || die "$TMP is not empty"
    CLEAN_KEEP=1
else
    TMP=$(mktemp -d /tmp/airlock-clean.XXXXXX) || die "mktemp"
fi
LABELS=${CLEAN_LABELS:-^unit\$}
cleanup() {
    if [ "${CLEAN_KEEP:-0}" = 1 ]; then echo "clean-checkout: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
COPY=$TMP/airlock
mkdir "$COPY"

# Tracked files as the work tree has them; one deleted in the work tree is left out, as the
# next commit would leave it out.
if [ "$in_git" = 1 ]; then
    (cd "$SRC" && git ls-files -z | while IFS= read -r -d '' f; do
        if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
    done | tar --null -T - -cf -) | tar -xf - -C "$COPY" || die "copying the tracked files"
    untracked=$(git -C "$SRC" ls-files --others --exclude-standard | wc -l)
    say "copied $(find "$COPY" -type f | wc -l) tracked files to $COPY" \
        "($untracked untracked, not ignored file(s) left out: git add what the build needs)"
else
    (cd "$SRC" && tar --exclude='./build*' --exclude='__pycache__' -cf - .) |
        tar -xf - -C "$COPY" || die "copying the files"
    say "not a git work tree: copied $(find "$COPY" -type f | wc -l) files (no build*/) to $COPY"
fi
[ ! -e "$TMP/shared" ] || die "$TMP/shared exists beside the copy"

# Nothing from the caller's environment may point the build or the tests elsewhere.
for v in $(compgen -e | grep -E '^AIRLOCK'); do unset "$v"; done
cd "$TMP" || die "cd $TMP"
if ! cmake -S "$COPY" -B "$TMP/build" -DCMAKE_BUILD_TYPE=Release > "$TMP/cmake.log" 2>&1; then
    cat "$TMP/cmake.log"; die "cmake configure"
fi
if ! cmake --build "$TMP/build" -j"$JOBS" > "$TMP/build.log" 2>&1; then
    grep -E -A5 'error|Error' "$TMP/build.log" | head -60; die "build"
fi
say "built (Release)"
if leaks=$(grep -rlF -- "$SRC" "$TMP/build" --include=CMakeCache.txt --include='*.cmake' \
        --include=Makefile --include=build.ninja 2>/dev/null) && [ -n "$leaks" ]; then
    printf '  %s\n' "$leaks"
    die "the generated build files above name the original checkout $SRC"
fi

rc=0
# (CTest keeps 1 KiB of a passing test's output unless told: run-all.sh reads the skip reasons
# and the checks not made from the JUnit report)
(cd "$TMP/build" && ctest -L "$LABELS" -j"$JOBS" --output-on-failure --timeout 900 \
    --test-output-size-passed 16777216 --test-output-size-failed 16777216 \
    --output-junit ctest-junit.xml) || rc=1
[ -z "${CLEAN_JUNIT:-}" ] || cp "$TMP/build/ctest-junit.xml" "$CLEAN_JUNIT" 2>/dev/null || true
[ "$rc" -eq 0 ] || die "tests (label $LABELS) failed in the clean copy (above)"
say "tests (label $LABELS) passed in a clean copy of the tracked files"
