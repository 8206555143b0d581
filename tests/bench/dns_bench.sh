#!/usr/bin/env bash
# DNS answer rate: airlock's responder against dnsmasq answering every name with one address,
# with the same dnsperf client, query file and CPU placement. Prints both rates and the ratio.
#
# usage: tests/bench/dns_bench.sh [SECONDS]        (default 20 per server)
# env:   AIRLOCK (binary; default $AIRLOCK_BUILD/airlock or ./build/airlock)
#        BENCH_CLIENTS (dnsperf -c, default 4), BENCH_OUTSTANDING (dnsperf -q, default 200)
#
# Placement: each server is pinned to CPU 1 and dnsperf (-T 1: one sender and one receiver
# thread) to CPU 0, so on a 2-core machine the server under test has one core to itself and
# the client never competes with it. More dnsperf threads would only share CPU 0. No -Q: the
# client sends as fast as it can while -q queries are outstanding, so the rate measured is
# the server's. Never asserts on absolute rates: it only reports them.
set -u

DURATION=${1:-20}
CLIENTS=${BENCH_CLIENTS:-4}
OUTSTANDING=${BENCH_OUTSTANDING:-200}
QUERIES=5000
PROXY_IP=10.199.1.100
if [ -z "${AIRLOCK:-}" ]; then
    AIRLOCK=${AIRLOCK_BUILD:-./build}/airlock
fi

for tool in dnsperf dnsmasq dig taskset; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed" >&2; exit 77; }
done
[ -x "$AIRLOCK" ] || { echo "SKIP: no airlock binary at $AIRLOCK" >&2; exit 77; }

ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then
    SERVER_CPU=1 CLIENT_CPU=0
else
    SERVER_CPU=0 CLIENT_CPU=0
    echo "note: one CPU only; server and client share it" >&2
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

for ((i = 0; i < QUERIES; i++)); do echo "host$i.example.test A"; done >"$tmp/queries"

# Waits until 127.0.0.1:$1 answers an A query with the proxy IP.
wait_answer() {
    local i got
    for ((i = 0; i < 100; i++)); do
        got=$(dig @127.0.0.1 -p "$1" +short +time=1 +tries=1 ready.test A 2>/dev/null)
        [ "$got" == "$PROXY_IP" ] && return 0
        sleep 0.1
    done
    return 1
}

# CPU ticks (user + system) used so far by process $1.
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# Runs dnsperf against 127.0.0.1:$1 (server pid $2) and prints the queries per second; tells
# on stderr how busy the server's core was, to show whether the server or the client limits.
run_dnsperf() {
    local out="$tmp/dnsperf.$1" t0 t1 hz
    hz=$(getconf CLK_TCK)
    t0=$(cpu_ticks "$2")
    taskset -c "$CLIENT_CPU" dnsperf -s 127.0.0.1 -p "$1" -d "$tmp/queries" -l "$DURATION" \
        -c "$CLIENTS" -T 1 -q "$OUTSTANDING" -t 2 >"$out" 2>&1
    t1=$(cpu_ticks "$2")
    grep -E 'Queries (sent|completed|lost)' "$out" | sed 's/^ */    /' >&2
    awk -v a="$t0" -v b="$t1" -v hz="$hz" -v d="$DURATION" \
        'BEGIN { printf "    server CPU: %.0f%% of one core\n", 100 * (b - a) / hz / d }' >&2
    awk '/Queries per second:/ { print $4 }' "$out"
}

# airlock: the DNS port comes from its ready line (listening on port 0 means "any free port").
taskset -c "$SERVER_CPU" "$AIRLOCK" run --proxy-ip "$PROXY_IP" --upstream-dns 127.0.0.1:1 \
    --listen-dns 127.0.0.1:0 --listen-http 127.0.0.1:0 --listen-https 127.0.0.1:0 \
    --allowlist /dev/null --log /dev/null 2>"$tmp/airlock.err" &
pids+=($!)
port=
for ((i = 0; i < 100; i++)); do
    port=$(sed -n 's/.*ready.* dns [^ ,]*:\([0-9][0-9]*\).*/\1/p' "$tmp/airlock.err")
    [ -n "$port" ] && break
    sleep 0.1
done
if [ -z "$port" ] || ! wait_answer "$port"; then
    echo "airlock did not start:" >&2
    cat "$tmp/airlock.err" >&2
    exit 1
fi
echo "dnsperf -c $CLIENTS -T 1 -q $OUTSTANDING for ${DURATION}s on CPU $CLIENT_CPU" >&2
echo "airlock on 127.0.0.1:$port (CPU $SERVER_CPU)" >&2
airlock_qps=$(run_dnsperf "$port" "${pids[0]}")
kill "${pids[0]}" && wait "${pids[0]}" 2>/dev/null
pids=()

# dnsmasq: one address for every name, no upstream, no files, no logging, in the foreground.
for ((try = 0; try < 10; try++)); do
    dport=$((20000 + RANDOM % 30000))
    taskset -c "$SERVER_CPU" dnsmasq -k -C /dev/null --no-resolv --no-hosts --no-poll \
        --address=/#/"$PROXY_IP" --port "$dport" --listen-address 127.0.0.1 --bind-interfaces \
        --pid-file="$tmp/dnsmasq.pid" --user=root --group=root 2>"$tmp/dnsmasq.err" &
    pids=($!)
    wait_answer "$dport" && break
    kill "${pids[0]}" 2>/dev/null
    wait "${pids[0]}" 2>/dev/null
    pids=()
done
if [ "${#pids[@]}" -ne 1 ]; then
    echo "dnsmasq did not start:" >&2
    cat "$tmp/dnsmasq.err" >&2
    exit 1
fi
dversion=$(dnsmasq --version | awk 'NR==1 { print $3 }')
echo "dnsmasq $dversion on 127.0.0.1:$dport (CPU $SERVER_CPU)" >&2
dnsmasq_qps=$(run_dnsperf "$dport" "${pids[0]}")

echo "airlock  queries/s: $airlock_qps"
echo "dnsmasq  queries/s: $dnsmasq_qps"
awk -v a="$airlock_qps" -v d="$dnsmasq_qps" \
    'BEGIN { if (d > 0) printf "ratio airlock/dnsmasq: %.2f\n", a / d; else print "ratio: n/a" }'
