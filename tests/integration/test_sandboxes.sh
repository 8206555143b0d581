#!/bin/bash
# Issue 20 part 1: one airlock, many sandboxes, isolated by source address. Four network
# namespaces stand for sandboxes on one bridge (10.77.0.1 is airlock): A (10.77.1.2) and B
# (10.77.2.2) each have their own allowlist, credentials and log; C (10.77.3.2) is in no
# sandbox; D (10.77.4.2) gets a sandbox by a reload. Nothing the client says (Host, SNI,
# credentials) moves a request into another sandbox: the source decides.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
NS=(al-sa-$$ al-sb-$$ al-sc-$$ al-sd-$$)
cleanup_ns() { local n; for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null; done; }
trap 't_cleanup; cleanup_ns' EXIT
ip link add br0 type bridge && ip link set br0 up && ip addr add 10.77.0.1/16 dev br0 ||
    t_skip netns "cannot create a bridge"
for i in 0 1 2 3; do
    n=${NS[$i]}
    ip netns add "$n" || t_skip netns "ip netns add failed"
    ip link add "v$i" type veth peer name eth0 netns "$n"
    ip link set "v$i" master br0 && ip link set "v$i" up
    ip -n "$n" addr add "10.77.$((i + 1)).2/16" dev eth0
    ip -n "$n" link set eth0 up && ip -n "$n" link set lo up
    printf 'nameserver 10.77.0.1\noptions timeout:1 attempts:1\n' > "$T_DIR/resolv-$i.conf"
done
in_ns() { # in_ns INDEX command...: runs in that sandbox's namespace, DNS pointing at airlock
    local i=$1; shift
    ip netns exec "${NS[$i]}" unshare --mount sh -c \
        'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$T_DIR/resolv-$i.conf" "$@"
}

t_start_resolver || exit 1
t_start_nginx 'location /hdr { return 200 "auth=$http_authorization conn=$connection\n"; }'

SB=$T_DIR/sandboxes
mkdir -p "$SB/a" "$SB/b"
printf 'source 10.77.1.0/24\n' > "$SB/a/sandbox.conf"
printf 'domains: ["a.test", "shared.test", "budg.test"]\nbudgets:\n  - host: budg.test\n    requests: 2\n' \
    > "$SB/a/network-allowlist.yaml"
printf '{"sur-aaaaaaaaaaaaaaaa": {"value": "REAL-A-0123456789", "scopes": ["shared.test"], "headers": ["Authorization"], "allow_plain_http": true}}\n' \
    > "$SB/a/replacements.json"
printf 'source 10.77.2.0/24   # sandbox B\nmax-connections 64\n' > "$SB/b/sandbox.conf"
printf 'domains: ["b.test", "shared.test", "budg.test"]\nbudgets:\n  - host: budg.test\n    requests: 2\n' \
    > "$SB/b/network-allowlist.yaml"
printf '{"sur-bbbbbbbbbbbbbbbb": {"value": "REAL-B-0123456789", "scopes": ["shared.test"], "headers": ["Authorization"], "allow_plain_http": true}}\n' \
    > "$SB/b/replacements.json"
