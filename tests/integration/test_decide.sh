#!/bin/bash
# The decision webhook (docs/approvals.md, --decide-url): each new hold is POSTed as a JSON
# summary (never a header value or the body) to a python3 stand-in, whose answer decides it
# "by webhook": allow (once or for the conversation), deny; a hang, a 500 or a malformed answer
# denies. Three failures in a row open the circuit breaker: during the cool-down the stand-in
# sees no call and the hold waits for the control socket; after it one trial call closes the
# breaker again; a hang past a short hold's deadline counts as a failure too. Each decision is
# a DECISION event by webhook (text and --events JSON); /metrics counts the calls by outcome and
# shows the breaker and the calls under way. Upstream: a recorder that answers 200.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
on_block: hold
hold_seconds: 20
domains: [open.test]
YAML
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
echo allow > "$T_DIR/mode"
: > "$T_DIR/calls"
"$PY" "$HERE/decide_standin.py" 127.0.0.4 8080 "$T_DIR/mode" "$T_DIR/calls" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_wait_port 127.0.0.4 8080 || exit 1
t_start_resolver --address=/open.test/127.0.0.3 --address=/other.test/127.0.0.3 \
    --address=/judge.test/127.0.0.4
CTL=$T_DIR/control.sock
export AIRLOCK_CONTROL=$CTL
export AIRLOCK_TEST_DECIDE_TIMEOUT_MS=1000 AIRLOCK_TEST_DECIDE_COOLDOWN_MS=4000
t_start_airlock "$T_DIR/allow.yaml" --control "$CTL" --allow-upstream-cidr 127.0.0.3/32 \
    --allow-upstream-cidr 127.0.0.4/32 --decide-url http://127.0.0.4:8080/decide?x=1 \
    --events "$T_DIR/events.json" --metrics 127.0.0.1:9464 || exit 1

