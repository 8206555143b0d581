#!/bin/bash
# More than one loop (`--workers N`, docs/cli.md "More than one core"): both loops accept
# connections (SO_REUSEPORT; airlock_loop_connections_total per loop); a requests budget hit by
# concurrent connections on both loops stops at exactly its limit; SIGHUP reaches every loop,
# new connections and kept-alive ones alike; every request has its one log line; the minted
# leaf is shared (one mint per name whichever loop handshakes first); SIGTERM with connections
# open on both loops exits 0; --control and --decide-url are refused with more than one loop;
# AIRLOCK_WORKERS sets the count and --workers wins; without either, one loop per CPU the
# process may use (one under taskset -c 0), and one loop with --control.
# The suites that exercise shared state (sandboxes, budgets, HTTP/2, the secret guard, reload)
# run again in .ci/run with the count the default does not give (AIRLOCK_WORKERS=1 on a
# machine of more than one CPU).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

mkdir -p "$T_DIR/www"
echo hello > "$T_DIR/www/index.html"
t_start_nginx || exit 1
t_start_resolver
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [ok.test, req.test]
budgets:
  - host: req.test
    requests: 40
YAML
t_start_airlock "$T_DIR/allow.yaml" --workers 2 --metrics 127.0.0.1:9100 --verbose || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
metric() { curl -s http://127.0.0.1:9100/metrics | awk -v m="$1" '$1 == m {print $2}'; }

t_contains "the start-up says how many loops" "$(cat "$T_DIR/airlock.err")" "2 loops serve"
t_eq "three threads: the engine's loop, a worker's, the log writer" 3 \
    "$(ls "/proc/$AIRLOCK_PID/task" | wc -l)"

# ---- both loops accept (the kernel spreads connections by their addresses) ----
# One connection first mints ok.test's leaf on one loop; the 60 after it land on both loops and
# must all find it. (Two loops that miss at the same moment would both mint, and the second leaf
# be dropped for the first: the cache keeps one per name, but "minted" would count two.)
curl -s -o /dev/null --resolve ok.test:443:127.0.0.1 --cacert "$CA" "https://ok.test/"
# (`wait` alone would wait for airlock too: the clients' pids are waited for by name)
pids=()
for i in $(seq 1 60); do
    curl -s -o /dev/null --resolve ok.test:443:127.0.0.1 --cacert "$CA" "https://ok.test/" &
    pids+=($!)
    if [ $((i % 10)) -eq 0 ]; then wait "${pids[@]}"; pids=(); fi
done
l0=$(metric 'airlock_loop_connections_total{loop="0"}')
l1=$(metric 'airlock_loop_connections_total{loop="1"}')
t_check "both loops accepted connections (loop 0: $l0, loop 1: $l1)" \
    test "${l0:-0}" -gt 0 -a "${l1:-0}" -gt 0
t_eq "the loops' counts add up to the process's" "$(metric airlock_connections_total)" \
    "$((l0 + l1))"
t_eq "one leaf minted for ok.test, shared by both loops" 1 \
    "$(metric 'airlock_leaf_cache_total{result="miss"}')"
t_eq "the other 60 connections found it" 60 "$(metric 'airlock_leaf_cache_total{result="hit"}')"

# ---- a budget stays exact across loops ----
: > "$T_DIR/codes"
for i in $(seq 1 60); do
    curl -s -o /dev/null -w '%{http_code}\n' -H 'Connection: close' "http://req.test/?r=$i" \
        >> "$T_DIR/codes" &
    pids+=($!)
    if [ $((i % 20)) -eq 0 ]; then wait "${pids[@]}"; pids=(); fi
done
t_eq "requests: 40 of 60 concurrent requests allowed" 40 "$(grep -c '^200$' "$T_DIR/codes")"
t_eq "... the other 20 answered 429" 20 "$(grep -c '^429$' "$T_DIR/codes")"
until_ok '[ "$(grep -c "GET http://req.test/" "$T_DIR/net.log")" -ge 60 ]'
t_eq "... each with its one log line" 60 "$(grep -c 'GET http://req.test/' "$T_DIR/net.log")"

# ---- a reload reaches every loop ----
# a kept-alive connection made before the reload asks again after it
"$PY" - "$T_DIR/go" > "$T_DIR/kept.out" 2>&1 <<'PY' &
import http.client, os, sys, time
c = http.client.HTTPConnection("127.0.0.1", 80, timeout=10)
def ask(host):
    c.request("GET", "/", headers={"Host": host})
    r = c.getresponse()
    r.read()
    return str(r.status)
print("before", ask("ok.test"), flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
print("after", ask("new.test"), ask("ok.test"), flush=True)
PY
kept=$!
until_ok 'grep -q before "$T_DIR/kept.out"'
t_contains "kept-alive connection: allowed before the reload" "$(cat "$T_DIR/kept.out")" \
    "before 200"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [new.test]
YAML
t_reload
codes=""
for i in $(seq 1 20); do codes="$codes$(curl -s -o /dev/null -w '%{http_code}' http://ok.test/)"; done
t_eq "after SIGHUP, new connections on every loop see the new allowlist" \
    "$(printf '403%.0s' $(seq 1 20))" "$codes"
touch "$T_DIR/go"
wait "$kept"
t_contains "... and so does the connection kept alive across it" "$(cat "$T_DIR/kept.out")" \
    "after 200 403"

# ---- SIGTERM with connections open on both loops ----
for i in $(seq 1 8); do (exec 3<>/dev/tcp/127.0.0.1/80; sleep 3) & pids+=($!); done
sleep 0.5
t_stop_airlock
t_eq "SIGTERM with idle connections on both loops: exit 0" 0 "$?"
wait "${pids[@]}"
pids=()

# ---- what needs one loop ----
out=$("$AIRLOCK" run --workers 2 --control "$T_DIR/ctl" --upstream-dns 127.0.0.53 2>&1)
t_eq "--control with --workers 2: refused" 1 "$?"
t_contains "... saying why" "$out" "need --workers 1"
out=$(AIRLOCK_WORKERS=0 "$AIRLOCK" run --upstream-dns 127.0.0.53 2>&1)
t_contains "AIRLOCK_WORKERS=0: refused" "$out" "AIRLOCK_WORKERS"
AIRLOCK_WORKERS=3 t_start_airlock "$T_DIR/allow.yaml" --workers 1 || exit 1
t_eq "--workers 1 wins over AIRLOCK_WORKERS=3: two threads" 2 \
    "$(ls "/proc/$AIRLOCK_PID/task" | wc -l)"
t_stop_airlock

# ---- the default: one loop per CPU the process may use; one loop with a decider ----
ncpu=$(nproc)
[ "$ncpu" -gt 64 ] && ncpu=64
AIRLOCK_WORKERS= t_start_airlock "$T_DIR/allow.yaml" --verbose || exit 1
t_eq "without --workers: one loop per CPU ($ncpu) and the log writer" $((ncpu + 1)) \
    "$(ls "/proc/$AIRLOCK_PID/task" | wc -l)"
[ "$ncpu" -gt 1 ] && t_contains "... and the start-up says so" "$(cat "$T_DIR/airlock.err")" \
    "$ncpu loops serve"
t_stop_airlock
printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$AIRLOCK" > "$T_DIR/pinned"
chmod +x "$T_DIR/pinned"
AIRLOCK_WORKERS= AIRLOCK=$T_DIR/pinned t_start_airlock "$T_DIR/allow.yaml" || exit 1
t_eq "pinned to one CPU (taskset -c 0): one loop and the log writer" 2 \
    "$(ls "/proc/$AIRLOCK_PID/task" | wc -l)"
t_stop_airlock
AIRLOCK_WORKERS= t_start_airlock "$T_DIR/allow.yaml" --control "$T_DIR/ctl" || exit 1
t_eq "with --control and no --workers: one loop (holds live on one), and the log writer" 2 \
    "$(ls "/proc/$AIRLOCK_PID/task" | wc -l)"
t_stop_airlock
t_done
