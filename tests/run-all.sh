#!/bin/bash
# Builds airlock twice (normal and ASan+UBSan) and runs every test with CTest: the unit tests
# in both builds, the integration tests in the sanitizer build (but those labelled
# static-image, which test the static Release binary in its container image), and in the
# normal build those labelled release (tests/CMakeLists.txt says which and why: the RSS and
# heap checks, the README's commands, the container image). The normal build is made from a
# clean copy of the tracked files (tests/clean_checkout.sh), outside the checkout, and removed
# at the end; the sanitizer build is build-ci-asan/ here. Then the unit tests once more
# under valgrind, and each libFuzzer target for a bounded time. Exit 0 only when all of it
# passed. This is the README's test command; .ci/run runs exactly this. (Every integration
# test ran in both builds until 2026-11-29: a run took 29 minutes, over the 25 the project
# allows itself on 2 cores.)
#
# A skipped test is never a pass: before testing, this script finds out itself what the
# machine can do (root, network namespaces, Podman starting a container). A test may skip
# (exit 77, "SKIP (capability): test: reason" on stdout, see t_skip in
# tests/integration/lib.sh) only for a capability the machine lacks; a skip for one it has,
# for a missing package (`.ci/install-deps test` installs them all) or without a reason fails
# the run. The summary names every skipped test and why, every check not made and every
# failed test (with the cmocka cases that failed in it).
#
# Stages: the two builds and their CTest runs (airlock's default: one event loop per CPU; the
# normal one in a copy of the tracked files with nothing beside it), the shared-state suites
# (the state the event loops share) again with the other count (AIRLOCK_WORKERS=1 on a machine
# of more than one CPU, else 2; ASan build), valgrind, fuzzing. Around all of it: the run must
# leave nothing behind outside the checkout; new paths under /, /etc and /var (two levels
# deep) or in /tmp after the run fail it, by name.
#   FUZZ_SECONDS   seconds per fuzz target (default 5, a net for regressions: each target first
#                  replays its seed corpus; tests/fuzz/run.sh BUILD SECONDS fuzzes longer; 0 skips
#                  fuzzing)
#   VALGRIND       0 skips the valgrind pass over the unit tests
#   JOBS           parallel build/test jobs (default 2)
#   SAN_JOBS       tests at a time in the sanitizer build's CTest runs (default JOBS + 1: many
#                  integration tests mostly wait, on the timeouts they provoke and on peers that
#                  answer slowly; on 2 cores, 2026-11-29, that stage took 503 s at 2 at a time
#                  and 414 s at 3, its cores still 9 % idle)
set -u
cd "$(dirname "$0")/.." || exit 1
JOBS=${JOBS:-2}
SAN_JOBS=${SAN_JOBS:-$((JOBS + 1))}
FUZZ_SECONDS=${FUZZ_SECONDS:-5}
# the sanitizers' settings for both of the sanitizer build's CTest runs
SAN_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
status=0
T_RUN=$(date +%s)
STAGES=()
step() { echo; echo "=== $* ==="; }

# What exists outside the checkout before the run (compared at the end): / /etc /var two
# levels deep, and /tmp one level. /proc, /sys, /dev and /run change on their own; the
# checkout holds the build trees.
HERE=$(pwd)
outside_paths() {
    find / /etc /var -mindepth 1 -maxdepth 2 \( -path /proc -o -path /sys -o -path /dev -o \
        -path /run -o -path /tmp -o -path "$HERE" \) -prune -o -print 2>/dev/null
    find /tmp -mindepth 1 -maxdepth 1 -print 2>/dev/null
}
OUTSIDE_BEFORE=$(outside_paths | sort -u)
# stage_end NAME START RESULT: records a stage's wall time for the summary.
stage_end() {
    local t=$(($(date +%s) - $2))
    STAGES+=("$(printf '%-34s %5d s  %s' "$1" "$t" "$3")")
    echo "--- $1: $3 in $t s"
}

# CTest keeps only 1 KiB of a passing test's output unless told otherwise: the skip reasons
# and the checks not made must all reach the JUnit report.
CTEST_OUT=(--test-output-size-passed 16777216 --test-output-size-failed 16777216)

build() { # dir build-type [extra cmake args]
    local dir=$1 type=$2; shift 2
    mkdir -p "$dir"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" "$@" > "$dir/cmake.log" 2>&1 ||
        { cat "$dir/cmake.log"; return 1; }
    cmake --build "$dir" -j"$JOBS" 2>&1 | grep -E 'error|warning|Error' ; return "${PIPESTATUS[0]}"
}