ncalls() { wc -l < "$T_DIR/calls"; }
# req PATH [CURL-ARGS]: the status of a request to other.test (answered within 15 s)
req() { curl -sS -m 15 -o "$T_DIR/body" -w '%{http_code}' "${@:2}" "http://other.test$1"; }
metrics() { curl -sS -m 5 http://127.0.0.1:9464/metrics; }
# metric NAME: the value of one series of /metrics (NAME as written, labels included)
metric() { metrics | awk -v n="$1" '$1 == n {print $2}'; }

# allowed once
out=$(req /w1 -H 'X-Token: topsecret-header' -X POST --data-binary 'topsecret-body')
t_eq "the webhook allows: 200" 200 "$out"
t_eq "... it was called once" 1 "$(ncalls)"
t_check "... with a JSON summary: id, sandbox, method, host, path" grep -q \
    '^application/json {"id":"h[0-9]*","sandbox":"-","method":"POST","host":"other\.test","path":"/w1","seconds_left":[12][0-9]}$' "$T_DIR/calls"
t_check "... never a header value or the body" sh -c "! grep -q topsecret '$T_DIR/calls'"
t_logged "... logged allowed, approved by webhook" \
    '^allowed POST http://other\.test/w1 -> 200 \[held: h[0-9]* approved by webhook\]$'
t_logged "... the approval is a DECISION line" \
    '^DECISION h[0-9]* approved POST other\.test /w1 by webhook (scope once, 1 request)$'
t_eq "... /metrics: one call answered allow" 1 "$(metric 'airlock_decide_calls_total{outcome="allow"}')"
t_eq "... no call under way" 0 "$(metric airlock_decide_calls_in_flight)"
t_eq "... the breaker closed" 0 "$(metric airlock_decide_breaker_open)"

# allowed for the conversation: the next identical request is not held, not asked
echo allow-conversation > "$T_DIR/mode"
t_eq "scope conversation: 200" 200 "$(req /w2)"
n=$(ncalls)
t_eq "... the same request again: 200" 200 "$(req /w2)"
t_eq "... without a call" "$n" "$(ncalls)"
t_logged "... marked approved for this conversation" \
    '^allowed GET http://other\.test/w2 -> 200 \[approved for this conversation\]$'
t_logged "... the DECISION line says the scope" \
    '^DECISION h[0-9]* approved GET other\.test /w2 by webhook (scope conversation, 1 request)$'

# denied
echo deny > "$T_DIR/mode"
t_eq "the webhook denies: 403" 403 "$(req /w3)"
t_contains "... reason not approved" "$(cat "$T_DIR/body")" '"reason": "not approved"'
t_logged "... logged BLOCKED, denied by webhook" \
    '^BLOCKED GET http://other\.test/w3 -> 403 \[held: h[0-9]* denied by webhook\]$'
t_logged "... the denial is a DECISION line" \
    '^DECISION h[0-9]* denied GET other\.test /w3 by webhook (1 request)$'
t_eq "... /metrics: one call answered deny" 1 "$(metric 'airlock_decide_calls_total{outcome="deny"}')"
t_eq "... two answered allow" 2 "$(metric 'airlock_decide_calls_total{outcome="allow"}')"

# failures deny: a hang (past the 1 s time-out), a 500, garbage; the third opens the breaker
for m in hang 500 garbage; do
    echo "$m" > "$T_DIR/mode"
    t0=$(date +%s%N)
    req "/f-$m" > "$T_DIR/f.code" &
    if [ "$m" = hang ]; then
        # shellcheck disable=SC2016 # expanded by until_ok's eval
        until_ok '[ "$(metric airlock_decide_calls_in_flight)" = 1 ]' 5
        t_eq "while the webhook hangs: one call under way in /metrics" 1 \
            "$(metric airlock_decide_calls_in_flight)"
    fi
    wait $!
    code=$(cat "$T_DIR/f.code")
    ms=$((($(date +%s%N) - t0) / 1000000))
    t_eq "the webhook fails ($m): 403" 403 "$code"
    t_check "... within 3 s ($ms ms)" test "$ms" -lt 3000
    t_logged "... denied by webhook ($m)" "^BLOCKED GET http://other\.test/f-$m -> 403 \[held: h[0-9]* denied by webhook\]$"
done
t_check "the failures are on stderr" grep -q 'decide: h[0-9]*: the webhook failed (HTTP 500): denied' "$T_DIR/airlock.err"
t_check "three failures open the breaker (one line)" grep -q \
    '^.*decide: circuit breaker open after 3 failures in a row' "$T_DIR/airlock.err"
t_logged "a failure is a denial by webhook: a DECISION line" \
    '^DECISION h[0-9]* denied GET other\.test /f-500 by webhook (1 request)$'
m=$(metrics)
t_contains "/metrics: the hang is a timeout" "$m" 'airlock_decide_calls_total{outcome="timeout"} 1'
t_contains "... the 500 an error" "$m" 'airlock_decide_calls_total{outcome="error"} 1'
t_contains "... the garbage malformed" "$m" 'airlock_decide_calls_total{outcome="malformed"} 1'
t_contains "... the breaker open" "$m" 'airlock_decide_breaker_open 1'
t_contains "... no call under way" "$m" 'airlock_decide_calls_in_flight 0'

# open: no call; the hold waits for the control socket
echo allow > "$T_DIR/mode"
n=$(ncalls)
(curl -sS -m 15 -o /dev/null -w '%{http_code}' http://other.test/open > "$T_DIR/open.code") &
T_PIDS+=($!)
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '"$AIRLOCK" pending | grep -q "other\.test/open$"' 10
id=$("$AIRLOCK" pending | awk '$NF == "other.test/open" {print $1}')
t_check "breaker open: the request is held" test -n "$id"
sleep 0.5
t_eq "... and the webhook is not called" "$n" "$(ncalls)"
t_contains "... the control socket approves it" "$("$AIRLOCK" approve "$id")" "ok $id approved 1"
until_ok 'test -s "$T_DIR/open.code"' 10
t_eq "... 200" 200 "$(cat "$T_DIR/open.code")"
t_logged "... a DECISION line by its uid" \
    "^DECISION $id approved GET other\.test /open by uid $(id -u) (scope once, 1 request)$"
t_eq "... the breaker still open in /metrics" 1 "$(metric airlock_decide_breaker_open)"

# after the cool-down: one trial call, which closes the breaker
sleep 4
t_eq "after the cool-down the trial call allows: 200" 200 "$(req /trial)"
t_eq "... one call" $((n + 1)) "$(ncalls)"
t_check "... the breaker's half-open and closed lines" sh -c \
    "grep -q 'circuit breaker half-open' '$T_DIR/airlock.err' && grep -q 'circuit breaker closed' '$T_DIR/airlock.err'"
t_eq "closed: the next hold is asked again: 200" 200 "$(req /after)"
t_eq "... one more call" $((n + 2)) "$(ncalls)"
t_eq "the breaker changed state three times (3 lines)" 3 "$(grep -c 'circuit breaker' "$T_DIR/airlock.err")"
t_eq "... closed in /metrics" 0 "$(metric airlock_decide_breaker_open)"
t_eq "... calls answered allow in all: 4" 4 "$(metric 'airlock_decide_calls_total{outcome="allow"}')"

# the JSON events: each decision is its text line, valid against the schema
out=$("$PY" "$HERE/decision_events.py" "$AIRLOCK_SRC/docs/events.schema.json" \
    "$T_DIR/events.json" "$T_DIR/net.log" 2> "$T_DIR/schema.err")
t_contains "the JSON events: the webhook's approval" "$out" \
    "approved POST other.test /w1 by webhook (scope once, 1 request)"
t_contains "... its denial after a failure" "$out" "denied GET other.test /f-garbage by webhook (1 request)"
t_contains "... the control socket's approval" "$out" "approved GET other.test /open by uid $(id -u) (scope once"
t_eq "... nine decisions, each the text log's line" "9 text-missing 0" \
    "$(grep -c '^DECISION ' <<< "$out") $(grep '^text-missing' <<< "$out")"
case "$out" in
*"invalid -"*) t_not_made "python3-jsonschema not installed" ;;
*) t_contains "... every event valid against the schema $(head -c 300 "$T_DIR/schema.err")" "$out" "invalid 0" ;;
esac

