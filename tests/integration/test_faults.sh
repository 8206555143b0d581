#!/bin/bash
# Hardening, item 3: faults against a real airlock. Upstreams that refuse, reset, stall or
# answer garbage, an upstream resolver that times out or fails, clients that half-close,
# abort, trickle (slowloris) or idle, a network log that cannot be written, SIGHUP under
# load. Each ends with the right answer or a clean close, the right log line, no crash, and
# airlock's open fds and RSS back near the baseline once it has settled (waited for, with a
# generous deadline). Timeouts are checked by their effect (the error, the log line, that the
# client's own limit was not what ended it), never by a wall-clock budget.
#
# Addresses in the test's own namespace: airlock 127.0.0.1; faults_upstream.py on 127.0.0.3
# (ok.test, :80 and :443), nothing on 127.0.0.5 (refused.test), a full accept queue on
# 127.0.0.6 (blackhole.test), a TLS port that never speaks on 127.0.0.8 (tlsstall.test), a
# resolver that never answers or says SERVFAIL on 127.0.0.9 (slow.test, servfail.test,
# through dnsmasq on 127.0.0.53), faults_upstream.py again on 127.0.0.10 (keep.test, :80), keeping
# idle connections for 120 s.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
ASAN=
ldd "$AIRLOCK" 2>/dev/null | grep -q libasan && ASAN=1
# Under ASan, RSS figures mean something only without the quarantine (freed memory kept for
# use-after-free detection) and with the allocator giving free pages back like glibc's trim;
# the margins below are wider there (ASan's allocator rounds and keeps size classes).
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0:allocator_release_to_os_interval_ms=500"
RSS_MARGIN=2048
[ -n "$ASAN" ] && RSS_MARGIN=8192
RSS_AFTER_BURST=1 # cleared after a burst under ASan, whose allocator keeps what it freed

for a in 3 5 6 8 9 10; do ip addr add "127.0.0.$a/8" dev lo 2>/dev/null || true; done
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["ok.test", "refused.test", "blackhole.test", "tlsstall.test", "slow.test",
          "servfail.test", "gone.test", "hup.test", "keep.test"]
YAML
"$PY" "$HERE/faults_dns.py" 127.0.0.9 > /dev/null 2>&1 &
T_PIDS+=($!)
t_start_resolver --address=/ok.test/127.0.0.3 --address=/hup.test/127.0.0.3 \
    --address=/refused.test/127.0.0.5 --address=/blackhole.test/127.0.0.6 \
    --address=/tlsstall.test/127.0.0.8 --address=/gone.test/ --address=/keep.test/127.0.0.10 \
    --server=/slow.test/127.0.0.9 --server=/servfail.test/127.0.0.9 || exit 1
t_upstream_ca
t_upstream_cert "DNS:ok.test,DNS:hup.test,DNS:tlsstall.test" "$T_DIR/up"
UPLOG="$T_DIR/up.log"
"$PY" "$HERE/faults_upstream.py" 127.0.0.3 "$UPLOG" --http 80 \
    --https 443 "$T_DIR/up.pem" "$T_DIR/up.key" > /dev/null 2>&1 &
T_PIDS+=($!)
"$PY" "$HERE/faults_upstream.py" 127.0.0.6 "$T_DIR/blackhole.log" --backlog-full 80 \
    > "$T_DIR/blackhole.out" 2>&1 &
