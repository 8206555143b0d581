#!/bin/bash
# The cost of egress budgets (issue 21 part 3): keep-alive requests per second through one
# airlock, as in http_bench.sh (wrk, 1 KiB responses from nginx, plain HTTP), with an allowlist
# without budgets and with budgets that match every request (requests, sent, received and a
# rate, for "all" and for the host: every counter of every kind is checked and charged on each
# request) and never run out. The same process serves both: SIGHUP swaps the allowlist
# between runs, which alternate (off, on, off, on, ...) so that drift on a shared machine hits
# both alike. Prints each run, the medians and the ratio; never fails on a timing.
#
#   tests/bench/budget_bench.sh        RUNS=5 DURATION=5 CONNS=50 PROXY_CPU=0 LOAD_CPU=1
#                                      AIRLOCK=binary (default build/airlock; not rebuilt here)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK
RUNS=${RUNS:-5}
DURATION=${DURATION:-5}
CONNS=${CONNS:-50}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    for tool in wrk nginx dnsmasq taskset; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
taskset -p -c "$LOAD_CPU" $$ > /dev/null

t_start_nginx || exit 1
head -c 1024 /dev/urandom > "$T_DIR/www/1k.bin"
cat > "$T_DIR/off.yaml" <<'YAML'
domains: ["bench.test"]
YAML
cat > "$T_DIR/on.yaml" <<'YAML'
domains: ["bench.test"]
budgets:
  - host: all
    requests: 1000000000000
    sent: 1000TB
    received: 1000TB
    rate: 1000000000/s
  - host: "*.test"
    requests: 1000000000000
    received: 1000TB
  - host: bench.test
    requests: 1000000000000
    rate: 1000000000/s
YAML
cp "$T_DIR/off.yaml" "$T_DIR/allow.yaml"
t_start_resolver
printf '#!/bin/sh\nexec taskset -c %s "%s" "$@"\n' "$PROXY_CPU" "$AIRLOCK" > "$T_DIR/airlock-pinned"
chmod +x "$T_DIR/airlock-pinned"
AIRLOCK="$T_DIR/airlock-pinned" t_start_airlock "$T_DIR/allow.yaml" || exit 1
curl -s -o /dev/null --resolve bench.test:80:127.0.0.1 http://bench.test/1k.bin

run() { # run off|on: swaps the allowlist in, prints requests/s
    cp "$T_DIR/$1.yaml" "$T_DIR/allow.yaml"
    t_reload > /dev/null
    wrk -t1 -c "$CONNS" -d "${DURATION}s" -H 'Host: bench.test' http://127.0.0.1/1k.bin |
        awk '/^Requests\/sec/ {print int($2)}'
}
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }

: > "$T_DIR/off.txt"
: > "$T_DIR/on.txt"
run off > /dev/null # warm-up
for i in $(seq 1 "$RUNS"); do
    a=$(run off); b=$(run on)
    echo "run $i: no budgets $a req/s, budgets $b req/s"
    echo "$a" >> "$T_DIR/off.txt"
    echo "$b" >> "$T_DIR/on.txt"
done
echo "refused or failed requests in the log (must be 0): $(grep -vc '^allowed\|^===\|^DNS' "$T_DIR/net.log")"
off=$(median < "$T_DIR/off.txt")
on=$(median < "$T_DIR/on.txt")
echo "median: no budgets $off req/s, budgets $on req/s, ratio on/off $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
t_stop_airlock
