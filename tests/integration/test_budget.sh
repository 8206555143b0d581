#!/bin/bash
# Egress budgets (docs/budgets.md): a requests budget answers 429 after N; a rate budget
# answers 429 with resets_in and recovers; an upload crossing the sent-bytes budget is stopped
# mid-body (the upstream's recorder sees at most the budget) and logged; a response crossing the
# received-bytes budget is cut and logged; a host-pattern budget does not count other hosts;
# SIGHUP keeps the counters of budgets still named, drops removed ones and starts new ones at 0;
# an agentbox config sets budgets in its [airlock] table.
# Over HTTP/2 (curl, and budget_h2.js for an upload of unknown length) a crossing response's
# stream is reset and a crossing upload's stream answered 429.
# Upstream: budget_peers.py, which records each request body as it arrives (for HTTP/2 behind
# an nginx that terminates TLS and streams request bodies on).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

write_allow() { # $1: the requests budget of req.test; $2: extra budget items
    cat > "$T_DIR/allow.yaml" <<YAML
domains: [".test"]
budgets:
  - host: req.test
    requests: $1
  - host: rate.test
    rate: 2/s
  - host: up.test
    sent: 1MB
  - host: dl.test
    received: 100KB
  - host: "*.pat.test"
    requests: 3
$2
YAML
}
write_allow 3 "  - host: h2dl.test
    received: 100KB
  - host: h2up.test
    sent: 1MB"
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/budget_peers.py" server 127.0.0.2 80 "$T_DIR/rec" > "$T_DIR/peer.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.2 80 || exit 1
# HTTP/2 needs TLS: nginx on 127.0.0.3:443 (test CA) serves a file and streams uploads on to
# the recorder
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_upstream_ca
t_upstream_cert "DNS:h2dl.test,DNS:h2up.test" "$T_DIR/up"
mkdir -p "$T_DIR/www" "$T_DIR/ng"
head -c 300000 /dev/zero > "$T_DIR/www/big"
cat > "$T_DIR/ng.conf" <<NG
worker_processes 1;
pid $T_DIR/ng.pid;
error_log $T_DIR/ng/error.log;
events {}
http {
    client_max_body_size 0;
    access_log $T_DIR/ng/access.log;
    client_body_temp_path $T_DIR/ng/body;
    proxy_temp_path $T_DIR/ng/proxy;
    server {
        listen 127.0.0.3:443 ssl;
        ssl_certificate $T_DIR/up.pem;
        ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;
        location /up { proxy_pass http://127.0.0.2:80; proxy_request_buffering off;
                       proxy_http_version 1.1; }
    }
}
NG
nginx -c "$T_DIR/ng.conf" -g 'daemon on;' || exit 1
T_PIDS+=("$(cat "$T_DIR/ng.pid")")
t_start_resolver --address=/h2dl.test/127.0.0.3 --address=/h2up.test/127.0.0.3
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

code() { curl -s -m 10 -o /dev/null -w '%{http_code}' "$@"; }