T_PIDS+=($!)
"$PY" "$HERE/faults_upstream.py" 127.0.0.8 "$UPLOG" --hold 443 > /dev/null 2>&1 &
T_PIDS+=($!)
KEEPLOG="$T_DIR/keep.log"
"$PY" "$HERE/faults_upstream.py" 127.0.0.10 "$KEEPLOG" --idle 120 --http 80 > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 && t_wait_port 127.0.0.8 443 && t_wait_port 127.0.0.10 80 || exit 1
# the backlog fillers are connected once it says ready
until_ok 'grep -q "^ready" "$T_DIR/blackhole.out"' || { t_fail "the blackhole upstream never got ready"; exit 1; }
AIRLOCK_ARGS=(--upstream-ca "$T_DIR/upca.pem" --upstream-timeout 2 --connect-timeout 2
    --client-idle-timeout 2 --allow-upstream-cidr 127.0.0.3/32 --allow-upstream-cidr 127.0.0.5/32
    --allow-upstream-cidr 127.0.0.6/32 --allow-upstream-cidr 127.0.0.8/32
    --allow-upstream-cidr 127.0.0.10/32)
t_start_airlock "$T_DIR/allow.yaml" "${AIRLOCK_ARGS[@]}" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
CLIENT="$HERE/faults_client.py"

logged() { t_logged "$1" "$2" -E; } # logged "description" 'ERE a log line must match'
# up_open [LOG]: sockets an upstream (faults_upstream.py) still has open, by its log (default UPLOG)
up_open() { awk '/^open/ {o++} /^close/ {c++} END {print o - c}' "${1:-$UPLOG}"; }
# curl through airlock: prints "CODE SIZE TIME" and the exit status as "rc=N". curl's own
# limit (-m 60, exit 28) is only a guard: every fault here ends long before it.
fetch() {
    curl -s -o /dev/null -m 60 --cacert "$CA" -H 'Connection: close' \
        -w '%{http_code} %{size_download} %{time_total}' "$@"
    echo " rc=$?"
}
BASE_FDS=0
BASE_RSS=0
# settled: airlock's fds are back to the baseline and the upstream sockets are closed (and
# its RSS within the margin, where that is checked)
settled() {
    [ "$(t_fds "$AIRLOCK_PID")" = "$BASE_FDS" ] && [ "$(up_open)" = 0 ] &&
        { [ -z "$RSS_AFTER_BURST" ] || [ "$(t_rss_kb "$AIRLOCK_PID")" -le $((BASE_RSS + RSS_MARGIN)) ]; }
}
# steady: the fd count did not change for half a second and no upstream socket is open
steady() {
    local a
    a=$(t_fds "$AIRLOCK_PID")
    sleep 0.5
    [ "$a" = "$(t_fds "$AIRLOCK_PID")" ] && [ "$(up_open)" = 0 ]
}
# settle_check LABEL: once settled (waited for, up to 30 s), fds back to the baseline, RSS
# within a margin, the upstream sockets closed, airlock alive
settle_check() {
    until_ok settled 30
    if ! kill -0 "$AIRLOCK_PID" 2>/dev/null; then
        t_fail "$1: airlock is gone"; tail -5 "$T_DIR/airlock.err"; return
    fi
    local fds rss
    fds=$(t_fds "$AIRLOCK_PID")
    rss=$(t_rss_kb "$AIRLOCK_PID")
    echo "# figures: $1: fds $fds (baseline $BASE_FDS), RSS $rss KiB (baseline $BASE_RSS KiB), upstream sockets open $(up_open)"
    t_eq "$1: fds back to the baseline" "$BASE_FDS" "$fds"
    if [ -n "$RSS_AFTER_BURST" ]; then
        t_check "$1: RSS within $((RSS_MARGIN / 1024)) MiB of the baseline ($rss vs $BASE_RSS KiB)" \
            test "$rss" -le $((BASE_RSS + RSS_MARGIN))
    else
        t_not_made "$1: RSS back near the baseline" "ASan's allocator never returns a burst's memory"
    fi
    t_eq "$1: no upstream socket left open" "0" "$(up_open)"
}

# ---- baseline, after a warm-up (CA leaf minted, resolver, log thread, and the allocator's
# high-water mark: 400 connections at once, as in the slowloris phase) ----
"$PY" "$CLIENT" slowloris 127.0.0.1 80 200 1.2 ok.test > /dev/null &
W1=$!
"$PY" "$CLIENT" idle 127.0.0.1 80 200 1.2 > /dev/null &
W2=$!
wait "$W1" "$W2"
for i in 1 2 3; do
    fetch http://ok.test/ok > /dev/null
    fetch https://ok.test/ok > /dev/null
    dig +short @127.0.0.1 ok.test > /dev/null
