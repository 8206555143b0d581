#!/bin/bash
# Before/after: runs one benchmark script of this folder with two airlock binaries, alternating
# (A, B, A, B, ...), ROUNDS times each, and prints the median of every airlock figure for each
# binary and the ratio B/A. Alternating spreads the machine's drift over both binaries.
#
#   tests/bench/ab.sh A-BINARY B-BINARY http_bench.sh|h2_bench.sh|leak_bench.sh [script args]
#
# Environment: ROUNDS=3; everything else goes to the script (its RUNS is forced to 1 per round:
# the rounds are the repetitions). Each script writes its raw results (METRIC SUBJECT VALUE) to
# OUT/results.txt; only the rows whose subject starts with "airlock" are compared.
# Never fails on a timing.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
A=${1:?A binary}
B=${2:?B binary}
SCRIPT=${3:?benchmark script}
shift 3
ROUNDS=${ROUNDS:-3}
for bin in "$A" "$B"; do
    [ -x "$bin" ] || { echo "ab: no binary at $bin" >&2; exit 2; }
done
[ -f "$HERE/$SCRIPT" ] || { echo "ab: no $HERE/$SCRIPT" >&2; exit 2; }
OUTS=$(mktemp -d /tmp/airlock-ab.XXXXXX)
trap 'rm -rf "$OUTS"' EXIT
for r in $(seq 1 "$ROUNDS"); do
    for side in A B; do
        bin=$A
        [ "$side" = B ] && bin=$B
        echo "[$(date +%T)] round $r/$ROUNDS: $side ($bin)"
        AIRLOCK=$bin RUNS=1 OUT="$OUTS/$side-$r" bash "$HERE/$SCRIPT" "$@" > "$OUTS/$side-$r.log" 2>&1
        [ -f "$OUTS/$side-$r/results.txt" ] ||
            { echo "ab: $SCRIPT wrote no results for $side round $r:"; tail -5 "$OUTS/$side-$r.log"; }
    done
done
/usr/bin/python3 - "$OUTS" "$ROUNDS" <<'PY'
import glob, os, statistics, sys
outs, rounds = sys.argv[1], int(sys.argv[2])
vals = {}
for side in "AB":
    for f in glob.glob(os.path.join(outs, side + "-*", "results.txt")):
        for line in open(f):
            p = line.split()
            if len(p) != 3 or not p[1].startswith("airlock"):
                continue
            try:
                vals.setdefault((p[0], p[1]), {}).setdefault(side, []).append(float(p[2]))
            except ValueError:
                pass
print("%-34s %-14s %12s %12s %8s" % ("metric", "subject", "A median", "B median", "B/A"))
for (m, s) in sorted(vals):
    v = vals[(m, s)]
    if "A" not in v or "B" not in v:
        continue
    a, b = statistics.median(v["A"]), statistics.median(v["B"])
    print("%-34s %-14s %12.2f %12.2f %8s   (A %s; B %s)" % (
        m, s, a, b, "%.3f" % (b / a) if a else "-",
        "/".join("%g" % x for x in v["A"]), "/".join("%g" % x for x in v["B"])))
PY
