#!/bin/bash
# Runs every fuzz_* target in BUILD_DIR for SECONDS each, on a scratch copy of its seed
# corpus (tests/fuzz/corpus/<name without fuzz_>/). Fails on any crash, leak or sanitizer
# report. Prints each target's execution count.
set -u
BUILD=${1:?build dir}
SECS=${2:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
status=0
total=0
for bin in "$BUILD"/tests/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    seeds="$HERE/corpus/${name#fuzz_}"
    work=$(mktemp -d /tmp/airlock-fuzz.XXXXXX)
    [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null
    log="$work.log"
    if "$bin" -max_total_time="$SECS" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048 \
        -artifact_prefix="$work/" "$work" > "$log" 2>&1; then
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
        echo "fuzz $name: ok, ${execs:-?} executions in ${SECS}s"
    else
        echo "fuzz $name: FAILED"
        tr -cd '\11\12\15\40-\176' < "$log" | grep -v '^ *$' | tail -60
        for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
            [ -f "$a" ] && echo "reproducer ($(wc -c < "$a") bytes, base64): $(base64 -w0 "$a" | head -c 2000)"
        done
        status=1
    fi
    rm -rf "$work" "$log"
    total=$((total + 1))
done
echo "fuzz: $total targets run"
exit $status
