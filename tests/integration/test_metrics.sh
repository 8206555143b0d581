#!/bin/bash
# --metrics (docs/metrics.md): airlock serves /metrics in the Prometheus text format on a
# listener of its own; the counters follow the decisions (allowed, blocked, a leak refused, an
# upstream refused as a destination, DNS answers, reloads ok and failed, body bytes), and the
# real Prometheus (Debian's) scrapes it: the test asks Prometheus's HTTP API for the counters.
# Then with --sandboxes: each sandbox's requests by verdict, its name the one label added.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

command -v prometheus > /dev/null || t_skip package "prometheus not found (apt-get install prometheus)"
REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [ok.test, private.test]
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["ok.test"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
t_start_nginx || exit 1
printf 'hello\n' > "$T_DIR/www/hello.txt"
t_start_resolver --address=/private.test/10.99.0.5
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --metrics 127.0.0.1:9464 || exit 1
t_contains "the ready line names the metrics listener" "$(cat "$T_DIR/airlock.err")" \
    "metrics 127.0.0.1:9464"

get() { curl -sS -m 10 -o /dev/null -w '%{http_code}' "$@"; }
for i in 1 2 3; do get http://ok.test/hello.txt > /dev/null; done
t_eq "a request not in the allowlist: 403" 403 "$(get http://no.test/)"
t_eq "a real value in a request: 403" 403 "$(get -H "X-T: $REAL" http://ok.test/hello.txt)"
t_eq "a destination that is not allowed: 502" 502 "$(get http://private.test/)"
dig +short +time=2 +tries=1 @127.0.0.1 ok.test A > /dev/null
t_reload || exit 1
cp "$T_DIR/allow.yaml" "$T_DIR/allow.good"
printf 'domains: [\n' > "$T_DIR/allow.yaml"
t_reload || exit 1
cp "$T_DIR/allow.good" "$T_DIR/allow.yaml"

m=$(curl -sS -m 5 http://127.0.0.1:9464/metrics)
has() { t_check "$1" grep -qxF "$2" <<< "$m"; }
has "allowed requests counted" 'airlock_decisions_total{kind="request",verdict="allowed"} 3'
has "blocked requests counted (the allowlist and the secret guard)" \
    'airlock_decisions_total{kind="request",verdict="blocked"} 2'
has "the leak refusal counted apart" 'airlock_leak_refusals_total 1'
has "the upstream refused as a destination" 'airlock_upstream_errors_total{kind="destination"} 1'
want_dns() { echo "airlock_decisions_total{kind=\"dns\",verdict=\"none\"} $(grep -c '^DNS ' "$T_DIR/net.log")"; }
for i in $(seq 1 50); do grep -qxF "$(want_dns)" <<< "$m" && break; sleep 0.1; done # the writer
has "every DNS answer, as many as the log's DNS lines" "$(want_dns)"
has "one reload ok" 'airlock_reloads_total{result="ok"} 1'
has "one reload failed" 'airlock_reloads_total{result="failed"} 1'
has "the response bytes (3 x 6)" 'airlock_body_bytes_total{direction="down"} 18'
has "every request in the duration histogram" 'airlock_request_duration_seconds_count 6'
has "the upstream answers in the first-byte histogram" \
    'airlock_upstream_first_byte_seconds_count 3'
has "TLS handshake failures: one series per reason, from the start" \
    'airlock_tls_handshake_failures_total{reason="client_aborted"} 0'
for r in untrusted unknown_name no_sni protocol other; do
    t_check "... reason $r" grep -q "^airlock_tls_handshake_failures_total{reason=\"$r\"} " <<< "$m"
done
has "HTTP/2 streams open: none left" 'airlock_h2_streams 0'
t_check "no sandbox series without --sandboxes" bash -c "! grep -q '^airlock_sandbox_requests_total{' <<< \"\$1\"" _ "$m"
t_check "no host or path in any label" bash -c "! grep -E 'ok\\.test|no\\.test|hello' <<< \"\$1\"" _ "$m"
t_eq "another path: 404" 404 "$(get http://127.0.0.1:9464/)"
t_eq "a POST: 405" 405 "$(get -X POST -d x http://127.0.0.1:9464/metrics)"
t_eq "the agent's listener does not serve them" 403 "$(get -H 'Host: 127.0.0.1:9464' http://127.0.0.1/metrics)"

# ---- the real Prometheus scrapes it -------------------------------------------------------------
cat > "$T_DIR/prometheus.yml" <<'YML'
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: airlock
    static_configs:
      - targets: ["127.0.0.1:9464"]
YML
prometheus --config.file="$T_DIR/prometheus.yml" --storage.tsdb.path="$T_DIR/prom" \
    --web.listen-address=127.0.0.1:9090 > "$T_DIR/prometheus.log" 2>&1 &
T_PIDS+=($!)
query() {
    /usr/bin/python3 - "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:9090/api/v1/query?query=" + urllib.parse.quote(sys.argv[1])
try:
    r = json.load(urllib.request.urlopen(url, timeout=5))
    res = r["data"]["result"]
    print(res[0]["value"][1] if res else "none")
except Exception as e:
    print("error", e)
PY
}
got=none
for i in $(seq 1 120); do
    got=$(query 'airlock_decisions_total{kind="request",verdict="allowed"}')
    [ "$got" = 3 ] && break
    sleep 0.25
done
t_eq "Prometheus scraped the allowed requests" 3 "$got"
t_eq "... the leak refusals" 1 "$(query 'airlock_leak_refusals_total')"
t_eq "... the job is up" 1 "$(query 'up{job="airlock"}')"
t_eq "... a histogram it can aggregate (the 6 requests and the one to /metrics on :80)" 7 \
    "$(query 'sum(airlock_request_duration_seconds_bucket{le="+Inf"})')"

# ---- per sandbox (--sandboxes): the sandbox's name is a label, nothing else new ----------------
t_stop_airlock
SB="$T_DIR/sb"
mkdir -p "$SB/conv42" "$SB/conv43"
printf 'source 127.0.0.42/32\n' > "$SB/conv42/sandbox.conf"
printf 'source 127.0.0.43/32\n' > "$SB/conv43/sandbox.conf"
cp "$T_DIR/allow.yaml" "$SB/conv42/network-allowlist.yaml"
cp "$T_DIR/allow.yaml" "$SB/conv43/network-allowlist.yaml"
t_start_airlock "$T_DIR/allow.yaml" --sandboxes "$SB" --metrics 127.0.0.1:9464 || exit 1
sb() { curl -sS -m 10 -o /dev/null -w '%{http_code}' --interface "$1" --resolve "$2:80:127.0.0.1" "http://$2/${3:-hello.txt}"; }
t_eq "conv42: allowed" 200 "$(sb 127.0.0.42 ok.test)"
t_eq "conv42: allowed again" 200 "$(sb 127.0.0.42 ok.test)"
t_eq "conv42: blocked" 403 "$(sb 127.0.0.42 no.test /)"
t_eq "conv43: allowed" 200 "$(sb 127.0.0.43 ok.test)"
curl -s -m 5 -o /dev/null --resolve ok.test:80:127.0.0.1 http://ok.test/hello.txt # in no sandbox
m=$(curl -sS -m 5 http://127.0.0.1:9464/metrics)
has "conv42's allowed requests" 'airlock_sandbox_requests_total{sandbox="conv42",verdict="allowed"} 2'
has "conv42's blocked request" 'airlock_sandbox_requests_total{sandbox="conv42",verdict="blocked"} 1'
has "conv43's allowed request" 'airlock_sandbox_requests_total{sandbox="conv43",verdict="allowed"} 1'
t_check "conv43 has no blocked series (a series appears with its first event)" \
    bash -c "! grep -q 'sandbox=\"conv43\",verdict=\"blocked\"' <<< \"\$1\"" _ "$m"
t_check "the connection from no sandbox has no sandbox series" \
    bash -c "[ \"\$(grep -c '^airlock_sandbox_requests_total{' <<< \"\$1\")\" = 3 ]" _ "$m"
has "... it is in the totals" 'airlock_decisions_total{kind="connection",verdict="blocked"} 1'
t_done
