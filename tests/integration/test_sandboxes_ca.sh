#!/bin/bash
# Issue 21 §1 with --sandboxes: a CA per sandbox that can only sign for that sandbox's
# allowlist. Two sandboxes A (10.77.1.2, allows a.test) and B (10.77.2.2, allows b.test) behind
# one airlock started with --ca-per-conversation: each gets its own constrained CA, whose
# certificate (never its key) airlock writes into the sandbox's directory. A's client trusting
# only A's certificate reaches a.test; trusting B's it cannot; a leaf never comes from another
# sandbox's CA. A reload that widens A's allowlist past its CA's constraints is refused at TLS
# and CONNECT, in A's log; B is untouched. A sandbox new on SIGHUP (D, 10.77.4.2) gets its CA
# then; one whose allowlist cannot be constrained ('*') is left out, and at startup stops
# airlock from starting. A restart keeps each sandbox's CA. A sandbox may bring its own CA
# (DIR/NAME/mitmproxy-ca.pem): F a constrained one, used for F only; G an unconstrained one,
# refused with --ca-per-conversation and used for G only without it.
. "$(dirname "$0")/lib.sh"
for tool in curl openssl nginx dnsmasq; do
    command -v "$tool" >/dev/null || t_skip package "$tool is not installed (.ci/packages/test-base)"
done
t_enter_netns "$@"
NS=(al-ca-$$ al-cb-$$ al-cc-$$ al-cd-$$)
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
done
in_ns() { local i=$1; shift; ip netns exec "${NS[$i]}" "$@"; }

t_start_resolver || exit 1
t_upstream_ca
t_upstream_cert "DNS:a.test,DNS:b.test,DNS:c.test,DNS:d.test,DNS:f.test,DNS:g.test" "$T_DIR/up"
mkdir -p "$T_DIR/www"
echo hello > "$T_DIR/www/index.html"
chmod -R a+rX "$T_DIR"
t_start_nginx "
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;" || { echo "nginx did not start"; exit 1; }

SB=$T_DIR/sandboxes
mkdir -p "$SB/a" "$SB/b"
printf 'source 10.77.1.0/24\n' > "$SB/a/sandbox.conf"
printf 'domains: ["a.test"]\n' > "$SB/a/network-allowlist.yaml"
printf 'source 10.77.2.0/24\n' > "$SB/b/sandbox.conf"
printf 'domains: ["b.test"]\n' > "$SB/b/network-allowlist.yaml"
mkdir -p "$SB/health" # airlock health, from the host's own address (docs/sandboxes.md)
printf 'source 10.77.0.1/32\n' > "$SB/health/sandbox.conf"
printf 'domains: ["health.invalid"]\n' > "$SB/health/network-allowlist.yaml"
BASE=(--proxy-ip 10.77.0.1 --upstream-dns 127.0.0.53 --sandboxes "$SB" --log "$T_DIR/host.log"
    --log-create --upstream-ca "$T_DIR/upca.pem" --allow-upstream-cidr 127.0.0.2/32
    --listen-dns off --listen-http 10.77.0.1:80 --listen-https 10.77.0.1:443
    --listen-proxy 10.77.0.1:3128)
ARGS=("${BASE[@]}" --confdir "$T_DIR/confdir" --ca-per-conversation --ca-days 3)
: > "$T_DIR/airlock.err"
"$AIRLOCK" run "${ARGS[@]}" 2> "$T_DIR/airlock.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q "ready (proxy" "$T_DIR/airlock.err" || ! kill -0 $AIRLOCK_PID' 20
grep -q "ready (proxy" "$T_DIR/airlock.err" || { cat "$T_DIR/airlock.err"; exit 1; }
CA_A=$SB/a/mitmproxy-ca-cert.pem CA_B=$SB/b/mitmproxy-ca-cert.pem
log_a=$SB/a/network-sandbox.log log_b=$SB/b/network-sandbox.log
get() { # get INDEX CAFILE URL [curl args]: "<status> exit <curl exit code>"
    local i=$1 ca=$2 u=$3; shift 3
    in_ns "$i" curl -s -o /dev/null -m 5 --cacert "$ca" --connect-to "::10.77.0.1:" \
        -w '%{http_code}' "$@" "$u" 2>/dev/null
    echo " exit $?"
}
logged() { until_ok "grep -q -- \"$2\" \"$1\"" 10; } # logged FILE 'BRE'

# ---- each sandbox has its own CA, its certificate in the sandbox's directory ------------------
t_check "A's CA certificate is in A's directory" test -s "$CA_A"
t_check "B's CA certificate is in B's directory" test -s "$CA_B"
t_eq "... readable by all (0644)" 644 "$(stat -c %a "$CA_A" 2>/dev/null)"
t_check "A's and B's are two CAs" test "$(openssl x509 -in "$CA_A" -noout -fingerprint 2>&1)" \
    != "$(openssl x509 -in "$CA_B" -noout -fingerprint 2>&1)"
text_a=$(openssl x509 -in "$CA_A" -noout -text 2>&1)
t_contains "A's CA has critical name constraints" "$text_a" "X509v3 Name Constraints: critical"
t_contains "... permitting a.test" "$text_a" "DNS:a.test"
t_contains "... and the proxy's address" "$text_a" "IP:10.77.0.1/255.255.255.255"
case $text_a in *b.test*) t_fail "... but also B's host b.test" ;; *) t_ok "... and not B's b.test" ;; esac
t_eq "... nothing else" "DNS:a.test IP:10.77.0.1/255.255.255.255" \
    "$(sed -n '/Permitted:/,/Excluded:\|X509v3 [A-Z]/p' <<< "$text_a" | grep -E '^ +(DNS|IP):' |
        tr -s ' \n' ' ' | sed 's/^ //; s/ $//')"