done
t_eq "warm-up: HTTP and HTTPS served" "200 200" \
    "$(fetch http://ok.test/ok | cut -d' ' -f1) $(fetch https://ok.test/ok | cut -d' ' -f1)"
until_ok steady 30 || t_fail "airlock's fds never settled after the warm-up"
BASE_FDS=$(t_fds "$AIRLOCK_PID")
BASE_RSS=$(t_rss_kb "$AIRLOCK_PID")
echo "# figures: baseline: fds $BASE_FDS, RSS $BASE_RSS KiB"

# ---- upstream faults; the slow ones run side by side ----
SLOW=()
for f in blackhole:http://blackhole.test/x stallhead:http://ok.test/stall-head \
         stallmid:http://ok.test/stall-mid-head stallbody:http://ok.test/stall-body \
         tlsstall:https://tlsstall.test/x dnsslow:http://slow.test/x servfail:http://servfail.test/x; do
    fetch "${f#*:}" > "$T_DIR/f.${f%%:*}" &
    SLOW+=($!)
done
out=$(fetch http://refused.test/x)
t_eq "upstream refuses: 502" "502" "${out%% *}"
logged "upstream refuses: ERROR line" '^ERROR GET http://refused.test/x -> Connection failed: connection refused$'
out=$(fetch http://ok.test/reset-head)
t_eq "upstream resets mid-headers: 502" "502" "${out%% *}"
logged "upstream resets mid-headers: ERROR line" \
    '^ERROR GET http://ok.test/reset-head -> Server disconnected before sending a response \(connection reset by peer\)$'
out=$(fetch http://ok.test/reset-body)
t_contains "upstream resets mid-body: the client sees a short body and an error" "$out" "200 10 "
case "$out" in *" rc=0") t_fail "upstream resets mid-body: curl did not notice ($out)" ;; *) t_ok "upstream resets mid-body: curl notices ($out)" ;; esac
logged "upstream resets mid-body: ERROR line" \
    '^ERROR GET http://ok.test/reset-body -> Server disconnected during the response \(connection reset by peer\)$'
out=$(fetch http://ok.test/close-now)
t_eq "upstream closes without answering: 502" "502" "${out%% *}"
logged "upstream closes without answering: ERROR line" \
    '^ERROR GET http://ok.test/close-now -> Server disconnected before sending a response \(connection closed\)$'
out=$(fetch http://ok.test/garbage)
t_eq "upstream answers garbage: 502" "502" "${out%% *}"
logged "upstream answers garbage: ERROR line" '^ERROR GET http://ok.test/garbage -> invalid response from upstream: '
out=$(fetch http://ok.test/big-head)
t_eq "upstream answers a 70 KiB head: 502" "502" "${out%% *}"
logged "upstream answers a 70 KiB head: ERROR line" '^ERROR GET http://ok.test/big-head -> invalid response from upstream: .*too large'
out=$(fetch http://gone.test/x)
t_eq "NXDOMAIN: 502" "502" "${out%% *}"
logged "NXDOMAIN: ERROR line" '^ERROR GET http://gone.test/x -> Connection failed: '
wait "${SLOW[@]}"
out=$(cat "$T_DIR/f.blackhole")
t_eq "connect times out (--connect-timeout 2): 502" "502" "${out%% *}"
logged "connect times out: ERROR line" '^ERROR GET http://blackhole.test/x -> Connection failed: connect timed out$'
out=$(cat "$T_DIR/f.stallhead")
t_eq "upstream stalls before answering (--upstream-timeout 2): 502" "502" "${out%% *}"
logged "upstream stalls before answering: ERROR line" '^ERROR GET http://ok.test/stall-head -> Upstream did not answer in time$'
out=$(cat "$T_DIR/f.stallmid")
t_eq "upstream stalls mid-headers: 502" "502" "${out%% *}"
logged "upstream stalls mid-headers: ERROR line" '^ERROR GET http://ok.test/stall-mid-head -> Upstream did not answer in time$'
out=$(cat "$T_DIR/f.stallbody")
t_contains "upstream stalls mid-body: 10 bytes, then a close" "$out" "200 10 "
case "$out" in *" rc=0") t_fail "upstream stalls mid-body: curl did not notice ($out)" ;; *) t_ok "upstream stalls mid-body: curl notices ($out)" ;; esac
secs=$(echo "$out" | cut -d' ' -f3)
t_check "upstream stalls mid-body: dropped by airlock, not before the 2 s timeout ($secs s)" \
    awk "BEGIN {exit !($secs >= 1.8)}"
logged "upstream stalls mid-body: ERROR line" '^ERROR GET http://ok.test/stall-body -> Upstream stalled during the response$'
out=$(cat "$T_DIR/f.tlsstall")
t_eq "upstream TLS handshake stalls: 502" "502" "${out%% *}"
logged "upstream TLS handshake stalls: ERROR line" '^ERROR GET https://tlsstall.test/x -> Connection failed: TLS handshake with upstream timed out$'
out=$(cat "$T_DIR/f.dnsslow")
t_eq "upstream DNS times out: 502" "502" "${out%% *}"
echo "# figures: upstream DNS timeout answered after $(echo "$out" | cut -d' ' -f3) s"
logged "upstream DNS times out: ERROR line" '^ERROR GET http://slow.test/x -> Connection failed: .*(timed out|SERVFAIL)'
out=$(cat "$T_DIR/f.servfail")
t_eq "upstream DNS answers SERVFAIL: 502" "502" "${out%% *}"
logged "upstream DNS answers SERVFAIL: ERROR line" '^ERROR GET http://servfail.test/x -> Connection failed: DNS server returned SERVFAIL$'
t_eq "after the upstream faults: a normal request" "200" "$(fetch http://ok.test/ok | cut -d' ' -f1)"
settle_check "upstream faults"

# ---- clients that half-close or give up ----
out=$("$PY" "$CLIENT" halfclose 127.0.0.1 80 ok.test '/slow?s=0.5')
t_eq "client half-closes after a full request: the response still arrives" "status=200 body=ok eof=1" "$out"
logged "half-close: allowed line" '^allowed GET http://ok.test/slow\?s=0.5 -> 200$'
out=$("$PY" "$CLIENT" halfclose 127.0.0.1 443 ok.test '/slow?s=0.5' tls "$CA")
t_eq "client half-closes over TLS: the response still arrives" "status=200 body=ok eof=1" "$out"
before=$(grep -c '^upload aborted' "$UPLOG")
"$PY" "$CLIENT" abort 127.0.0.1 80 ok.test 10000000 1000000 > /dev/null
until_ok '[ "$(grep -c "^upload aborted" "$UPLOG")" -ge $((before + 1)) ]'
logged "client aborts mid-upload: ERROR line" \
    '^ERROR POST http://ok.test/upload -> Client disconnected before the request ended\.$'
t_eq "client aborts mid-upload: the upstream sees the upload end early" "$((before + 1))" \
    "$(grep -c '^upload aborted' "$UPLOG")"
"$PY" "$CLIENT" abort 127.0.0.1 80 ok.test 10000000 1000000 rst > /dev/null
until_ok '[ "$(grep -c "^upload aborted" "$UPLOG")" -ge $((before + 2)) ]'
until_ok '[ "$(grep -c "^ERROR POST http://ok.test/upload -> Client disconnected" "$T_DIR/net.log")" -ge 2 ]'
t_eq "client resets mid-upload: the upstream sees the upload end early" "$((before + 2))" \
    "$(grep -c '^upload aborted' "$UPLOG")"
t_eq "client resets mid-upload: two ERROR lines in all" "2" \
    "$(grep -c '^ERROR POST http://ok.test/upload -> Client disconnected' "$T_DIR/net.log")"
# a client that is merely slow is not an upstream fault (--upstream-timeout 2); one that
# stops reading for longer than --client-idle-timeout is an idle client
out=$("$PY" "$CLIENT" trickle 127.0.0.1 80 ok.test 8 0.5)
t_eq "slow upload (8 x 1000 bytes, one every 0.5 s, 4 s in all): answered" "status=200 body=8000 bytes" "$out"
out=$("$PY" "$CLIENT" slowread 127.0.0.1 80 ok.test '/bytes?n=3000000' 0 262144 0.3)
t_eq "steady slow reader (256 KiB every 0.3 s, about 3.5 s in all): the whole body" \
    "status=200 bytes=3000000 eof=1" "$out"
out=$("$PY" "$CLIENT" slowread 127.0.0.1 80 ok.test '/bytes?n=20000000' 4)
case "$out" in
    "status=200 bytes="*" eof=1") t_ok "reader idle for 4 s: cut with a clean close ($out)" ;;
    *) t_fail "reader idle for 4 s: $out" ;;
esac
logged "reader idle for 4 s: the ERROR line blames the client, not upstream" \
    '^ERROR GET http://ok.test/bytes\?n=20000000 -> Client stopped reading the response$'
settle_check "client aborts"

# ---- slowloris and idle connections (--client-idle-timeout 2) ----
"$PY" "$CLIENT" slowloris 127.0.0.1 80 200 7 ok.test > "$T_DIR/slowloris.out" &
SL=$!
"$PY" "$CLIENT" idle 127.0.0.1 80 200 4 > "$T_DIR/idle.out" &
ID=$!
# a figure, not a check: most of the 400 connections are open at once
until_ok '[ "$(t_fds "$AIRLOCK_PID")" -ge $((BASE_FDS + 300)) ]' 10
fds_during=$(t_fds "$AIRLOCK_PID")
served=0
for i in $(seq 1 10); do
    [ "$(fetch http://ok.test/ok | cut -d' ' -f1)" = 200 ] && served=$((served + 1))
    sleep 0.2
done
t_eq "while 400 bad clients hold connections, a normal client is served" "10" "$served"
echo "# figures: fds during slowloris+idle: $fds_during"
wait "$ID"
out=$(cat "$T_DIR/idle.out")
echo "# figures: idle: $out"
t_contains "200 idle connections are all dropped" "$out" "opened=200 closed=200 "
wait "$SL"
out=$(cat "$T_DIR/slowloris.out")
echo "# figures: slowloris: $out"
# dropped at the 2 s head deadline: all 200 are closed by airlock while the client still
# trickles (for 7 s), so the trickle does not extend the deadline; none before it
t_contains "200 slowloris connections (1 byte/s) are all dropped while trickling" "$out" \
    "opened=200 closed=200 "
t_check "slowloris: none dropped before the 2 s head deadline ($out)" awk -v l="$out" \
    'BEGIN { split(l, f, /[ =]/); for (i = 1; i in f; i += 2) v[f[i]] = f[i + 1]
             exit !(v["first"] >= 1.9) }'
