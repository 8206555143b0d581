#!/bin/bash
# Soak (Hardening, item 4; manual, not run by CTest): many concurrent client connections,
# then a long keep-alive HTTPS run, then idle, against one airlock in a private network
# namespace (tests/integration/lib.sh), with nginx as the upstream.
#
#   tests/bench/soak.sh
#
# Environment (defaults in brackets):
#   CONNS [10000]       client connections held open at once (phase 1); CONNS_TLS [1000] of
#                       them over TLS, the rest plain HTTP; each makes one request, all stay
#                       open, then each makes a second request, then all close
#   BATCH [256]         requests in flight at once in phase 1 (bounds the upstream side)
#   ROUNDS [1]          phase 1 repeated; with 2 or more, RSS after the last round must stay
#                       within RSS_FLAT_PCT of RSS after the first (retention, not a leak)
#   REQUESTS [1000000]  keep-alive HTTPS requests in phase 2 (wrk, stopped by count)
#   WRK_THREADS [1] WRK_CONNS [100]
#   WARMUP [10]         seconds of phase 2 before RSS must stay flat
#   SAMPLE [5]          seconds between RSS/fd samples
#   RSS_FLAT_PCT [10]   allowed RSS spread after warm-up, in percent
#   IDLE [30]           seconds of idle at the end (phase 3)
#   TRIM_WAIT [7]       seconds after a phase-1 round before RSS must be back near the baseline
#   RSS_BURST_PCT [25]  how much of phase 1's RSS growth may stay after TRIM_WAIT
#   AIRLOCK [build-bench/airlock], KEEP_TEST_DIR=1 keeps the scratch directory
#
# Checks (prints "ok -"/"FAIL -" lines and "# figures:" lines; exit 1 on a failed check):
# every phase-1 request answered 200 on every connection; airlock held every connection;
# fds back to the baseline after each phase; wrk saw no socket error and no non-2xx answer;
# RSS flat within RSS_FLAT_PCT after warm-up and not growing during idle; the network log has one line
# per request: airlock's lines for the soak URL equal nginx's access-log lines for it, and
# lie between wrk's completed count and that count plus the requests in flight when wrk
# stopped (WRK_CONNS).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build-bench/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
export AIRLOCK
CONNS=${CONNS:-10000}
CONNS_TLS=${CONNS_TLS:-1000}
BATCH=${BATCH:-256}
ROUNDS=${ROUNDS:-1}
REQUESTS=${REQUESTS:-1000000}
WRK_THREADS=${WRK_THREADS:-1}
WRK_CONNS=${WRK_CONNS:-100}
WARMUP=${WARMUP:-10}
SAMPLE=${SAMPLE:-5}
RSS_FLAT_PCT=${RSS_FLAT_PCT:-10}
IDLE=${IDLE:-30}
TRIM_WAIT=${TRIM_WAIT:-7}
RSS_BURST_PCT=${RSS_BURST_PCT:-25}

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ -x "$AIRLOCK" ] || { echo "no airlock binary at $AIRLOCK" >&2; exit 2; }
    for tool in wrk nginx dnsmasq curl python3 openssl; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
# each side needs CONNS descriptors plus some: raise the soft limit (the hard one too if allowed)
want=$((CONNS + 2048))
ulimit -Hn "$want" 2>/dev/null || true
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge "$want" ] ||
    { echo "the fd hard limit $(ulimit -Hn) is below $want: lower CONNS" >&2; exit 1; }
ulimit -n "$want" || exit 1

# ---- upstream nginx (:80 and :443, short keep-alive so airlock's pool drains), airlock ----
t_start_resolver || exit 1
t_upstream_ca
t_upstream_cert "DNS:bench.test" "$T_DIR/up"
mkdir -p "$T_DIR/www"
echo "soak" > "$T_DIR/www/index.html"
chmod -R a+rX "$T_DIR"
t_start_nginx "
        keepalive_timeout 5s;
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        keepalive_timeout 5s;
        root $T_DIR/www;
" || exit 1
printf 'domains: ["bench.test"]\n' > "$T_DIR/allow.yaml"
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
echo "# figures: airlock $AIRLOCK ($(file -b "$AIRLOCK" | grep -o 'not stripped\|stripped' | head -1)), fd limit $(ulimit -n)"