end=$(date -d "$(openssl x509 -in "$CA_A" -noout -enddate 2>/dev/null | cut -d= -f2)" +%s)
t_check "valid --ca-days 3, not years" [ "${end:-0}" -le $(($(date +%s) + 3 * 86400 + 60)) ]
t_contains "B's CA permits b.test" "$(openssl x509 -in "$CA_B" -noout -text 2>&1)" "DNS:b.test"
t_contains "stderr names each sandbox's CA" "$(cat "$T_DIR/airlock.err")" \
    "sandbox a: created a per-conversation CA"

t_check "airlock health completes its TLS handshake (no SNI: the health sandbox's proxy-IP leaf)" \
    "$AIRLOCK" health --https 10.77.0.1:443 --http 10.77.0.1:80

# ---- TLS with each sandbox's CA -------------------------------------------------------------------
t_eq "A trusting only A's CA: https://a.test/ (200)" "200 exit 0" "$(get 0 "$CA_A" https://a.test/)"
t_eq "B trusting only B's CA: https://b.test/ (200)" "200 exit 0" "$(get 1 "$CA_B" https://b.test/)"
out=$(get 0 "$CA_B" https://a.test/)
t_eq "A trusting B's CA instead: the handshake fails (curl 60)" "000 exit 60" "$out"
s_client() { # s_client INDEX SNI CAFILE: openssl's verdict on the chain airlock presents
    in_ns "$1" openssl s_client -connect 10.77.0.1:443 -servername "$2" -CAfile "$3" \
        -verify_hostname "$2" < /dev/null 2>&1 | grep -aE 'Verify return code|^depth=0'
}
out=$(s_client 0 a.test "$CA_A")
t_contains "the leaf A gets for a.test chains to A's CA" "$out" "Verify return code: 0 (ok)"
out=$(s_client 0 a.test "$CA_B")
case $out in
*"return code: 0 (ok)"*) t_fail "... and to B's: $out" ;;
*"Verify return code"*) t_ok "... not to B's (${out##*code: })" ;;
*) t_fail "... no handshake with B's CA: $out" ;;
esac
out=$(in_ns 0 openssl s_client -connect 10.77.0.1:443 -servername a.test -showcerts </dev/null 2>/dev/null |
    grep -c '^ *i:.*airlock conversation root')
t_eq "... its intermediate is issued by a conversation root" 1 "$out"

