#!/bin/bash
# The cost of egress budgets (issue 21 part 3): keep-alive requests per second through one
# airlock, as in http_bench.sh (wrk, 1 KiB responses from nginx, plain HTTP), with an allowlist
# without budgets and with budgets that match every request (requests, sent, received and a
# rate, for "all" and for the host: every counter of every kind is checked and charged on each
# request) and never run out. The same process serves both: SIGHUP swaps the allowlist
# between runs, which alternate (off, on, off, on, ...) so that drift on a shared machine hits
# both alike. Prints each run, the medians and the ratios of requests/s and of airlock's CPU
# time per request (utime+stime from /proc, steadier than requests/s on a busy machine);
# never fails on a timing.
#
#   tests/bench/budget_bench.sh        RUNS=5 DURATION=5 CONNS=50 PROXY_CPU=0 LOAD_CPU=1
#                                      AIRLOCK=binary (default build/airlock; not rebuilt here)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
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

cpu_ticks() { awk '{print $14 + $15}' "/proc/$AIRLOCK_PID/stat"; }
run() { # run off|on: swaps the allowlist in; prints requests/s and airlock's CPU us per request
    cp "$T_DIR/$1.yaml" "$T_DIR/allow.yaml"
    t_reload > /dev/null
    local c0 c1
    c0=$(cpu_ticks)
    wrk -t1 -c "$CONNS" -d "${DURATION}s" -H 'Host: bench.test' http://127.0.0.1/1k.bin \
        > "$T_DIR/wrk.out"
    c1=$(cpu_ticks)
    awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '
        / requests in / {n = $1} /^Requests\/sec/ {r = int($2)}
        END {printf "%d %.1f\n", r, t * 1e6 / hz / n}' "$T_DIR/wrk.out"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

: > "$T_DIR/off.txt"
: > "$T_DIR/on.txt"
run off > /dev/null # warm-up
for i in $(seq 1 "$RUNS"); do
    a=$(run off); b=$(run on)
    echo "run $i: no budgets ${a% *} req/s ${a#* } us CPU/req; budgets ${b% *} req/s ${b#* } us CPU/req"
    echo "$a" >> "$T_DIR/off.txt"
    echo "$b" >> "$T_DIR/on.txt"
done
echo "refused or failed requests in the log (must be 0): $(grep -vc '^allowed\|^===\|^DNS' "$T_DIR/net.log")"
off=$(cut -d' ' -f1 "$T_DIR/off.txt" | median); on=$(cut -d' ' -f1 "$T_DIR/on.txt" | median)
coff=$(cut -d' ' -f2 "$T_DIR/off.txt" | median); con=$(cut -d' ' -f2 "$T_DIR/on.txt" | median)
echo "median requests/s: no budgets $off, budgets $on, ratio on/off $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')"
pairs=$(paste -d' ' "$T_DIR/off.txt" "$T_DIR/on.txt" | awk '{print $4 / $2}' | median)
echo "median of the runs' paired CPU ratios (on/off): $(awk -v r="$pairs" 'BEGIN {printf "%.3f", r}')"
echo "median airlock CPU per request: no budgets $coff us, budgets $con us, ratio on/off $(awk -v a="$con" -v b="$coff" 'BEGIN {printf "%.3f", a / b}')"
t_stop_airlock
