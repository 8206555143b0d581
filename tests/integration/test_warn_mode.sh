#!/bin/bash
# Warn mode (docs/allowlist.md, "Warn mode"): with `mode: warn` a request the allowlist would
# block reaches its upstream, and its line says WARN with what would have blocked it; a block
# entry with `mode: warn` blocks nothing and marks what it matches. The proxy's own guards stay
# in force: a malformed request, a destination that is not allowed, the secret guard. The audit
# tools read WARN lines. Upstream: a recorder of every byte.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

REAL="ghp_REALVALUE0123456789abcdefREALVALUE"
SURR="ghp_SurrogateSurrogateSurrogate000001"
cat > "$T_DIR/allow.yaml" <<'YAML'
mode: warn
domains: [open.test]
url_prefixes:
  - host: api.test
    path: /v1/*
    methods: [GET]
block:
  - host: open.test
    path: /admin*
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["api.test"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_resolver --address=/open.test/127.0.0.3 --address=/api.test/127.0.0.3 \
    --address=/other.test/127.0.0.3 --address=/private.test/10.99.0.5
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1

nrec() { ls "$T_DIR"/rec | wc -l; }
get() { curl -sS -m 10 -o /dev/null -w '%{http_code}' "$@"; }

t_eq "an allowed request: 200" 200 "$(get http://open.test/)"
t_logged "... logged allowed" '^allowed GET http://open\.test/ -> 200$'

n0=$(nrec)
t_eq "a host not in the allowlist: forwarded, 200" 200 "$(get http://other.test/x)"
t_eq "... it reached the upstream" $((n0 + 1)) "$(nrec)"
t_logged "... logged WARN with what would have blocked it" \
    '^WARN GET http://other\.test/x -> 200 \[warn: host/path not in allowlist\]$'
t_eq "a method not allowed: forwarded" 200 "$(get -X POST -d x http://api.test/v1/a)"
t_logged "... logged WARN, the method named" \
    '^WARN POST http://api\.test/v1/a -> 200 \[warn: method not allowed\]$'
t_eq "a block entry's path: forwarded" 200 "$(get http://open.test/admin/users)"
t_logged "... logged WARN with the block entry and where it is written" \
    '^WARN GET http://open\.test/admin/users -> 200 \[warn: block\[0\] .*allow\.yaml:8\]$'

# the guards of the proxy itself are never relaxed
n0=$(nrec)
out=$(curl -sS -m 10 -w ' %{http_code}' -H "X-Token: $REAL" http://other.test/leak)
t_contains "the secret guard: a real value is refused 403" "$out" " 403"
t_contains "... as a leak" "$out" '"error": "blocked_secret_leak"'
t_logged "... logged BLOCKED, not WARN" '^BLOCKED GET http://other\.test/leak -> 403 (leak: '
t_eq "... nothing reached the upstream" "$n0" "$(nrec)"
t_eq "a destination that is not allowed (RFC 1918): 502" 502 "$(get http://private.test/)"
t_logged "... logged as a refused destination" \
    '^ERROR GET http://private\.test/ -> Connection failed: destination 10\.99\.0\.5 is not allowed'
out=$(exec 3<>/dev/tcp/127.0.0.1/80 &&
    printf 'GET /x HTTP/1.1\r\nHost: other.test\r\nHost: open.test\r\n\r\n' >&3 &&
    timeout 5 head -1 <&3)
t_contains "a malformed request (two Host fields): 400" "$out" " 400"
t_eq "... nothing reached the upstream" "$n0" "$(nrec)"

# credentials follow their scopes, not the verdict: a surrogate for api.test sent to other.test
# is not swapped for the real value
curl -sS -m 10 -o /dev/null -H "Authorization: Bearer $SURR" http://other.test/cred
last=$(cat "$(ls -t "$T_DIR"/rec/conn-*.bin | head -1)")
t_check "a surrogate out of its scope never becomes the real value" \
    sh -c "! printf '%s' \"\$1\" | grep -q '$REAL'" _ "$last"

# the audit tools read WARN lines: replay re-decides them as the allowlist's blocks
"$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$T_DIR/net.log" > "$T_DIR/replay.out" 2>&1
t_check "replay reads the log (exit 0 or 1)" test $? -le 1
t_check "... every line was read" grep -Eq 'lines not read: +0$' "$T_DIR/replay.out"
t_check "... the WARN lines re-decided as the blocks they would be, unchanged" \
    grep -Eq 'blocked before, ALLOWED now: +0$' "$T_DIR/replay.out"
"$AIRLOCK" report "$T_DIR/net.log" -o "$T_DIR/report.html" > "$T_DIR/report.out" 2>&1
t_check "report reads the log" test $? -eq 0

# a block entry in warn mode in an enforcing allowlist blocks nothing, allows nothing
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [open.test]
block:
  - host: open.test
    path: /new-rule*
    mode: warn
  - host: open.test
    path: /admin*
YAML
t_reload || exit 1
t_eq "enforce, a warn block entry matched: forwarded" 200 "$(get http://open.test/new-rule/1)"
t_logged "... logged WARN with the entry" \
    '^WARN GET http://open\.test/new-rule/1 -> 200 \[warn: block\[0\] .*allow\.yaml:3\]$'
t_eq "enforce, an enforcing block entry: 403" 403 "$(get http://open.test/admin)"
t_eq "enforce, a host not in the allowlist: 403" 403 "$(get http://other.test/new-rule)"
t_logged "... logged BLOCKED" '^BLOCKED GET http://other\.test/new-rule -> 403$'

out=$("$AIRLOCK" check --allowlist "$T_DIR/allow.yaml" --print-effective 2>&1)
t_contains "check --print-effective shows the entry's mode" "$out" "    mode: warn"
printf 'mode: loud\ndomains: [open.test]\n' > "$T_DIR/bad.yaml"
out=$("$AIRLOCK" check --allowlist "$T_DIR/bad.yaml" 2>&1)
t_contains "an unknown mode is refused with its place" "$out" "bad.yaml:1:7: mode: expected 'enforce' or 'warn'"
t_done