: > "$T_DIR/host.log"
"$AIRLOCK" run --proxy-ip 10.77.0.1 --upstream-dns 127.0.0.53 --sandboxes "$SB" \
    --log "$T_DIR/host.log" --confdir "$T_DIR/confdir" --listen-dns 10.77.0.1:53 \
    --listen-http 10.77.0.1:80 --listen-https 10.77.0.1:443 --listen-proxy 10.77.0.1:3128 --allow-upstream-cidr 127.0.0.2/32 \
    2> "$T_DIR/airlock.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q "ready (proxy" "$T_DIR/airlock.err"' 20 || { cat "$T_DIR/airlock.err"; exit 1; }
CA=$T_DIR/confdir/mitmproxy-ca-cert.pem
get() { # get INDEX URL [curl args]: status and body, one line
    local i=$1 u=$2; shift 2
    in_ns "$i" curl -s -m 5 --cacert "$CA" -w ' %{http_code}' "$@" "$u" 2>/dev/null | tr '\n' ' '
}
log_a=$SB/a/network-sandbox.log log_b=$SB/b/network-sandbox.log

# DNS: a sandbox's query is answered with airlock's address, in its own log; C gets nothing
t_eq "DNS from sandbox A: airlock's address" 10.77.0.1 "$(in_ns 0 dig +short +time=1 +tries=1 a.test)"
t_eq "DNS from sandbox B: airlock's address" 10.77.0.1 "$(in_ns 1 dig +short +time=1 +tries=1 b.test)"
out=$(in_ns 2 dig +time=1 +tries=1 c.test 2>&1)
t_contains "DNS from C (in no sandbox): no answer" "$out" "timed out"
until_ok 'grep -q "^DNS A a.test -> 10.77.0.1" "$log_a"' 10
t_check "A's query in A's log" grep -q '^DNS A a.test -> 10.77.0.1' "$log_a"
t_check "... not in B's" test "$(grep -c a.test "$log_b")" -eq 0
t_logged_in() { until_ok "grep -q -- \"$2\" \"$1\"" 10; }
t_logged_in "$T_DIR/host.log" '^BLOCKED DNS - -> no answer (source 10.77.3.2 is in no sandbox)$'
t_check "C's query: one line in the host log" test $? -eq 0

# each sandbox under its own policy
t_contains "A to a.test: allowed" "$(get 0 http://a.test/echo)" "host=a.test  200"
t_contains "A to b.test: 403 (B's host)" "$(get 0 http://b.test/echo)" " 403"
t_contains "B to b.test: allowed" "$(get 1 http://b.test/echo)" "host=b.test  200"
t_contains "B to a.test: 403 (A's host)" "$(get 1 http://a.test/echo)" " 403"
t_contains "B with Host: a.test: still B's policy" "$(get 1 http://b.test/echo -H 'Host: a.test')" " 403"
t_contains "B over TLS with SNI a.test: still B's policy" "$(get 1 https://a.test/echo)" " 403"
out=$(in_ns 1 curl -s -m 5 -o /dev/null -w '%{http_connect}' -p -x http://10.77.0.1:3128 http://a.test/echo 2>&1)
t_eq "B's CONNECT to a.test through the explicit proxy: 403 (B's policy)" 403 "$out"
out=$(in_ns 0 curl -s -m 5 -w ' %{http_code}' -x http://10.77.0.1:3128 http://a.test/echo 2>&1)
t_contains "A through the explicit proxy to a.test: allowed" "$out" "host=a.test
 200"
out=$(in_ns 1 curl -s -m 5 -w ' %{http_code}' -x http://10.77.0.1:3128 http://a.test/echo 2>&1)
t_contains "B through the explicit proxy to a.test: 403" "$out" " 403"
out=$(in_ns 2 curl -s -m 5 -o /dev/null -w '%{http_code}' http://10.77.0.1/echo -H 'Host: a.test')
t_eq "C (in no sandbox): the connection is closed" 000 "$out"
t_logged_in "$T_DIR/host.log" '^BLOCKED - - -> closed (source 10.77.3.2 is in no sandbox)$'
t_check "... one line in the host log" test $? -eq 0
until_ok 'grep -q "^BLOCKED GET http://a.test/echo -> 403" "$log_b"' 10
until_ok 'grep -q "^allowed GET http://b.test/echo -> 200" "$log_b"' 10
t_check "B's lines in B's log" grep -q '^allowed GET http://b.test/echo -> 200$' "$log_b"
t_check "... and never in A's" test "$(grep -c '^allowed GET http://b\.test/echo' "$log_a")" -eq 0
t_check "A's lines never in B's log" test "$(grep -c 'GET http://a\.test/echo -> 200' "$log_b")" -eq 0

# credentials: each sandbox swaps its own surrogate only
out=$(get 0 http://shared.test/hdr -H 'Authorization: sur-aaaaaaaaaaaaaaaa')
t_contains "A's surrogate from A: A's real value" "$out" "auth=REAL-A-0123456789"
out=$(get 1 http://shared.test/hdr -H 'Authorization: sur-aaaaaaaaaaaaaaaa')
case "$out" in
*REAL-A*) t_fail "A's surrogate from B: swapped with A's real value: $out" ;;
*" 200"*) t_ok "A's surrogate from B: never A's real value ($out)" ;;
*) t_fail "A's surrogate from B: $out" ;;
esac
out=$(get 1 http://shared.test/hdr -H 'Authorization: sur-bbbbbbbbbbbbbbbb')
t_contains "B's surrogate from B: B's real value" "$out" "auth=REAL-B-0123456789"
# the upstream connection that carried A's credential is never reused for B
ca=$(get 0 http://shared.test/hdr -H 'Authorization: sur-aaaaaaaaaaaaaaaa' | sed 's/.*conn=\([0-9]*\).*/\1/')
cb=$(get 1 http://shared.test/hdr | sed 's/.*conn=\([0-9]*\).*/\1/')
ca2=$(get 0 http://shared.test/hdr | sed 's/.*conn=\([0-9]*\).*/\1/')
t_check "A's pooled upstream connection is A's again ($ca, $ca2)" test "$ca" = "$ca2"
t_check "... never B's ($cb)" test "$cb" != "$ca"

# egress budgets count per sandbox: the same budget in A and B has two counters
get 0 http://budg.test/echo > /dev/null
get 0 http://budg.test/echo > /dev/null
t_contains "A's third request under its 2-request budget: 429" "$(get 0 http://budg.test/echo)" " 429"
t_contains "... B's first under the same budget: allowed" "$(get 1 http://budg.test/echo)" " 200"

# reloads: a broken file keeps that sandbox's policy and touches no other; a new directory is
# a new sandbox; a removed one takes no new connection
printf 'domains: [unclosed\n' > "$SB/a/network-allowlist.yaml"
printf 'domains: ["b.test", "shared.test", "b2.test"]\n' > "$SB/b/network-allowlist.yaml"
mkdir -p "$SB/d"
printf 'source 10.77.4.0/24\n' > "$SB/d/sandbox.conf"
printf 'domains: ["d.test"]\n' > "$SB/d/network-allowlist.yaml"
n=$(wc -l < "$T_DIR/airlock.err")
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 2 ]' 10
t_contains "reload: A's broken allowlist is named" "$(tail -n +$((n + 1)) "$T_DIR/airlock.err")" "sandbox a keeps its previous policy"
t_contains "... A keeps its old policy" "$(get 0 http://a.test/echo)" " 200"
t_contains "... B took its new one" "$(get 1 http://b2.test/echo)" " 200"
t_contains "... D is a new sandbox" "$(get 3 http://d.test/echo)" " 200"
t_logged_in "$SB/d/network-sandbox.log" '^allowed GET http://d.test/echo -> 200$'
t_check "... with its own log" test $? -eq 0
rm -rf "$SB/b"
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 3 ]' 10
out=$(in_ns 1 curl -s -m 5 -o /dev/null -w '%{http_code}' http://b.test/echo)
t_eq "B removed: its new connections are closed" 000 "$out"
t_contains "... A goes on" "$(get 0 http://a.test/echo)" " 200"
t_done
