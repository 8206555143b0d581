#!/bin/bash
# Hold and ask (docs/approvals.md): with `on_block: hold` a request the allowlist would block
# waits while a decider answers on the control socket (`airlock pending`, `approve`, `deny`):
# approved it goes on (200 within a second of the approval), denied or timed out it gets the
# allowlist's 403 with a "reason". Identical holds are one question; a conversation approval
# lets the same request through later without a hold; past the per-conversation bound a request
# is blocked at once; a client that goes away frees its hold; warn mode is unaffected. Each
# approval and denial is a DECISION event (who, what, scope) in the text log and in the JSON
# events (--events, valid against docs/events.schema.json), counted in /metrics. Without a
# decider a request is not held but refused at once.
# Upstream: a recorder that answers 200.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
on_block: hold
hold_seconds: 30
domains: [open.test]
YAML
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
t_upstream_ca
t_upstream_cert "DNS:other.test" "$T_DIR/other-tls"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 443 "$T_DIR/rec" "$T_DIR/other-tls.pem" \
    "$T_DIR/other-tls.key" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_wait_port 127.0.0.3 443 || exit 1
t_start_resolver --address=/open.test/127.0.0.3 --address=/other.test/127.0.0.3
CTL=$T_DIR/control.sock
export AIRLOCK_CONTROL=$CTL
t_start_airlock "$T_DIR/allow.yaml" --control "$CTL" --allow-upstream-cidr 127.0.0.3/32 \
    --upstream-ca "$T_DIR/upca.pem" --events "$T_DIR/events.json" --metrics 127.0.0.1:9464 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

nrec() { ls "$T_DIR"/rec | wc -l; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# bg NAME URL [CURL-ARGS]: curl in the background (its pid in $T_DIR/NAME.pid); $T_DIR/NAME.out
# gets "status end_ms" when it ends (status/version with --http2), NAME.body the body
bg() {
    local w='%{http_code}'
    case "${3:-}" in --http2) w='%{http_code}/%{http_version}' ;; esac
    (curl -sS -m 40 -o "$T_DIR/$1.body" -w "$w" "${@:3}" "$2" > "$T_DIR/$1.code" 2>/dev/null &
        echo $! > "$T_DIR/$1.pid"
        wait $!
        echo "$(cat "$T_DIR/$1.code") $(now_ms)" > "$T_DIR/$1.out") &
    T_PIDS+=($!)
}
# hold_id PATH: the ID `airlock pending` lists for a hold of PATH (waits for it)
hold_id() {
    HOLD_URL=other.test$1
    # shellcheck disable=SC2016 # expanded by until_ok's eval
    until_ok '"$AIRLOCK" pending | awk -v p="$HOLD_URL" '"'"'$NF == p {f = 1} END {exit !f}'"'"'' ||
        return 1
    "$AIRLOCK" pending | awk -v p="$HOLD_URL" '$NF == p {print $1}' | head -1
}

t_eq "the control socket is mode 0600" 600 "$(stat -c %a "$CTL")"
t_eq "an allowed request is not held: 200" 200 "$(curl -sS -m 10 -o /dev/null -w '%{http_code}' http://open.test/)"

# held, then approved from the CLI
"$AIRLOCK" pending --follow > "$T_DIR/follow.out" 2>&1 &
T_PIDS+=($!)
until_ok 'grep -q "nothing held; waiting" "$T_DIR/follow.out"' 10
n0=$(nrec)
bg a http://other.test/a
id=$(hold_id /a)
t_check "a blocked request is held and listed by airlock pending" test -n "$id"
t_eq "... nothing reached the upstream while held" "$n0" "$(nrec)"
sleep 0.3
t_check "... still waiting" test ! -e "$T_DIR/a.out"
until_ok 'grep -q "^left $id [0-9]*s$" "$T_DIR/follow.out"' 5
t_check "... pending --follow counts it down" grep -q "^left $id [0-9]*s$" "$T_DIR/follow.out"
t0=$(now_ms)
out=$("$AIRLOCK" approve "$id")
t_contains "airlock approve answers ok" "$out" "ok $id approved 1"
until_ok 'test -s "$T_DIR/a.out"' 10
read -r code t1 < "$T_DIR/a.out"
t_eq "... the held request is answered 200" 200 "$code"
t_check "... within 1 s of the approval ($((t1 - t0)) ms)" test $((t1 - t0)) -lt 1000
t_eq "... it reached the upstream" $((n0 + 1)) "$(nrec)"
t_logged "... logged allowed, with the hold and who approved it" \
    "^allowed GET http://other\.test/a -> 200 \[held: $id approved by uid $(id -u)\]$"