# ---- what this machine can do (the tests' skips are judged against this) ----
step "capabilities"
CAPS=""
cap() { # cap NAME yes|no DETAIL
    echo "capability $1: $2${3:+ ($3)}"
    [ "$2" = yes ] && CAPS="$CAPS $1"
}
if [ "$(id -u)" = 0 ]; then cap root yes; else cap root no "uid $(id -u)"; fi
if err=$(unshare --net --mount true 2>&1); then cap netns yes; else cap netns no "$err"; fi
# Podman: start a container from a rootfs holding /bin/true and its libraries, with a private
# storage and configuration, in namespaces of our own (as test_container.sh runs podman).
podman_probe() {
    local d lib
    d=$(mktemp -d /tmp/airlock-podman-probe.XXXXXX) || return 1
    cat > "$d/probe.sh" <<'PROBE'
set -eu
d=$1
for x in /run/netns /run/runc /run/containers; do
    mkdir -p "$x" && mount -t tmpfs -o mode=0755 tmpfs "$x"
done
export CONTAINERS_CONF=$d/containers.conf CONTAINERS_STORAGE_CONF=$d/storage.conf
timeout 120 podman run --rm --network none --rootfs "$d/rootfs" /bin/true
# The tests also exec into running containers (podman exec). Where that lands outside the
# container (in a chroot it runs in the host's root), /bin/true would still succeed: the
# token file exists only inside.
timeout 120 podman run -d --name airlock-probe --network none --rootfs "$d/rootfs" \
    /bin/sleep 300 > /dev/null
rc=0
timeout 60 podman exec airlock-probe /bin/true || rc=1
got=$(timeout 60 podman exec airlock-probe /bin/cat /probe-token) || rc=1
podman kill airlock-probe > /dev/null 2>&1
podman rm -f airlock-probe > /dev/null 2>&1
[ $rc -eq 0 ] || { echo "podman exec failed"; exit 1; }
[ "$got" = "$(cat "$d/token")" ] ||
    { echo "podman exec does not run inside the container (it read '$got', a chroot?)"; exit 1; }
PROBE
    mkdir -p "$d/rootfs/bin" "$d/tmp" "$d/networks"
    for bin in true sleep cat; do
        if ! bin=$(type -P "$bin") || ! cp "$bin" "$d/rootfs/bin/"; then
            echo "no $bin to copy"; rm -rf "$d"; return 1
        fi
        for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
            mkdir -p "$d/rootfs$(dirname "$lib")" && cp -L "$lib" "$d/rootfs$lib"
        done
    done
    od -An -N8 -tx8 /dev/urandom | tr -d ' ' > "$d/token"
    cp "$d/token" "$d/rootfs/probe-token"
    # (network_config_dir too: podman would make /etc/containers/networks for its lock)
    printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\n%s\n%s\n%s\n%s\n%s\n' \
        'cgroup_manager = "cgroupfs"' 'events_logger = "file"' \
        "events_logfile_path = \"$d/events.log\"" "tmp_dir = \"$d/tmp\"" \
        "[network]
network_config_dir = \"$d/networks\"" > "$d/containers.conf"
    printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/root"\nrunroot = "%s/runroot"\n' \
        "$d" "$d" > "$d/storage.conf"
    unshare --net --mount --propagation private bash "$d/probe.sh" "$d" > "$d/out" 2>&1
    local rc=$?
    [ $rc -eq 0 ] || tail -3 "$d/out" | tr '\n' ' '
    rm -rf "$d"
    return $rc
}
if ! command -v podman >/dev/null; then cap podman no "podman not installed"
elif ! printf '%s' "$CAPS" | grep -qw netns; then cap podman no "no network namespaces"
elif err=$(podman_probe); then cap podman yes
else cap podman no "$err"; fi