t_eq "slowloris: one 408 line per dropped connection" "200" \
    "$(grep -c '^BLOCKED - - -> 408 (request head not received in time)$' "$T_DIR/net.log")"
settle_check "slowloris and idle"

# ---- SIGHUP under load: valid and invalid allowlists, 20 times ----
printf 'domains: ["ok.test", "hup.test", "keep.test"]\n' > "$T_DIR/allow-good.yaml"
printf 'domains: ["ok.test", "hup.test"\nbogus: [\n' > "$T_DIR/allow-bad.yaml"
errs_before=$(wc -l < "$T_DIR/airlock.err")
"$PY" "$CLIENT" load 127.0.0.1 80 hup.test /ok 5 "$CA" > "$T_DIR/load.out" &
LD=$!
t_wait_log '^allowed GET https\?://hup.test/ok -> 200$' || t_fail "SIGHUP: the load never started"
# each SIGHUP is sent once airlock has answered the previous one (a line on stderr)
for i in $(seq 1 20); do
    if [ $((i % 2)) = 1 ]; then f=allow-good.yaml; else f=allow-bad.yaml; fi
    cp "$T_DIR/$f" "$T_DIR/allow.yaml.new" && mv "$T_DIR/allow.yaml.new" "$T_DIR/allow.yaml"
    t_reload || t_fail "SIGHUP $i: no answer on stderr"