t_logged "... the approval is a DECISION line (who, what, scope)" \
    "^DECISION $id approved GET other\.test /a by uid $(id -u) (scope once, 1 request)$"
t_check "pending --follow streamed the new hold" grep -q "^new $id .* GET other\.test /a$" "$T_DIR/follow.out"
t_check "... and its decision" grep -q "^decided $id approved uid $(id -u)$" "$T_DIR/follow.out"

# identical holds are one question, answered once
bg d1 http://other.test/dup
bg d2 http://other.test/dup
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '"$AIRLOCK" pending | grep -q " 2 *- *GET *other\.test/dup$"'
t_eq "two identical requests: one hold with 2 requests" 1 "$("$AIRLOCK" pending | grep -c 'other\.test/dup$')"
id=$(hold_id /dup)
t_contains "... one approval answers both" "$("$AIRLOCK" approve "$id")" "ok $id approved 2"
until_ok 'test -s "$T_DIR/d1.out" && test -s "$T_DIR/d2.out"' 10
t_eq "... both 200" "200 200" "$(cut -d' ' -f1 "$T_DIR/d1.out") $(cut -d' ' -f1 "$T_DIR/d2.out")"

# denied
bg deny http://other.test/deny
id=$(hold_id /deny)
t_contains "airlock deny answers ok" "$("$AIRLOCK" deny "$id")" "ok $id denied 1"
until_ok 'test -s "$T_DIR/deny.out"' 10
t_eq "... the held request is answered 403" 403 "$(cut -d' ' -f1 "$T_DIR/deny.out")"
t_contains "... with reason not approved" "$(cat "$T_DIR/deny.body")" '"reason": "not approved"'
t_contains "... the allowlist's error" "$(cat "$T_DIR/deny.body")" '"error": "blocked_by_network_allowlist"'
t_logged "... logged BLOCKED with who denied it" \
    "^BLOCKED GET http://other\.test/deny -> 403 \[held: $id denied by uid $(id -u)\]$"
t_logged "... the denial is a DECISION line" "^DECISION $id denied GET other\.test /deny by uid $(id -u) (1 request)$"
t_check "... pending --follow saw it" grep -q "^decided $id denied" "$T_DIR/follow.out"
t_contains "an unknown ID is an error" "$("$AIRLOCK" deny h999 2>&1)" "error no pending hold h999"

# a request with a body: not read while held, relayed whole once approved
head -c 300000 /dev/urandom > "$T_DIR/post.bin"
bg post http://other.test/post -X POST --data-binary "@$T_DIR/post.bin"
id=$(hold_id /post)
t_check "a POST with a 300 KB body is held" test -n "$id"
t_contains "... approved" "$("$AIRLOCK" approve "$id")" "ok $id approved 1"
until_ok 'test -s "$T_DIR/post.out"' 10
t_eq "... answered 200" 200 "$(cut -d' ' -f1 "$T_DIR/post.out")"
last=$(ls -t "$T_DIR"/rec/conn-*.bin | head -1)
t_check "... the upstream got the whole body" test "$(stat -c %s "$last")" -gt 300000
# the same in one write (no Expect: 100-continue), so the head and the body's first bytes
# come in one read: the bytes read with the head are kept while held, not dropped
(/usr/bin/python3 - "$T_DIR/post.bin" > "$T_DIR/post2.code" 2>&1 << 'PY'
import socket, sys
body = open(sys.argv[1], "rb").read()
s = socket.create_connection(("other.test", 80), timeout=30)
s.sendall(b"POST /post2 HTTP/1.1\r\nHost: other.test\r\nContent-Length: %d\r\n"
          b"Connection: close\r\n\r\n" % len(body) + body)
print(s.recv(64).split(b" ")[1].decode())
PY
    echo "$(cat "$T_DIR/post2.code") $(now_ms)" > "$T_DIR/post2.out") &