t_stop_airlock
t_eq "airlock exits 0" 0 "$?"

# a hold shorter than the call's time-out: a webhook that hangs lets the hold time out, and that
# counts as a failure too
sed -i 's/^hold_seconds: .*/hold_seconds: 1/' "$T_DIR/allow.yaml"
echo hang > "$T_DIR/mode"
unset AIRLOCK_TEST_DECIDE_TIMEOUT_MS
t_start_airlock "$T_DIR/allow.yaml" --allow-upstream-cidr 127.0.0.3/32 \
    --allow-upstream-cidr 127.0.0.4/32 --decide-url http://127.0.0.4:8080/ \
    --metrics 127.0.0.1:9464 || exit 1
for i in 1 2 3; do
    t_eq "hold_seconds 1, the webhook hangs ($i): 403" 403 "$(req "/short$i")"
done
t_contains "... timed out" "$(cat "$T_DIR/body")" '"reason": "timed out"'
t_check "... three such time-outs open the breaker" grep -q \
    'decide: circuit breaker open after 3 failures in a row (last: no answer before the hold timed out)' "$T_DIR/airlock.err"
t_eq "... /metrics: three timeouts" 3 "$(metric 'airlock_decide_calls_total{outcome="timeout"}')"
t_eq "... the breaker open" 1 "$(metric airlock_decide_breaker_open)"
t_check "... a time-out is no DECISION line" sh -c "! grep -q '^DECISION ' '$T_DIR/net.log'"
t_stop_airlock
t_eq "airlock exits 0" 0 "$?"

# https, by name: the upstream client's resolver and certificate checks (--upstream-ca)
sed -i 's/^hold_seconds: .*/hold_seconds: 20/' "$T_DIR/allow.yaml"
echo allow > "$T_DIR/mode"
t_upstream_ca
t_upstream_cert "DNS:judge.test" "$T_DIR/judge"
"$PY" "$HERE/decide_standin.py" 127.0.0.4 8443 "$T_DIR/mode" "$T_DIR/calls" "$T_DIR/judge.pem" \
    "$T_DIR/judge.key" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.4 8443 || exit 1
n=$(ncalls)
t_start_airlock "$T_DIR/allow.yaml" --allow-upstream-cidr 127.0.0.3/32 \
    --allow-upstream-cidr 127.0.0.4/32 --upstream-ca "$T_DIR/upca.pem" \
    --decide-url https://judge.test:8443/v1/decide || exit 1
t_eq "an https webhook allows: 200" 200 "$(req /tls)"
t_eq "... one call" $((n + 1)) "$(ncalls)"
t_logged "... approved by webhook" '^allowed GET http://other\.test/tls -> 200 \[held: h[0-9]* approved by webhook\]$'
t_stop_airlock
t_eq "airlock exits 0" 0 "$?"
t_done