# ---- skips and checks not made, read from CTest's JUnit report ----
SKIP_LINES=()
NOT_MADE_LINES=()
FAILED_LINES=()
# judge NAME [JUNIT]: appends every skip (with whether it is allowed), every check not made and
# every failed test of a CTest run's JUnit report (default NAME/ctest-junit.xml).
judge() {
    local xml=${2:-$1/ctest-junit.xml} line
    [ -f "$xml" ] || { SKIP_LINES+=("$1: no CTest report ($xml): FAILS the run"); status=1; return; }
    while IFS= read -r line; do
        case "$line" in
        "SKIP-BAD "*) SKIP_LINES+=("$1 ${line#SKIP-BAD }  -> FAILS the run"); status=1 ;;
        "SKIP-OK "*) SKIP_LINES+=("$1 ${line#SKIP-OK }  -> allowed: this machine lacks it") ;;
        "NOT-MADE "*) NOT_MADE_LINES+=("$1 ${line#NOT-MADE }") ;;
        "FAILED "*) FAILED_LINES+=("$1 ${line#FAILED }") ;;
        esac
    done < <(python3 - "$xml" "$CAPS" <<'PY'
import re, sys, xml.etree.ElementTree as ET
caps = set(sys.argv[2].split())
for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    name, out = tc.get("name"), tc.findtext("system-out") or ""
    if tc.get("status") == "fail" or tc.find("failure") is not None:
        why = (tc.find("failure").get("message") or "") if tc.find("failure") is not None else ""
        cases = sorted(set(re.findall(r"^\[  FAILED  \] ([A-Za-z_][\w/.-]*)\s*$", out, re.M)))
        more = f" ({why})" if why and why != "Failed" else ""
        if cases:
            more += ": " + ", ".join(cases[:8]) + (f" and {len(cases) - 8} more" if len(cases) > 8 else "")
        print(f"FAILED {name}{more}")
    for m in re.finditer(r"^NOT MADE - (.*)$", out, re.M):
        print(f"NOT-MADE {name}: {m.group(1)}")
    # a cmocka test skipped inside a unit test executable (which itself passes)
    # (cmocka names each skipped test twice: when it runs and in its summary)
    for t in sorted(set(re.findall(r"^\[  SKIPPED \] ([A-Za-z_]\w*)\s*$", out, re.M))):
        print(f"NOT-MADE {name}: {t} (skipped by cmocka)")
    if tc.find("skipped") is None and tc.get("status") != "notrun":
        continue
    m = re.search(r"^SKIP \(([a-z]+)\): (.*)$", out, re.M)
    if not m:
        print(f"SKIP-BAD {name}: skipped without a 'SKIP (capability): reason' line")
    elif m.group(1) in ("netns", "podman", "root") and m.group(1) not in caps:
        print(f"SKIP-OK {name}: lacks {m.group(1)}: {m.group(2)}")
    elif m.group(1) == "package":
        print(f"SKIP-BAD {name}: a package is missing: {m.group(2)}")
    else:
        print(f"SKIP-BAD {name}: skipped for {m.group(1)}, which this machine has: {m.group(2)}")
PY
    )
}

# The Release build is a clean copy of the tracked files, built and tested with nothing beside
# it (tests/clean_checkout.sh; the copy and its build are removed at the end of the run): what
# a clone has must build and pass, wherever this checkout holds more. (Until 2026-11-29 the
# Release build was made here in build-ci and the clean copy built a second time for its unit
# tests: a cold Release build more per run.)
CLEAN=$(mktemp -d /tmp/airlock-clean.XXXXXX) || exit 1
trap 'rm -rf "$CLEAN"' EXIT
REL=$CLEAN/build
t0=$(date +%s)
step "normal build (Release, -Wall -Wextra -Werror) and tests in a clean copy (clean_checkout.sh)"
r=ok
JOBS=$JOBS CLEAN_DIR=$CLEAN CLEAN_LABELS='^(unit|release)$' bash tests/clean_checkout.sh ||
    { r=FAILED; status=1; }
judge release "$REL/ctest-junit.xml"
stage_end "normal build + tests (clean copy)" "$t0" "$r"

t0=$(date +%s)
step "sanitizer build (ASan + UBSan)"
if build build-ci-asan Asan; then
    stage_end "sanitizer build" "$t0" ok
    t0=$(date +%s)
    step "tests: ASan + UBSan build"
    rm -f build-ci-asan/ctest-junit.xml
    r=ok
    (cd build-ci-asan &&
        env "${SAN_ENV[@]}" \
            ctest --output-on-failure -j"$SAN_JOBS" --timeout 1200 -LE '^static-image$' \
            "${CTEST_OUT[@]}" --output-junit ctest-junit.xml) ||
        { r=FAILED; status=1; }
    judge build-ci-asan
    stage_end "tests: ASan + UBSan build" "$t0" "$r"
    # the suites whose state the loops share, again with the count of loops the default did
    # not give (docs/cli.md "More than one core": one per CPU); under ASan, where a race that
    # frees too early shows
    t0=$(date +%s)
    ALT_WORKERS=2
    [ "$(nproc)" -gt 1 ] && ALT_WORKERS=1
    step "tests: --workers $ALT_WORKERS (AIRLOCK_WORKERS=$ALT_WORKERS, ASan + UBSan build): label shared-state"
    rm -f build-ci-asan/workers-junit.xml
    r=ok
    (cd build-ci-asan &&
        env AIRLOCK_WORKERS=$ALT_WORKERS "${SAN_ENV[@]}" \
            ctest --output-on-failure -j"$SAN_JOBS" --timeout 1200 -L '^shared-state$' \
            "${CTEST_OUT[@]}" --output-junit workers-junit.xml) ||
        { r=FAILED; status=1; }
    judge "workers-$ALT_WORKERS" build-ci-asan/workers-junit.xml
    stage_end "tests: --workers $ALT_WORKERS (ASan)" "$t0" "$r"
else
    echo "sanitizer build FAILED"; status=1
    stage_end "sanitizer build" "$t0" FAILED