done
wait "$LD"
out=$(cat "$T_DIR/load.out")
echo "# figures: SIGHUP load: $out"
total=$(echo "$out" | sed -n 's/^total=\([0-9]*\) .*/\1/p')
t_contains "SIGHUP x20 under load: every request answered 200" "$out" "ok=$total other=- errors=0"
t_check "SIGHUP x20 under load: a real load ($total requests)" test "${total:-0}" -gt 100
kill -0 "$AIRLOCK_PID"; t_check "SIGHUP x20: airlock alive" test $? -eq 0
reloads=$(tail -n +$((errs_before + 1)) "$T_DIR/airlock.err" | grep -c 'allowlist reloaded')
t_eq "SIGHUP x20: 10 reloads reported" "10" "$reloads"
bad=$(tail -n +$((errs_before + 1)) "$T_DIR/airlock.err" | grep -c 'allow.yaml:')
t_check "SIGHUP x20: the 10 invalid files are reported with a position ($bad lines)" test "$bad" -ge 10
lines=$(grep -Ec '^allowed GET https?://hup.test/ok -> 200$' "$T_DIR/net.log")
t_eq "SIGHUP x20: exactly one log line per request" "$total" "$lines"
code=$(fetch http://ok.test/ok | cut -d' ' -f1)
t_eq "after the last (invalid) reload the last valid policy holds" "200" "$code"
settle_check "SIGHUP under load"

# ---- a burst of connections, then quiet: the freed heap goes back to the OS (glibc keeps
# it otherwise: ~100 MB after 10,000 connections, tests/bench/soak.sh) ----
rss0=$(t_rss_kb "$AIRLOCK_PID")
out=$("$PY" "$CLIENT" burst 127.0.0.1 ok.test /ok 3000 500 "$CA" "$AIRLOCK_PID")
t_contains "burst: 3000 connections (500 TLS) held at once, each answered" "$out" "opened=3000 ok=3000 "
peak=$(echo "$out" | sed -n 's/.*peak_rss_kib=\([0-9]*\).*/\1/p')
# airlock trims the heap once the traffic goes quiet (it looks every PX_TRIM_CHECK_MS)
t1=$SECONDS
[ -n "$ASAN" ] ||
    until_ok '[ $((($(t_rss_kb "$AIRLOCK_PID") - rss0) * 4)) -le $((${peak:-0} - rss0)) ]' 30
rss1=$(t_rss_kb "$AIRLOCK_PID")
echo "# figures: burst: RSS $rss0 KiB before, $peak KiB with 3000 open, $rss1 KiB $((SECONDS - t1)) s after closing"
if [ -n "$ASAN" ]; then
    t_not_made "burst: the growth goes back to the OS" "ASan's allocator ignores malloc_trim"
    RSS_AFTER_BURST=
else
    t_check "burst: at most a quarter of the growth stays resident ($rss0 -> $peak -> $rss1 KiB)" \
        test $(((rss1 - rss0) * 4)) -le $((${peak:-0} - rss0))
fi
settle_check "burst"

# ---- the upstream pool after a burst to one host: 100 keep-alive requests at once, each on an
# upstream connection of its own (the upstream takes 1.5 s to answer, under the 2 s upstream
# timeout). Each of airlock's loops keeps 16 of its own idle (PX_POOL_CORE_PER_KEY, for
# PX_POOL_IDLE_MS) and closes the burst's surplus after PX_POOL_SURPLUS_MS (1 s) idle: each
# costs tens of KB of TLS and heap ----
loops=${AIRLOCK_WORKERS:-auto} # AIRLOCK_WORKERS, else airlock's default: one loop per CPU
[ "$loops" = auto ] && loops=$(nproc)
out=$("$PY" "$CLIENT" together 127.0.0.1 keep.test "/slow?s=1.5" 100)
t_eq "pool burst: 100 requests answered 200" "ok=100" "$out"
n0=$(up_open "$KEEPLOG")
echo "# figures: pool burst: $n0 upstream connections open right after the answers ($loops loops)"
t_check "pool burst: more than 16 per loop were open ($n0)" test "$n0" -gt $((16 * loops))
until_ok '[ "$(up_open "$KEEPLOG")" -le $((16 * loops)) ]' 10
sleep 1.5
kept=$(up_open "$KEEPLOG")
echo "# figures: pool burst: $kept kept"
t_check "pool burst: 16 to 16 per loop kept, the surplus closed ($kept)" \
    test "$kept" -ge 16 -a "$kept" -le $((16 * loops))
t_eq "pool burst: the kept ones serve the next request" "200" \
    "$(fetch http://keep.test/ok | cut -d' ' -f1)"
t_eq "pool burst: ... without a new upstream connection" "$kept" "$(up_open "$KEEPLOG")"

t_stop_airlock; t_eq "SIGTERM: exit 0" "0" "$?"
cp "$T_DIR/allow-good.yaml" "$T_DIR/allow.yaml"

# ---- the network log becomes unwritable (a 64 KiB tmpfs, filled) ----
mkdir -p "$T_DIR/small"
mount -t tmpfs -o size=64k tmpfs "$T_DIR/small" || { t_fail "cannot mount a tmpfs"; t_done; exit; }
trap 'umount "$T_DIR/small" 2>/dev/null; t_cleanup' EXIT
rm -f "$T_DIR/net.log"
ln -s "$T_DIR/small/net.log" "$T_DIR/net.log"
t_start_airlock "$T_DIR/allow.yaml" "${AIRLOCK_ARGS[@]}" || exit 1
RSS_AFTER_BURST=1 # a new process
fetch http://ok.test/ok > /dev/null
until_ok steady 30 || t_fail "airlock's fds never settled after the restart"
BASE_FDS=$(t_fds "$AIRLOCK_PID")
BASE_RSS=$(t_rss_kb "$AIRLOCK_PID")
dd if=/dev/zero of="$T_DIR/small/fill" bs=1k count=1000 2>/dev/null
# long lines: the page the log file already has must fill up before writes fail
PAD=$(head -c 1500 /dev/zero | tr '\0' p)
codes=""
for i in $(seq 1 20); do codes="$codes$(fetch "http://ok.test/ok?full=$i&pad=$PAD" | cut -d' ' -f1) "; done
t_eq "log device full: still serving" "$(printf '200 %.0s' $(seq 1 20))" "$codes"
until_ok 'grep -q "network log write failed: No space left on device" "$T_DIR/airlock.err"'
t_check "log device full: stderr says so" test $? -eq 0
t_eq "log device full: said once, not per line" "1" "$(grep -c 'network log write failed' "$T_DIR/airlock.err")"
rm -f "$T_DIR/small/fill"
fetch "http://ok.test/ok?after=1" > /dev/null
logged "log device freed: lines are written again" '^allowed GET http://ok.test/ok\?after=1 -> 200$'
settle_check "log device full"
t_stop_airlock; t_eq "SIGTERM after log failures: exit 0" "0" "$?"
umount "$T_DIR/small"

t_done
