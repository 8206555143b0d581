#!/bin/bash
# Runs every fuzz_* target in BUILD_DIR for SECONDS each, on a scratch copy of its seed
# corpus (tests/fuzz/corpus/<name without fuzz_>/), JOBS targets at a time (default 2: each
# target is one process on one core). Fails on any crash, leak or sanitizer report. Prints each
# target's execution count, in the targets' order.
set -u
BUILD=${1:?build dir}
SECS=${2:-30}
JOBS=${JOBS:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
OUTS=$(mktemp -d /tmp/airlock-fuzz-out.XXXXXX)
trap 'rm -rf "$OUTS"' EXIT

# one_target BIN: runs it; its report goes to $OUTS/NAME.out, its status to $OUTS/NAME.rc
one_target() {
    local bin=$1 name work log rc=0
    name=$(basename "$bin")
    seeds="$HERE/corpus/${name#fuzz_}"
    work=$(mktemp -d /tmp/airlock-fuzz.XXXXXX)
    [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null
    log="$work.log"
    {
        if "$bin" -max_total_time="$SECS" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 \
            -artifact_prefix="$work/" "$work" > "$log" 2>&1; then
            execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
            echo "fuzz $name: ok, ${execs:-?} executions in ${SECS}s"
        else
            rc=1
            echo "fuzz $name: FAILED"
            tr -cd '\11\12\15\40-\176' < "$log" | grep -v '^ *$' | tail -60
            for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
                [ -f "$a" ] && echo "reproducer ($(wc -c < "$a") bytes, base64): $(base64 -w0 "$a" | head -c 2000)"
            done
        fi
    } > "$OUTS/$name.out"
    echo "$rc" > "$OUTS/$name.rc"
    rm -rf "$work" "$log"
}

bins=()
for bin in "$BUILD"/tests/fuzz_*; do
    [ -x "$bin" ] && bins+=("$bin")
done
running=0
for bin in "${bins[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
    one_target "$bin" &
    running=$((running + 1))
done
wait
status=0
for bin in "${bins[@]}"; do
    name=$(basename "$bin")
    cat "$OUTS/$name.out" 2>/dev/null || echo "fuzz $name: no report (FAILED)"
    [ "$(cat "$OUTS/$name.rc" 2>/dev/null)" = 0 ] || status=1
done
echo "fuzz: ${#bins[@]} targets run, $JOBS at a time"
exit $status