fi

if [ "${VALGRIND:-1}" != 0 ] && command -v valgrind >/dev/null && [ -d "$REL/tests" ]; then
    t0=$(date +%s)
    step "unit tests under valgrind (memcheck, normal build)"
    vfail=0
    # JOBS at a time (each test is one process); reported in the tests' order
    vrun() {
        AIRLOCK_SLOW=1 valgrind -q --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --track-fds=no "$1" > "$1.valgrind.log" 2>&1
        echo $? > "$1.valgrind.rc"
    }
    vtests=()
    for t in "$REL"/tests/test_*; do
        [ -x "$t" ] && case $t in *.log|*.rc) ;; *) vtests+=("$t") ;; esac
    done
    n=0
    for t in "${vtests[@]}"; do
        if [ "$n" -ge "$JOBS" ]; then wait -n; n=$((n - 1)); fi
        vrun "$t" &
        n=$((n + 1))
    done
    wait
    for t in "${vtests[@]}"; do
        if [ "$(cat "$t.valgrind.rc" 2>/dev/null)" = 0 ]; then
            echo "valgrind $(basename "$t"): ok"
        else
            echo "valgrind $(basename "$t"): FAILED"; tail -40 "$t.valgrind.log"; vfail=1
        fi
    done
    if [ "$vfail" -eq 0 ]; then stage_end "valgrind (unit tests)" "$t0" ok
    else status=1; stage_end "valgrind (unit tests)" "$t0" FAILED; fi
else
    STAGES+=("$(printf '%-34s %7s  %s' "valgrind (unit tests)" "-" "not run (VALGRIND=0 or no valgrind)")")
fi

if [ "$FUZZ_SECONDS" != 0 ]; then
    t0=$(date +%s)
    step "libFuzzer targets, ${FUZZ_SECONDS}s each (clang, ASan + UBSan)"
    if CC=clang CXX=clang++ build build-ci-fuzz Debug -DAIRLOCK_FUZZ=ON -DAIRLOCK_TESTS=OFF; then
        r=ok
        bash tests/fuzz/run.sh build-ci-fuzz "$FUZZ_SECONDS" || { r=FAILED; status=1; }
        stage_end "fuzz build + targets" "$t0" "$r"
    else
        echo "fuzz build FAILED"; status=1
        stage_end "fuzz build" "$t0" FAILED
    fi
else
    STAGES+=("$(printf '%-34s %7s  %s' "fuzzing" "-" "not run (FUZZ_SECONDS=0)")")
fi

rm -rf "$CLEAN" # the clean copy and its Release build (valgrind's logs in it were printed)

# Nothing may be left outside the checkout (a test that forgot --confdir wrote a CA key to
# /mitmproxy-confdir): every new path is named.
t0=$(date +%s)
step "paths left outside the checkout"
LEFT=$(comm -13 <(printf '%s\n' "$OUTSIDE_BEFORE") <(outside_paths | sort -u))
if [ -n "$LEFT" ]; then # what another program's build had open for a moment is gone by now
    sleep 5
    LEFT=$(printf '%s\n' "$LEFT" | while IFS= read -r p; do [ -e "$p" ] && echo "$p"; done)
fi
if [ -z "$LEFT" ]; then stage_end "nothing left outside the checkout" "$t0" ok
else
    printf '%s\n' "$LEFT" | sed 's/^/left behind: /'
    status=1; stage_end "nothing left outside the checkout" "$t0" "FAILED: $(printf '%s\n' "$LEFT" | wc -l) new path(s)"
fi

echo
echo "=== summary ==="
printf '%s\n' "${STAGES[@]}"
printf '%-34s %5d s\n' "total" "$(($(date +%s) - T_RUN))"
echo "capabilities:${CAPS:- none}"
if [ ${#SKIP_LINES[@]} -eq 0 ]; then echo "skipped tests: none"
else echo "skipped tests: ${#SKIP_LINES[@]}"; printf '  %s\n' "${SKIP_LINES[@]}"; fi
if [ ${#NOT_MADE_LINES[@]} -eq 0 ]; then echo "checks not made: none"
else echo "checks not made: ${#NOT_MADE_LINES[@]}"; printf '  %s\n' "${NOT_MADE_LINES[@]}"; fi
if [ ${#FAILED_LINES[@]} -eq 0 ]; then echo "failed tests: none"
else echo "failed tests: ${#FAILED_LINES[@]}"; printf '  %s\n' "${FAILED_LINES[@]}"; fi
if [ -n "$LEFT" ]; then echo "left outside the checkout:"; printf '%s\n' "$LEFT" | sed 's/^/  /'; fi
echo
if [ "$status" -eq 0 ]; then echo "run-all: every stage passed"; else echo "run-all: FAILED"; fi
exit "$status"