fds() { t_fds "$AIRLOCK_PID"; }
rss() { t_rss_kb "$AIRLOCK_PID"; }
# sampler OUT: "seconds rss_kib fds" every SAMPLE seconds until killed
sampler() {
    local t0=$SECONDS
    while kill -0 "$AIRLOCK_PID" 2>/dev/null; do
        echo "$((SECONDS - t0)) $(rss) $(fds)" >> "$1"
        sleep "$SAMPLE"
    done
}
# flat OUT FROM: checks that RSS samples from second FROM on stay within RSS_FLAT_PCT
flat() {
    awk -v from="$2" -v pct="$RSS_FLAT_PCT" '$1 >= from {
            if (n == 0 || $2 < lo) lo = $2; if (n == 0 || $2 > hi) hi = $2; n++ }
        END { if (n == 0) { print "no samples"; exit 1 }
              spread = (hi - lo) * 100 / lo
              printf "%d samples, RSS %d..%d KiB (spread %.1f%%)\n", n, lo, hi, spread
              exit !(spread <= pct) }' "$1"
}
# nogrow OUT: checks that no RSS sample rises more than RSS_FLAT_PCT above the first (a fall is
# the heap of a finished burst going back to the OS)
nogrow() {
    awk -v pct="$RSS_FLAT_PCT" 'NR == 1 { first = $2; hi = $2; lo = $2 }
        { if ($2 > hi) hi = $2; if ($2 < lo) lo = $2; n++ }
        END { if (n == 0) { print "no samples"; exit 1 }
              printf "%d samples, first %d KiB, RSS %d..%d KiB\n", n, first, lo, hi
              exit !(hi <= first + first * pct / 100) }' "$1"
}
settle_fds() { # waits up to $1 seconds for fds to come back to BASE_FDS
    local i
    for i in $(seq 1 $(($1 * 2))); do
        [ "$(fds)" -le "$BASE_FDS" ] && break
        sleep 0.5
    done
    fds
}

# ---- warm-up and baseline ----
for i in 1 2 3; do
    curl -s -o /dev/null -H 'Connection: close' http://bench.test/
    curl -s -o /dev/null -H 'Connection: close' --cacert "$CA" https://bench.test/
done
sleep 6 # nginx's keep-alive ends, airlock's pooled upstream connections close
BASE_FDS=$(fds)
BASE_RSS=$(rss)
echo "# figures: baseline: fds $BASE_FDS, RSS $BASE_RSS KiB"

# ---- phase 1: CONNS concurrent client connections (ROUNDS times) ----
cat > "$T_DIR/phase1.py" <<'PYX'
import asyncio, ssl, sys, time
conns, conns_tls, batch, ca, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ctx = ssl.create_default_context(cafile=ca)
REQ = b"GET / HTTP/1.1\r\nHost: bench.test\r\n\r\n"