T_PIDS+=($!)
id=$(hold_id /post2)
t_check "a POST sent whole (no Expect) is held" test -n "$id"
t_contains "... approved" "$("$AIRLOCK" approve "$id")" "ok $id approved 1"
until_ok 'test -s "$T_DIR/post2.out"' 10
t_eq "... answered 200" 200 "$(cut -d' ' -f1 "$T_DIR/post2.out")"
last=$(ls -t "$T_DIR"/rec/conn-*.bin | head -1)
t_check "... the upstream got the whole body" test "$(stat -c %s "$last")" -gt 300000

# over HTTP/2 (TLS): held and approved; a client that goes away frees its hold at once
bg h2 https://other.test/h2 --http2 --cacert "$CA"
id=$(hold_id /h2)
t_check "HTTP/2: a blocked request is held" test -n "$id"
t_contains "... approved" "$("$AIRLOCK" approve "$id")" "ok $id approved 1"
until_ok 'test -s "$T_DIR/h2.out"' 10
t_eq "... answered 200 over HTTP/2" 200/2 "$(cut -d' ' -f1 "$T_DIR/h2.out")"
t_logged "... logged allowed with the hold" "^allowed GET https://other\.test/h2 -> 200 \[held: $id approved by uid $(id -u)\]$"
bg h2gone https://other.test/h2gone --http2 --cacert "$CA"
id=$(hold_id /h2gone)
t_check "HTTP/2: a held request whose client goes away" test -n "$id"
kill "$(cat "$T_DIR/h2gone.pid")"
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '! "$AIRLOCK" pending | grep -q other.test/h2gone' 5
t_check "... its hold goes at once" sh -c "! \"$AIRLOCK\" pending | grep -q other.test/h2gone"

# scope conversation: the same request later goes through without a hold
bg c1 http://other.test/conv
id=$(hold_id /conv)
t_contains "approve --scope conversation" "$("$AIRLOCK" approve "$id" --scope conversation)" "ok $id approved"
until_ok 'test -s "$T_DIR/c1.out"' 10
t_eq "... the held request: 200" 200 "$(cut -d' ' -f1 "$T_DIR/c1.out")"
t_logged "... the DECISION line says the scope" "^DECISION $id approved GET other\.test /conv by uid .* (scope conversation, 1 request)$"
t0=$(now_ms)
t_eq "... the same request again: 200 at once" 200 "$(curl -sS -m 5 -o /dev/null -w '%{http_code}' http://other.test/conv)"
t_check "... without a hold ($(($(now_ms) - t0)) ms)" test $(($(now_ms) - t0)) -lt 1000
t_logged "... logged as approved for this conversation" \
    '^allowed GET http://other\.test/conv -> 200 \[approved for this conversation\]$'
bg c2 http://other.test/conv2
t_check "... another path is still held" test -n "$(hold_id /conv2)"
"$AIRLOCK" deny "$(hold_id /conv2)" > /dev/null

# a flood past the conversation's bound (32 held at once): the rest are blocked at once
for i in $(seq 1 40); do bg "f$i" "http://other.test/f$i"; done
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '[ "$(cat "$T_DIR"/f*.out 2>/dev/null | grep -c "^403 ")" -ge 8 ]' 10
sleep 0.3
t_eq "40 distinct holds at once: 32 held" 32 "$("$AIRLOCK" pending | grep -c 'other\.test/f')"
t_eq "... 8 blocked at once (403)" 8 "$(cat "$T_DIR"/f*.out | grep -c '^403 ')"
t_logged "... logged with the bound" \
    '^BLOCKED GET http://other\.test/f[0-9]* -> 403 \[not held: bound conversation hold count 32\]$'
t_eq "... the bound counts requests: an identical one is blocked too" 403 \
    "$(curl -sS -m 1 -o /dev/null -w '%{http_code}' http://other.test/f1 2>/dev/null)"
for id in $("$AIRLOCK" pending | awk '/other\.test\/f/ {print $1}'); do
    "$AIRLOCK" deny "$id" > /dev/null
done
until_ok '[ "$(cat "$T_DIR"/f*.out 2>/dev/null | grep -c "^403 ")" -ge 40 ]' 10
t_eq "... denied, every one answered 403" 40 "$(cat "$T_DIR"/f*.out | grep -c '^403 ')"