# ---- requests ----
codes=""
for i in 1 2 3 4; do codes="$codes $(code http://req.test/r$i)"; done
t_eq "requests: 3 allowed, the 4th answered 429" " 200 200 200 429" "$codes"
out=$(curl -s -m 10 http://req.test/again)
t_contains "... egress_budget_exceeded" "$out" '"error": "egress_budget_exceeded"'
t_contains "... naming the budget" "$out" '"budget": {"kind": "requests", "host": "req.test", "limit": 3, "used": 3'
t_contains "... a total never resets: resets_in null" "$out" '"resets_in": null}'
t_logged "... logged with the budget" '^BLOCKED GET http://req\.test/r4 -> 429 (budget: requests for req\.test, 3/3)$'

# ---- a host pattern counts its hosts only ----
codes="$(code http://a.pat.test/)"
for i in 1 2 3 4 5 6; do codes="$codes $(code http://other.test/o$i)"; done
codes="$codes $(code http://b.pat.test/) $(code http://c.pat.test/) $(code http://a.pat.test/x)"
t_eq "*.pat.test: 3 of its hosts allowed among 6 requests to other.test, then 429" \
    "200 200 200 200 200 200 200 200 200 429" "$codes"
t_logged "... logged naming the pattern" '^BLOCKED GET http://a\.pat\.test/x -> 429 (budget: requests for \*\.pat\.test, 3/3)$'

# ---- rate ----
codes="$(code http://rate.test/1) $(code http://rate.test/2)"
out=$(curl -s -m 10 -w ' %{http_code}' http://rate.test/3)
t_eq "rate 2/s: a burst of 2 allowed" "200 200" "$codes"
t_contains "... the third answered 429" "$out" " 429"
t_contains "... with resets_in (seconds until a token is back)" "$out" '"resets_in": 1}'
t_contains "... naming the rate" "$out" '"kind": "rate", "host": "rate.test", "limit": 2, "per_seconds": 1'
t_logged "... logged" '^BLOCKED GET http://rate\.test/3 -> 429 (budget: rate for rate\.test, 2/s)$'
# shellcheck disable=SC2016 # expanded by until_ok
until_ok '[ "$(code http://rate.test/4)" = 200 ]' 5
t_check "... and recovers once a token is back" test $? -eq 0

# ---- sent bytes: an upload crossing the budget is stopped mid-body ----
out=$(timeout 30 "$PY" "$HERE/budget_peers.py" upload 127.0.0.1 80 up.test '/upload?rec=up1' \
    4000000 "$T_DIR/rec/up1")
t_contains "a 4 MB chunked upload against a 1 MB sent budget: 429" "$out" "429 "
t_contains "... egress_budget_exceeded for sent" "$out" '"kind": "sent", "host": "up.test", "limit": 1000000, "used": 1000000'
t_logged "... logged: stopped after the budget, the upstream request aborted" \
    '^BLOCKED POST http://up\.test/upload?rec=up1 -> 429 (budget: sent for up\.test, 1000000/1000000; the upload was stopped after 1000000 bytes, the upstream request aborted)$'
got=$(wc -c < "$T_DIR/rec/up1")
echo "# the upstream's recorder got $got body bytes of the upload (budget 1000000; the client sent $(echo "$out" | sed -n 's/^sent //p'))"
t_check "... the upstream received at most the budget" test "$got" -le 1000000
t_check "... and was cut mid-body (more than 900000 bytes came)" test "$got" -gt 900000
n=$(ls "$T_DIR/rec" | wc -l)
out=$(curl -s -m 10 -w ' %{http_code}' --data-binary 'tiny' http://up.test/again)
t_contains "another body to up.test once the budget is used: 429 before anything is sent" "$out" " 429"
t_eq "... nothing reached the upstream" "$n" "$(ls "$T_DIR/rec" | wc -l)"
t_eq "... a request without a body still goes" "200" "$(code http://up.test/nobody)"

# ---- received bytes: a response crossing the budget is cut ----
curl -s -m 10 -o "$T_DIR/dl1" http://dl.test/big?n=60000
t_eq "received 100KB: a 60000-byte response arrives whole" "60000" "$(wc -c < "$T_DIR/dl1")"
curl -s -m 10 -o "$T_DIR/dl2" http://dl.test/big?n=300000
rc=$?
t_eq "... the next (300000 bytes) is cut: curl says partial (18)" "18" "$rc"
t_eq "... after the 40000 bytes left" "40000" "$(wc -c < "$T_DIR/dl2")"
t_logged "... logged" '^BLOCKED GET http://dl\.test/big?n=300000 -> 200 (budget: received for dl\.test, 100000/100000; the response was cut after 40000 bytes)$'
t_eq "... then dl.test is answered 429" "429" "$(code http://dl.test/big?n=10)"

# ---- the same over HTTP/2: the stream is answered 429 or reset ----
curl -s -m 20 --http2 --cacert "$CA" -o "$T_DIR/h2a" https://h2dl.test/big
rc=$?
t_eq "h2, received 100KB: a 300000-byte response on a stream is cut: curl fails (92: stream error)" \
    "92" "$rc"
t_eq "... after the budget" "100000" "$(wc -c < "$T_DIR/h2a")"
t_logged "... logged" '^BLOCKED GET https://h2dl\.test/big -> 200 (budget: received for h2dl\.test, 100000/100000; the response was cut after 100000 bytes)$'
out=$(timeout 30 node "$HERE/budget_h2.js" 'https://h2up.test/up?rec=h2up' 4000000 "$CA")
t_contains "h2: a 4 MB upload of unknown length against a 1 MB sent budget: 429 on its stream" \
    "$out" "429 {"
t_logged "... logged" '^BLOCKED PUT https://h2up\.test/up?rec=h2up -> 429 (budget: sent for h2up\.test, 1000000/1000000; the upload was stopped after 1000000 bytes, the upstream request aborted)$'
got=$(cat "$T_DIR/rec/h2up" 2>/dev/null | wc -c)
echo "# over HTTP/2 the recorder (behind nginx) got $got body bytes (budget 1000000)"
t_check "... the upstream received at most the budget" test "$got" -le 1000000

# ---- SIGHUP: counters kept by identity, removed budgets stop, new ones start at 0 ----
write_allow 5 "  - host: new.test
    requests: 1"
sed -i '/host: dl.test/,+1d' "$T_DIR/allow.yaml"
t_reload
t_contains "reloaded" "$(tail -1 "$T_DIR/airlock.err")" "allowlist reloaded"
codes="$(code http://req.test/h1) $(code http://req.test/h2) $(code http://req.test/h3)"
t_eq "req.test raised from 3 to 5 by the reload: 2 more allowed (3 were counted before)" \
    "200 200 429" "$codes"
t_logged "... then 429 with 5/5" '^BLOCKED GET http://req\.test/h3 -> 429 (budget: requests for req\.test, 5/5)$'
t_eq "up.test's sent budget kept its count through the reload" "429" \
    "$(code --data-binary x http://up.test/again2)"
t_eq "*.pat.test kept its count" "429" "$(code http://d.pat.test/)"
curl -s -m 10 -o "$T_DIR/dl3" http://dl.test/big?n=300000
t_eq "dl.test's budget, removed by the reload, no longer counts" "300000" "$(wc -c < "$T_DIR/dl3")"
t_eq "new.test's budget, added by the reload, starts at 0" "200 429" \
    "$(code http://new.test/) $(code http://new.test/)"

# a reload with an invalid budget keeps the previous configuration and its counters
printf 'budgets:\n  - host: all\n    rate: 60/fortnight\n' > "$T_DIR/allow.yaml"
t_reload
t_contains "an invalid budget on reload is refused with its place" "$(tail -1 "$T_DIR/airlock.err")" \
    "allow.yaml:3:11: budgets[0].rate: expected COUNT/PERIOD"
t_eq "... the previous budgets stay" "429" "$(code http://req.test/h4)"

# an agentbox config.toml (detected by its content) sets budgets in airlock's [airlock] table;
# a budget keeps its count across the change of format (its identity is kind + host)
cat > "$T_DIR/allow.yaml" <<'TOML'
[network]
allow_hosts = [".test"]

[[airlock.budgets]]
host = "req.test"
requests = 6

[[airlock.budgets]]
host = "toml.test"
requests = 1
TOML
t_reload
t_contains "an agentbox file with [[airlock.budgets]] loads" "$(tail -1 "$T_DIR/airlock.err")" \
    "allowlist reloaded"
t_eq "... req.test keeps its 5 and allows a 6th" "200 429" \
    "$(code http://req.test/t1) $(code http://req.test/t2)"
t_eq "... toml.test's new budget: 1" "200 429" "$(code http://toml.test/) $(code http://toml.test/)"
t_logged "... logged" '^BLOCKED GET http://toml\.test/ -> 429 (budget: requests for toml\.test, 1/1)$'

kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