async def request(r, w):
    w.write(REQ)
    await w.drain()
    head = await r.readuntil(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    await r.readexactly(n)
    return head.split(b" ")[1] == b"200"

async def open_one(i, sem, out):
    async with sem:
        try:
            if i < conns_tls:
                r, w = await asyncio.open_connection("127.0.0.1", 443, ssl=ctx, server_hostname="bench.test")
            else:
                r, w = await asyncio.open_connection("127.0.0.1", 80)
            ok = await request(r, w)
            out.append((r, w, ok))
        except Exception as e:
            out.append((None, None, False))

async def again(c, sem):
    r, w, _ = c
    if r is None:
        return False
    async with sem:
        try:
            return await request(r, w)
        except Exception:
            return False

def proc(pid):
    fds = len(__import__("os").listdir(f"/proc/{pid}/fd"))
    rss = [l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:")][0]
    return fds, rss

async def main():
    sem = asyncio.Semaphore(batch)
    out = []
    t0 = time.time()
    await asyncio.gather(*(open_one(i, sem, out) for i in range(conns)))
    t1 = time.time()
    first_ok = sum(1 for c in out if c[2])
    fds, rss = proc(pid)
    print(f"opened={len(out)} first_ok={first_ok} open_seconds={t1 - t0:.1f} peak_fds={fds} peak_rss_kib={rss}", flush=True)
    res = await asyncio.gather(*(again(c, sem) for c in out))
    t2 = time.time()
    print(f"second_ok={sum(res)} second_seconds={t2 - t1:.1f}", flush=True)
    fds, rss = proc(pid)
    print(f"all_open_after_second fds={fds} rss_kib={rss}", flush=True)
    for r, w, _ in out:
        if w is not None:
            w.close()
    await asyncio.sleep(0.5)

asyncio.run(main())
PYX
RSS1=()
[ "$CONNS" -gt 0 ] || ROUNDS=0 # CONNS=0: phase 2 alone, on an allocator that saw no burst
for round in $(seq 1 "$ROUNDS"); do
    echo "# phase 1, round $round: $CONNS concurrent connections ($CONNS_TLS over TLS), $BATCH requests in flight"
    "$PY" "$T_DIR/phase1.py" "$CONNS" "$CONNS_TLS" "$BATCH" "$CA" "$AIRLOCK_PID" > "$T_DIR/phase1.out"
    sed 's/^/# figures: phase 1: /' "$T_DIR/phase1.out"
    p1=$(cat "$T_DIR/phase1.out")
    t_contains "phase 1: every connection's first request answered 200" "$p1" "opened=$CONNS first_ok=$CONNS "
    t_contains "phase 1: every connection's second request answered 200" "$p1" "second_ok=$CONNS "
    peak=$(echo "$p1" | sed -n 's/.*peak_fds=\([0-9]*\).*/\1/p')
    t_check "phase 1: airlock held all $CONNS client connections at once (peak fds $peak)" \
        test "${peak:-0}" -ge $((BASE_FDS + CONNS))
    kill -0 "$AIRLOCK_PID"; t_check "phase 1: airlock alive" test $? -eq 0
    f=$(settle_fds 15)
    r0=$(rss)
    sleep "$TRIM_WAIT" # airlock gives a finished burst's heap back within 5 s (PX_TRIM_CHECK_MS)
    RSS1+=("$(rss)")
    echo "# figures: phase 1, round $round, after closing: fds $f, RSS $r0 KiB, $TRIM_WAIT s later $(rss) KiB"
    t_eq "phase 1: fds back to the baseline" "$BASE_FDS" "$f"
    prss=$(echo "$p1" | sed -n 's/.*peak_rss_kib=\([0-9]*\).*/\1/p')
    r1=$(rss)
    t_check "phase 1: the burst's memory given back: RSS $r1 KiB keeps at most $RSS_BURST_PCT% of the growth from $BASE_RSS to $prss KiB" \
        test $(((r1 - BASE_RSS) * 100)) -le $(((${prss:-0} - BASE_RSS) * RSS_BURST_PCT))
done
if [ "$ROUNDS" -gt 1 ]; then
    # the first round sets the allocator's high-water mark; later rounds must not add to it
    t_check "phase 1: RSS after round $ROUNDS within $RSS_FLAT_PCT% of round 1 (${RSS1[*]} KiB)" \
        test "${RSS1[$((ROUNDS - 1))]}" -le $((RSS1[0] + RSS1[0] * RSS_FLAT_PCT / 100))
fi

# ---- phase 2: REQUESTS keep-alive HTTPS requests (wrk, stopped by count) ----
# each thread stops after its share and says so in a file; wrk's main thread sleeps for the
# whole -d, so it is told to finish (SIGINT) once every thread is done
cat > "$T_DIR/count.lua" <<'LUA'
local n, max, mark = 0, 0, nil
function init(args) max = tonumber(args[1]); mark = args[2] end
function response(status, headers, body)
    n = n + 1
    if n == max then
        local f = io.open(mark, "a"); f:write("done\n"); f:close()
        wrk.thread:stop()
    end
end
LUA
per_thread=$(( (REQUESTS + WRK_THREADS - 1) / WRK_THREADS ))
echo "# phase 2: $REQUESTS HTTPS keep-alive requests, wrk -t$WRK_THREADS -c$WRK_CONNS"
lines0=$(wc -l < "$T_DIR/net.log")
ng0=$(wc -l < "$T_DIR/nginx/access.log")
: > "$T_DIR/rss2.txt"
sampler "$T_DIR/rss2.txt" &
SP=$!
t0=$SECONDS
: > "$T_DIR/wrk.done"
wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d$((REQUESTS / 200 + 600))s --latency -s "$T_DIR/count.lua" \
    https://bench.test/ -- "$per_thread" "$T_DIR/wrk.done" > "$T_DIR/wrk.out" 2>&1 &
WRK=$!
while kill -0 "$WRK" 2>/dev/null && [ "$(wc -l < "$T_DIR/wrk.done")" -lt "$WRK_THREADS" ]; do
    sleep 0.2
done
kill -INT "$WRK" 2>/dev/null
wait "$WRK"
secs=$((SECONDS - t0))
kill "$SP"; wait "$SP" 2>/dev/null
sed 's/^/# wrk: /' "$T_DIR/wrk.out"
done_n=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$T_DIR/wrk.out")
echo "# figures: phase 2: $done_n requests in ${secs} s; RSS samples (s KiB fds): $(tr '\n' ';' < "$T_DIR/rss2.txt")"
t_check "phase 2: wrk completed $REQUESTS requests (${done_n:-?})" test "${done_n:-0}" -ge "$REQUESTS"
grep -q 'Socket errors' "$T_DIR/wrk.out"; t_check "phase 2: no socket errors" test $? -ne 0
grep -q 'Non-2xx' "$T_DIR/wrk.out"; t_check "phase 2: no non-2xx answers" test $? -ne 0
out=$(flat "$T_DIR/rss2.txt" "$WARMUP"); rc=$?
t_check "phase 2: RSS flat within $RSS_FLAT_PCT% after ${WARMUP} s ($out)" test $rc -eq 0
sleep 2 # the last lines reach the log
allowed=$(tail -n +$((lines0 + 1)) "$T_DIR/net.log" | grep -c '^allowed GET https://bench.test/ -> 200$')
errors=$(tail -n +$((lines0 + 1)) "$T_DIR/net.log" | grep -c '^ERROR ')
other=$(tail -n +$((lines0 + 1)) "$T_DIR/net.log" | grep -v '^DNS ' | grep -v '^allowed GET https://bench.test/ -> 200$' | grep -vc '^ERROR ')
ng=$(($(wc -l < "$T_DIR/nginx/access.log") - ng0))
echo "# figures: phase 2 log: $allowed allowed lines, $errors ERROR lines ($(tail -n +$((lines0 + 1)) "$T_DIR/net.log" | grep '^ERROR ' | sed 's/.* -> //' | sort | uniq -c | tr '\n' ';')), $other other lines; nginx access lines $ng; wrk $done_n"
t_eq "phase 2: one airlock line per request nginx saw" "$ng" "$((allowed + errors))"
t_check "phase 2: airlock lines between wrk's count and that plus the $WRK_CONNS in flight ($((allowed + errors)) vs $done_n)" \
    test "$((allowed + errors))" -ge "${done_n:-0}" -a "$((allowed + errors))" -le $((${done_n:-0} + WRK_CONNS))
t_check "phase 2: ERROR lines only for requests in flight when wrk stopped ($errors)" test "$errors" -le "$WRK_CONNS"
t_eq "phase 2: no other verdict lines" "0" "$other"

# ---- phase 3: idle ----
echo "# phase 3: idle for $IDLE s"
: > "$T_DIR/rss3.txt"
sampler "$T_DIR/rss3.txt" &
SP=$!
sleep "$IDLE"
kill "$SP"; wait "$SP" 2>/dev/null
echo "# figures: phase 3: RSS samples (s KiB fds): $(tr '\n' ';' < "$T_DIR/rss3.txt")"
out=$(nogrow "$T_DIR/rss3.txt"); rc=$?
t_check "phase 3: RSS does not grow while idle ($out)" test $rc -eq 0
f=$(settle_fds 10)
t_eq "phase 3: fds back to the baseline" "$BASE_FDS" "$f"
t_eq "phase 3: a request still works" "200" "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" https://bench.test/)"
echo "# figures: end: fds $(fds) (baseline $BASE_FDS), RSS $(rss) KiB (baseline $BASE_RSS KiB), log $(wc -l < "$T_DIR/net.log") lines"
t_stop_airlock; t_eq "SIGTERM: exit 0" "0" "$?"
t_done
