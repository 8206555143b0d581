#!/bin/bash
# Many sandboxes in one airlock (issue 20 part 1): the memory each idle sandbox costs, and a
# load spread over N sandboxes (connections from N source addresses, each sandbox with its own
# allowlist and log), against the same load on one airlock without --sandboxes. Prints
# figures and ratios; never fails on a timing (only when a sandbox's log misses its lines).
#
# usage: tests/bench/sandboxes_bench.sh     (needs root: a private network namespace)
# env:   AIRLOCK (binary; default ./build-bench/airlock, else ./build/airlock), N (sandboxes,
#        200), REQS (requests per sandbox, 50), PAR (client threads, 16)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
if [ -z "${AIRLOCK:-}" ]; then
    AIRLOCK=$ROOT/build-bench/airlock
    [ -x "$AIRLOCK" ] || AIRLOCK=$ROOT/build/airlock
fi
export AIRLOCK
[ -x "$AIRLOCK" ] || { echo "SKIP: no airlock binary at $AIRLOCK" >&2; exit 77; }
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
N=${N:-200} REQS=${REQS:-50} PAR=${PAR:-16}

ip addr add 10.80.255.254/32 dev lo
for i in $(seq 1 "$N"); do ip addr add "10.80.$((i / 250)).$((i % 250 + 1))/32" dev lo; done
src() { echo "10.80.$(($1 / 250)).$(($1 % 250 + 1))"; }
t_start_resolver || exit 1
t_start_nginx || exit 1
SB=$T_DIR/sandboxes
mkdir -p "$SB"
for i in $(seq 1 "$N"); do
    mkdir -p "$SB/s$i"
    printf 'source %s/32\n' "$(src "$i")" > "$SB/s$i/sandbox.conf"
    printf 'domains: ["s%d.test", "common.test"]\n' "$i" > "$SB/s$i/network-allowlist.yaml"
done
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
start() { # start [--sandboxes DIR]: airlock on 10.80.255.254
    : > "$T_DIR/airlock.err"; : > "$T_DIR/host.log"
    "$AIRLOCK" run --proxy-ip 10.80.255.254 --upstream-dns 127.0.0.53 "$@" \
        --log "$T_DIR/host.log" --confdir "$T_DIR/confdir" --listen-dns off \
        --listen-http 10.80.255.254:80 --listen-https off --allow-upstream-cidr 127.0.0.2/32 \
        2> "$T_DIR/airlock.err" &
    APID=$!
    until_ok 'grep -q "ready (proxy" "$T_DIR/airlock.err"' 20 || { cat "$T_DIR/airlock.err"; exit 1; }
}
stop() { kill "$APID"; wait "$APID" 2>/dev/null; }
load() { # load: REQS keep-alive requests from each of the N sources, PAR threads; prints req/s
    "$PY" - "$N" "$REQS" "$PAR" <<'PY'
import http.client, sys, threading, time
n, reqs, par = map(int, sys.argv[1:4])
todo = list(range(1, n + 1)); lock = threading.Lock(); bad = [0]
def src(i): return "10.80.%d.%d" % (i // 250, i % 250 + 1)
def work():
    while True:
        with lock:
            if not todo: return
            i = todo.pop()
        c = http.client.HTTPConnection("10.80.255.254", 80, source_address=(src(i), 0), timeout=10)
        for _ in range(reqs):
            c.request("GET", "/echo", headers={"Host": "s%d.test" % i})
            r = c.getresponse(); r.read()
            if r.status != 200: bad[0] += 1
        c.close()
t0 = time.time()
ts = [threading.Thread(target=work) for _ in range(par)]
[t.start() for t in ts]; [t.join() for t in ts]
dt = time.time() - t0
print("%.0f %d" % (n * reqs / dt, bad[0]))
PY
}

echo "sandboxes bench: $N sandboxes, $REQS keep-alive requests each, $PAR client threads"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); airlock $AIRLOCK"
# memory: one airlock with an empty sandboxes directory, then with N
mkdir -p "$T_DIR/empty"
start --sandboxes "$T_DIR/empty"; sleep 1; r0=$(rss "$APID"); stop
start --sandboxes "$SB"; sleep 1; r1=$(rss "$APID")
echo "RSS: $r0 KiB with no sandbox, $r1 KiB with $N idle: $(( (r1 - r0) / N )) KiB per idle sandbox (goal < 1024)"
c0=$(cpu "$APID")
read -r rps bad < <(load)
c1=$(cpu "$APID")
r2=$(rss "$APID")
sleep 0.5
miss=0
for i in $(seq 1 "$N"); do
    got=$(grep -c "^allowed GET http://s$i.test/echo -> 200$" "$SB/s$i/network-sandbox.log")
    [ "$got" -eq "$REQS" ] || miss=$((miss + 1))
done
echo "spread over $N sandboxes: $rps req/s, $(( (c1 - c0) * 10000 / (N * REQS) )) us CPU per request, RSS after $r2 KiB, $bad non-200, $miss sandbox logs missing lines"
stop
# the same load on one airlock without sandboxes (one allowlist for all hosts)
{ printf 'domains: ['; for i in $(seq 1 "$N"); do printf '"s%d.test", ' "$i"; done; printf '"common.test"]\n'; } > "$T_DIR/all.yaml"
start --allowlist "$T_DIR/all.yaml"
c0=$(cpu "$APID")
read -r rps1 bad1 < <(load)
c1=$(cpu "$APID")
echo "one airlock, no sandboxes:    $rps1 req/s, $(( (c1 - c0) * 10000 / (N * REQS) )) us CPU per request, $bad1 non-200"
stop
awk -v a="$rps" -v b="$rps1" 'BEGIN { printf "ratio sandboxes / single: %.2f (the client is Python: it, not airlock, bounds the rate)\n", a / b }'
[ "$miss" -eq 0 ] && [ "$bad" -eq 0 ]
