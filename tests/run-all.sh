#!/bin/bash
# Builds airlock twice (normal and ASan+UBSan), runs every unit and integration test in
# both with CTest, the unit tests once more under valgrind, then runs each libFuzzer target
# for a bounded time. Exit 0 only when all of it passed. This is the README's test command;
# .ci/run runs exactly this.
#   FUZZ_SECONDS   seconds per fuzz target (default 30; 0 skips fuzzing)
#   VALGRIND       0 skips the valgrind pass over the unit tests
#   JOBS           parallel build/test jobs (default 2)
set -u
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
status=0
step() { echo; echo "=== $* ==="; }

build() { # dir build-type [extra cmake args]
    local dir=$1 type=$2; shift 2
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" > "$dir.cmake.log" 2>&1 ||
        { cat "$dir.cmake.log"; return 1; }
    cmake --build "$dir" -j"$JOBS" 2>&1 | grep -E 'error|warning|Error' ; return "${PIPESTATUS[0]}"
}

step "normal build (Release, as the README builds it; -Wall -Wextra -Werror)"
if build build-ci Release; then
    step "tests: normal build"
    (cd build-ci && ctest --output-on-failure -j"$JOBS" --timeout 900) || status=1
else
    echo "normal build FAILED"; status=1
fi

step "sanitizer build (ASan + UBSan)"
if build build-ci-asan Asan; then
    step "tests: ASan + UBSan build"
    (cd build-ci-asan &&
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j"$JOBS" --timeout 1200) || status=1
else
    echo "sanitizer build FAILED"; status=1
fi

if [ "${VALGRIND:-1}" != 0 ] && command -v valgrind >/dev/null && [ -d build-ci/tests ]; then
    step "unit tests under valgrind (memcheck, normal build)"
    vfail=0
    for t in build-ci/tests/test_*; do
        [ -x "$t" ] || continue
        if valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            --track-fds=no "$t" > "$t.valgrind.log" 2>&1; then
            echo "valgrind $(basename "$t"): ok"
        else
            echo "valgrind $(basename "$t"): FAILED"; tail -40 "$t.valgrind.log"; vfail=1
        fi
    done
    [ "$vfail" -eq 0 ] || status=1
fi

if [ "$FUZZ_SECONDS" != 0 ]; then
    step "libFuzzer targets, ${FUZZ_SECONDS}s each (clang, ASan + UBSan)"
    if CC=clang build build-ci-fuzz Debug -DAIRLOCK_FUZZ=ON -DAIRLOCK_TESTS=OFF; then
        bash tests/fuzz/run.sh build-ci-fuzz "$FUZZ_SECONDS" || status=1
    else
        echo "fuzz build FAILED"; status=1
    fi
fi

echo
if [ "$status" -eq 0 ]; then echo "run-all: every stage passed"; else echo "run-all: FAILED"; fi
exit "$status"