# a client that goes away (a reset) frees its hold at once
"$PY" - "$T_DIR/gone" <<'PYEOF' &
import os, socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", 80))
s.sendall(b"GET /gone HTTP/1.1\r\nHost: other.test\r\n\r\n")
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
PYEOF
T_PIDS+=($!)
id=$(hold_id /gone)
t_check "a held request whose client resets" test -n "$id"
touch "$T_DIR/gone"
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '! "$AIRLOCK" pending | grep -q other.test/gone' 5
t_check "... its hold goes at once" sh -c "! \"$AIRLOCK\" pending | grep -q other.test/gone"
t_check "... pending --follow says it is gone" grep -q "^decided $id gone gone$" "$T_DIR/follow.out"

# time out (hold_seconds: 1)
sed -i 's/hold_seconds: 30/hold_seconds: 1/' "$T_DIR/allow.yaml"
t_reload || exit 1
t0=$(now_ms)
out=$(curl -sS -m 10 -w ' %{http_code}' http://other.test/slow)
t_contains "hold_seconds: 1 → 403" "$out" " 403"
t_contains "... with reason timed out" "$out" '"reason": "timed out"'
t_check "... after about a second ($(($(now_ms) - t0)) ms)" test $(($(now_ms) - t0)) -ge 900 -a $(($(now_ms) - t0)) -lt 3000
t_logged "... logged BLOCKED, timed out" '^BLOCKED GET http://other\.test/slow -> 403 \[held: h[0-9]* timed out\]$'
t_check "... a time-out is no DECISION line" sh -c "! grep -q '^DECISION .* /slow ' '$T_DIR/net.log'"

# the decisions: no WARNING line any more; the JSON events; the counters
t_check "no decision is a WARNING line" sh -c "! grep -q '^WARNING: hold' '$T_DIR/net.log'"
out=$("$PY" "$HERE/decision_events.py" "$AIRLOCK_SRC/docs/events.schema.json" \
    "$T_DIR/events.json" "$T_DIR/net.log" 2> "$T_DIR/schema.err")
t_contains "the JSON events: the approval, with who and scope" "$out" \
    "DECISION h1 approved GET other.test /a by uid $(id -u) (scope once, 1 request)"
t_contains "... the one approval of 2 identical requests" "$out" "(scope once, 2 requests)"
t_contains "... a conversation approval" "$out" "/conv by uid $(id -u) (scope conversation, 1 request)"
t_contains "... the denial, without a scope" "$out" "denied GET other.test /deny by uid $(id -u) (1 request)"
t_contains "... each is the text log's line, as read back" "$out" "text-missing 0"
case "$out" in
*"invalid -"*) t_not_made "python3-jsonschema not installed" ;;
*) t_contains "... every event valid against the schema ($(head -c 300 "$T_DIR/schema.err"))" "$out" "invalid 0" ;;
esac
approved=$(grep -c '^DECISION h[0-9]* approved ' "$T_DIR/net.log")
denied=$(grep -c '^DECISION h[0-9]* denied ' "$T_DIR/net.log")
m=$(curl -sS -m 5 http://127.0.0.1:9464/metrics)
t_contains "/metrics counts the approvals ($approved)" "$m" \
    "airlock_decisions_total{kind=\"decision\",verdict=\"allowed\"} $approved"
t_contains "... and the denials ($denied)" "$m" \
    "airlock_decisions_total{kind=\"decision\",verdict=\"blocked\"} $denied"
t_contains "... no webhook: no call" "$m" 'airlock_decide_calls_total{outcome="allow"} 0'
t_contains "... its breaker closed" "$m" 'airlock_decide_breaker_open 0'

# warn mode is unaffected: what it would block goes on at once
printf 'mode: warn\non_block: hold\ndomains: [open.test]\n' > "$T_DIR/allow.yaml"
t_reload || exit 1
t0=$(now_ms)
t_eq "warn mode with on_block: hold: forwarded, 200" 200 "$(curl -sS -m 5 -o /dev/null -w '%{http_code}' http://other.test/w)"
t_check "... at once, not held" test $(($(now_ms) - t0)) -lt 1000
t_logged "... logged WARN" '^WARN GET http://other\.test/w -> 200 \[warn: host/path not in allowlist\]$'

# the options are checked at load, with their place
printf 'on_block: hold\nhold_seconds: 301\ndomains: [open.test]\n' > "$T_DIR/bad.yaml"
t_contains "hold_seconds over 300 is refused with its place" \
    "$("$AIRLOCK" check --allowlist "$T_DIR/bad.yaml" 2>&1)" "bad.yaml:2:"
printf 'hold_seconds: 5\ndomains: [open.test]\n' > "$T_DIR/bad.yaml"
t_contains "hold_seconds without on_block: hold is refused" \
    "$("$AIRLOCK" check --allowlist "$T_DIR/bad.yaml" 2>&1)" "hold_seconds: only with 'on_block: hold'"
printf 'on_block: wait\ndomains: [open.test]\n' > "$T_DIR/bad.yaml"
t_contains "an unknown on_block is refused" \
    "$("$AIRLOCK" check --allowlist "$T_DIR/bad.yaml" 2>&1)" "bad.yaml:1:11: on_block: expected 'block' or 'hold'"

# stopping with a request held: it ends with the process, nothing leaks (the ASan build)
printf 'on_block: hold\ndomains: [open.test]\n' > "$T_DIR/allow.yaml"
t_reload || exit 1
bg last http://other.test/last
t_check "a request held at shutdown" test -n "$(hold_id /last)"
t_stop_airlock
t_eq "airlock exits 0" 0 "$?"
t_check "the control socket is removed at exit" test ! -e "$CTL"
t_check "no sanitizer report" sh -c "! grep -q Sanitizer '$T_DIR/airlock.err'"

# --sandboxes: a hold names its sandbox; the decision goes to the sandbox's own log
SB=$T_DIR/sandboxes
mkdir -p "$SB/agent1"
printf 'source 127.0.0.1/32\n' > "$SB/agent1/sandbox.conf"
printf 'on_block: hold\ndomains: [open.test]\n' > "$SB/agent1/network-allowlist.yaml"
: > "$T_DIR/host.log"
: > "$T_DIR/airlock.err"
"$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 --sandboxes "$SB" \
    --log "$T_DIR/host.log" --confdir "$T_DIR/confdir" --listen-dns 127.0.0.1:53 \
    --listen-http 127.0.0.1:80 --listen-https off --allow-upstream-cidr 127.0.0.3/32 \
    --control "$CTL" 2> "$T_DIR/airlock.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q "ready (proxy" "$T_DIR/airlock.err"' 20 || { cat "$T_DIR/airlock.err"; exit 1; }
bg sb http://other.test/sb
id=$(hold_id /sb)
t_check "--sandboxes: the hold is listed" test -n "$id"
t_check "... with its sandbox's name" sh -c "\"$AIRLOCK\" pending | grep -q '^$id .* agent1 *GET *other\.test/sb$'"
t_contains "... denied" "$("$AIRLOCK" deny "$id")" "ok $id denied 1"
until_ok 'grep -q "^DECISION $id denied" "$SB/agent1/network-sandbox.log"' 10
t_check "... the decision is in the sandbox's log" grep -q "^DECISION $id denied GET other\.test /sb by uid $(id -u) (1 request)$" "$SB/agent1/network-sandbox.log"
t_stop_airlock
t_eq "airlock exits 0" 0 "$?"

# without a decider (no --control, no --decide-url) nobody could answer: a request the allowlist
# would hold is refused at once, on whichever loop (the default is one per CPU), not at its
# time-out
: > "$T_DIR/net.log"
unset AIRLOCK_CONTROL
t_start_airlock "$T_DIR/allow.yaml" --allow-upstream-cidr 127.0.0.3/32 || exit 1
t0=$(now_ms)
codes=""
for i in 1 2 3 4 5 6; do codes="$codes$(curl -s -o /dev/null -m 10 -w '%{http_code}' http://other.test/nd$i)"; done
t1=$(now_ms)
t_eq "no decider: six requests refused with the allowlist's 403" "403403403403403403" "$codes"
t_check "... at once, not after hold_seconds (30 s): $((t1 - t0)) ms for six" test $((t1 - t0)) -lt 5000
until_ok '[ "$(grep -c "other.test/nd" "$T_DIR/net.log")" -ge 6 ]' 5
t_eq "... each line saying why it was not held" 6 \
    "$(grep 'other.test/nd' "$T_DIR/net.log" | grep -c 'not held: nobody can decide (no --control or --decide-url)')"
t_stop_airlock
t_done