# B asks for A's host: no leaf from A's CA (A just got one for a.test), and B's CA may not sign it
out=$(get 1 "$CA_B" https://a.test/)
t_eq "B to https://a.test/ (A's host): the handshake fails" "000 exit 35" "$out"
out=$(get 1 "$CA_A" https://a.test/)
t_eq "... even trusting A's CA: no leaf from A's CA for B" "000 exit 35" "$out"
logged "$log_b" '^TLS REJECTED a\.test (no certificate: not in the network allowlist, and outside the conversation CA.s name constraints)$'
t_check "... B's log says why" test $? -eq 0

# ---- the keys stay with airlock ------------------------------------------------------------------
t_eq "no key in any sandbox directory" "" "$(grep -rl 'PRIVATE KEY' "$SB")"
t_check "no mitmproxy-ca.pem in a sandbox directory" test ! -e "$SB/a/mitmproxy-ca.pem" -a \
    ! -e "$SB/b/mitmproxy-ca.pem"
key_a=$T_DIR/confdir/sandbox-ca/a/mitmproxy-ca.pem
t_eq "A's CA key is in the confdir, 0600" 600 "$(stat -c %a "$key_a" 2>/dev/null)"
t_eq "... in a 0700 directory" 700 "$(stat -c %a "$T_DIR/confdir/sandbox-ca" 2>/dev/null)"
t_check "no unconstrained CA was made" test ! -e "$T_DIR/confdir/mitmproxy-ca.pem"

# ---- a reload: A's allowlist adds c.test (outside its CA); D is new; E cannot be constrained -----
fp_a=$(openssl x509 -in "$CA_A" -noout -fingerprint 2>&1)
printf 'domains: ["a.test", "c.test"]\n' > "$SB/a/network-allowlist.yaml"
mkdir -p "$SB/d" "$SB/e"
printf 'source 10.77.4.0/24\n' > "$SB/d/sandbox.conf"
printf 'domains: ["d.test"]\n' > "$SB/d/network-allowlist.yaml"
printf 'source 10.77.3.0/24\n' > "$SB/e/sandbox.conf"
printf '*\n' > "$SB/e/network-allowlist.yaml"
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 2 ]' 10
t_eq "A's CA is kept on a reload" "$fp_a" "$(openssl x509 -in "$CA_A" -noout -fingerprint 2>&1)"
t_eq "A to https://c.test/ (allowed now, outside A's CA): the handshake fails" "000 exit 35" \
    "$(get 0 "$CA_A" https://c.test/)"
logged "$log_a" '^TLS REJECTED c\.test (no certificate: outside the conversation CA.s name constraints; start a new conversation)$'
t_check "... A's log says why" test $? -eq 0
out=$(in_ns 0 curl -s -m 5 -x http://10.77.0.1:3128 https://c.test/ 2>&1 -o /dev/null -w '%{http_connect}')
t_eq "A's CONNECT to c.test: 403" 403 "$out"
out=$(in_ns 0 bash -c 'exec 3<>/dev/tcp/10.77.0.1/3128; printf "CONNECT c.test:443 HTTP/1.1\r\nHost: c.test:443\r\n\r\n" >&3; timeout 5 cat <&3')
t_contains "... outside_conversation_ca" "$out" '"error": "outside_conversation_ca"'
logged "$log_a" '^BLOCKED CONNECT c\.test:443 -> 403 (outside the conversation CA.s name constraints; start a new conversation)$'
t_check "... in A's log" test $? -eq 0
t_check "... never in the host log" test "$(grep -c c.test "$T_DIR/host.log")" -eq 0
t_eq "A to http://c.test/ (no certificate needed): allowed" "200 exit 0" \
    "$(get 0 "$CA_A" http://c.test/)"
t_eq "A to https://a.test/ still works" "200 exit 0" "$(get 0 "$CA_A" https://a.test/)"
t_eq "B is unaffected" "200 exit 0" "$(get 1 "$CA_B" https://b.test/)"
t_check "D, new on SIGHUP, got its CA certificate" test -s "$SB/d/mitmproxy-ca-cert.pem"
t_eq "... and D trusting it reaches https://d.test/" "200 exit 0" \
    "$(get 3 "$SB/d/mitmproxy-ca-cert.pem" https://d.test/)"
t_contains "E (allowlist '*') is left out, stderr says why" "$(cat "$T_DIR/airlock.err")" \
    "host pattern '*' can match a name in any domain"
t_check "... it has no CA" test ! -e "$SB/e/mitmproxy-ca-cert.pem" -a \
    ! -e "$T_DIR/confdir/sandbox-ca/e/mitmproxy-ca.pem"
out=$(in_ns 2 curl -s -o /dev/null -m 5 -w '%{http_code}' http://10.77.0.1/ -H 'Host: a.test')
t_eq "... and takes no connection" 000 "$out"
t_eq "still no key in any sandbox directory" "" "$(grep -rl 'PRIVATE KEY' "$SB")"

# ---- a removed sandbox's CA key is deleted -------------------------------------------------------
rm -rf "$SB/d"
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 3 ]' 10
t_check "D removed: its CA key is deleted" test ! -e "$T_DIR/confdir/sandbox-ca/d"
t_eq "... A goes on" "200 exit 0" "$(get 0 "$CA_A" https://a.test/)"
kill -TERM "$AIRLOCK_PID"
wait "$AIRLOCK_PID"
t_eq "airlock stops cleanly" 0 $?

# ---- a restart keeps each sandbox's CA; F brings its own (constrained) CA ------------------------
rm -rf "$SB/e"
mkdir -p "$SB/f"
printf 'source 10.77.4.0/24\n' > "$SB/f/sandbox.conf"
printf 'domains: ["f.test"]\n' > "$SB/f/network-allowlist.yaml"
"$AIRLOCK" ca init --per-conversation --allowlist "$SB/f/network-allowlist.yaml" \
    --proxy-ip 10.77.0.1 --days 2 --confdir "$SB/f" > /dev/null
fp_f=$(openssl x509 -in "$SB/f/mitmproxy-ca-cert.pem" -noout -fingerprint 2>&1)
: > "$T_DIR/airlock2.err"
"$AIRLOCK" run "${ARGS[@]}" 2> "$T_DIR/airlock2.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q "ready (proxy" "$T_DIR/airlock2.err" || ! kill -0 $AIRLOCK_PID' 20
t_eq "after a restart A keeps its CA" "$fp_a" "$(openssl x509 -in "$CA_A" -noout -fingerprint 2>&1)"
t_eq "... and its clients go on" "200 exit 0" "$(get 0 "$CA_A" https://a.test/)"
t_eq "F's client trusting F's own CA reaches https://f.test/" "200 exit 0" \
    "$(get 3 "$SB/f/mitmproxy-ca-cert.pem" https://f.test/)"
t_eq "... F's certificate file is left as it is" "$fp_f" \
    "$(openssl x509 -in "$SB/f/mitmproxy-ca-cert.pem" -noout -fingerprint 2>&1)"
t_check "... airlock made no CA for F" test ! -e "$T_DIR/confdir/sandbox-ca/f"
t_eq "A trusting F's CA: the handshake fails" "000 exit 60" \
    "$(get 0 "$SB/f/mitmproxy-ca-cert.pem" https://a.test/)"
kill -TERM "$AIRLOCK_PID"
wait "$AIRLOCK_PID"
t_eq "... and stops cleanly" 0 $?

# ---- what does not start: '*' at startup; an operator CA without name constraints ----------------
mkdir -p "$SB/e"
printf 'source 10.77.3.0/24\n' > "$SB/e/sandbox.conf"
printf '*\n' > "$SB/e/network-allowlist.yaml"
"$AIRLOCK" run "${ARGS[@]}" > "$T_DIR/out" 2>&1
t_eq "a sandbox whose allowlist cannot be constrained at startup: exit 1" 1 $?
t_contains "... stderr names the sandbox and the entry" "$(cat "$T_DIR/out")" \
    "sandbox e: domains[0] ($SB/e/network-allowlist.yaml:1): host pattern '*'"
cp "$T_DIR/out" "$T_DIR/airlock-star.err" # kept for the sanitizer check below
rm -rf "$SB/e"
mkdir -p "$SB/g"
printf 'source 10.77.3.0/24\n' > "$SB/g/sandbox.conf"
printf 'domains: ["g.test"]\n' > "$SB/g/network-allowlist.yaml"
"$AIRLOCK" ca init --confdir "$SB/g" > /dev/null
"$AIRLOCK" run "${ARGS[@]}" > "$T_DIR/out" 2>&1
t_eq "a sandbox with its own CA without name constraints: exit 1" 1 $?
t_contains "... saying why" "$(cat "$T_DIR/out")" \
    "sandbox g: $SB/g/mitmproxy-ca.pem has no name constraints"
cp "$T_DIR/out" "$T_DIR/airlock-plain.err"

# ---- without --ca-per-conversation: a sandbox's own CA is for that sandbox only --------------------
: > "$T_DIR/airlock3.err"
"$AIRLOCK" run "${BASE[@]}" --confdir "$T_DIR/shared" 2> "$T_DIR/airlock3.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q "ready (proxy" "$T_DIR/airlock3.err" || ! kill -0 $AIRLOCK_PID' 20
SHARED=$T_DIR/shared/mitmproxy-ca-cert.pem
t_eq "G trusting its own CA reaches https://g.test/" "200 exit 0" \
    "$(get 2 "$SB/g/mitmproxy-ca-cert.pem" https://g.test/)"
t_eq "... trusting the shared CA instead: fails" "000 exit 60" "$(get 2 "$SHARED" https://g.test/)"
t_eq "A trusting the shared CA reaches https://a.test/" "200 exit 0" \
    "$(get 0 "$SHARED" https://a.test/)"
t_eq "... trusting G's CA: fails" "000 exit 60" "$(get 0 "$SB/g/mitmproxy-ca-cert.pem" https://a.test/)"
kill -TERM "$AIRLOCK_PID"
wait "$AIRLOCK_PID"
t_eq "... and stops cleanly" 0 $?

"$AIRLOCK" run "${ARGS[@]}" --confdir "$SB" > "$T_DIR/out" 2>&1
t_eq "a --confdir inside --sandboxes DIR (the keys would be in it): exit 1" 1 $?
t_contains "... saying why" "$(cat "$T_DIR/out")" "overlaps --sandboxes"
t_check "... and no key was written" test ! -e "$SB/sandbox-ca"
cp "$T_DIR/out" "$T_DIR/airlock-overlap.err"
t_check "no sanitizer report from any airlock run" \
    test "$(cat "$T_DIR"/airlock*.err | grep -c 'Sanitizer\|runtime error:')" -eq 0
t_done
