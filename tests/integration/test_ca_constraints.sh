#!/bin/bash
# Issue 21 §1: a CA per conversation that can only sign for the allowlist.
#
# `airlock ca init --per-conversation` and `airlock run --ca-per-conversation` make a CA whose
# Name Constraints permit only the allowlist's hosts. Five TLS stacks (curl and `openssl
# verify` on OpenSSL, Python's ssl, Node's tls, Go's crypto/x509, Java's PKIX) each trust only
# that CA's certificate and must ACCEPT a leaf inside the constraints (minted by airlock, and
# one signed by hand) and REJECT a leaf the same CA key signs by hand outside them. A reload
# that widens the allowlist past the constraints: the TLS handshake for the new host fails
# with a log line, an explicit-proxy CONNECT gets a 403 JSON, and no other CA is ever used.
. "$(dirname "$0")/lib.sh"
for tool in go javac java node curl openssl nginx dnsmasq; do
    command -v "$tool" >/dev/null ||
        t_skip package "$tool is not installed (.ci/packages/test-runtimes, test-base)"
done
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
export GOCACHE="$T_DIR/gocache" GOPATH="$T_DIR/gopath" GOFLAGS=-mod=mod \
    JAVA_TOOL_OPTIONS=-XX:-UsePerfData # no /tmp/hsperfdata_USER left behind

# ---- the CLI --------------------------------------------------------------------------------
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [".good.test"]
url_prefixes:
  - host: api.test
    path: /v1/*
YAML
out=$("$AIRLOCK" ca init --per-conversation --allowlist "$T_DIR/allow.yaml" --days 3 \
    --proxy-ip 10.199.1.100 --confdir "$T_DIR/cli-ca" 2>&1)
t_eq "ca init --per-conversation exits 0" 0 $?
t_contains "it says what the CA permits" "$out" \
    "permits DNS:good.test, DNS:api.test, IP:10.199.1.100/32"
text=$(openssl x509 -in "$T_DIR/cli-ca/mitmproxy-ca-cert.pem" -noout -text)
t_contains "the trusted certificate carries critical Name Constraints" "$text" \
    "X509v3 Name Constraints: critical"
t_contains "... permitting the allowlist's hosts" "$text" "DNS:good.test"
t_contains "... and the proxy's address" "$text" "IP:10.199.1.100/255.255.255.255"
"$AIRLOCK" ca init --per-conversation --allowlist "$T_DIR/allow.yaml" \
    --confdir "$T_DIR/cli-ca2" > /dev/null 2>&1
t_contains "without an IP entry or --proxy-ip every address is excluded" \
    "$(openssl x509 -in "$T_DIR/cli-ca2/mitmproxy-ca-cert.pem" -noout -text)" \
    "IP:0.0.0.0/0.0.0.0"
end=$(date -d "$(openssl x509 -in "$T_DIR/cli-ca/mitmproxy-ca-cert.pem" -noout -enddate |
    cut -d= -f2)" +%s)
t_check "valid --days 3, not years" [ "$end" -le $(($(date +%s) + 3 * 86400 + 60)) ]
t_eq "the key file is 0600" 600 "$(stat -c %a "$T_DIR/cli-ca/mitmproxy-ca.pem")"
inter=$(openssl x509 -in "$T_DIR/cli-ca/mitmproxy-ca.pem" -noout -text)
t_contains "airlock's own certificate (the intermediate) is constrained too" "$inter" \
    "X509v3 Name Constraints: critical"
out=$(openssl verify -CAfile "$T_DIR/cli-ca/mitmproxy-ca-cert.pem" \
    "$T_DIR/cli-ca/mitmproxy-ca.pem" 2>&1)
t_contains "... and issued by the trusted one" "$out" ": OK"

"$AIRLOCK" ca init --per-conversation --allowlist "$T_DIR/allow.yaml" \
    --confdir "$T_DIR/cli-ca" > "$T_DIR/out" 2>&1
t_eq "a confdir holding a CA is refused" 1 $?
t_contains "... saying so" "$(cat "$T_DIR/out")" "already holds a CA"
"$AIRLOCK" ca init --per-conversation --allowlist "$T_DIR/allow.yaml" --days 0 \
    --confdir "$T_DIR/x" > "$T_DIR/out" 2>&1
t_eq "--days 0 is a usage error" 2 $?
"$AIRLOCK" ca init --per-conversation --confdir "$T_DIR/x" > /dev/null 2>&1
t_eq "--per-conversation without --allowlist is a usage error" 2 $?
for bad in '*' '10.0.*' 'github.*'; do
    printf 'pypi.org\n%s\n' "$bad" > "$T_DIR/bad.txt"
    "$AIRLOCK" ca init --per-conversation --allowlist "$T_DIR/bad.txt" \
        --confdir "$T_DIR/bad-ca" > "$T_DIR/out" 2>&1
    rc=$?
    t_eq "an allowlist entry '$bad' cannot be constrained: exit 1" 1 "$rc"
    t_contains "... the error names the entry and its line" "$(cat "$T_DIR/out")" \
        "domains[1] ($T_DIR/bad.txt:2): host pattern '$bad'"
    t_check "... and no CA was written" [ ! -e "$T_DIR/bad-ca/mitmproxy-ca.pem" ]
done

# ---- airlock run --ca-per-conversation ---------------------------------------------------
t_start_resolver
t_upstream_ca
t_upstream_cert "DNS:www.good.test,DNS:new.test" "$T_DIR/up"
mkdir -p "$T_DIR/www"
echo "hello" > "$T_DIR/www/index.html"
chmod -R a+rX "$T_DIR"
t_start_nginx "
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;" || { echo "nginx did not start"; exit 1; }
t_start_airlock "$T_DIR/allow.yaml" --ca-per-conversation --ca-days 2 \
    --upstream-ca "$T_DIR/upca.pem" --listen-proxy 127.0.0.1:3128 ||
    { echo "airlock did not start"; exit 1; }
t_contains "airlock says it made a per-conversation CA" "$(cat "$T_DIR/airlock.err")" \
    "created a per-conversation CA in $T_DIR/confdir (valid 2 days"
CA=$T_DIR/confdir/mitmproxy-ca-cert.pem
openssl x509 -in "$T_DIR/confdir/mitmproxy-ca.pem" -out "$T_DIR/inter.pem"
text=$(openssl x509 -in "$CA" -noout -text)
t_contains "its constraints come from the allowlist" "$text" "DNS:good.test"
t_contains "... plus the proxy IP (a client without SNI gets a leaf for it)" "$text" \
    "IP:127.0.0.1/255.255.255.255"
t_check "airlock health completes its TLS handshake (no SNI: the proxy-IP leaf)" \
    "$AIRLOCK" health --https 127.0.0.1:443 --http 127.0.0.1:80 --dns 127.0.0.1:53

# Leaves signed by hand with the conversation CA's key: one inside, one outside.
for n in hand.good.test evil.test; do
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" \
        -keyout "$T_DIR/$n.key" -out "$T_DIR/$n.csr" >/dev/null 2>&1
    printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\nauthorityKeyIdentifier=keyid\n' \
        "$n" > "$T_DIR/$n.ext"
    openssl x509 -req -in "$T_DIR/$n.csr" -CA "$T_DIR/inter.pem" \
        -CAkey "$T_DIR/confdir/mitmproxy-ca.pem" -set_serial "0x$(openssl rand -hex 8)" -days 1 \
        -extfile "$T_DIR/$n.ext" -out "$T_DIR/$n.pem" >/dev/null 2>&1 ||
        t_fail "sign $n by hand"
done
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
ip addr add 127.0.0.4/8 dev lo 2>/dev/null || true
openssl s_server -accept 127.0.0.3:443 -cert "$T_DIR/hand.good.test.pem" \
    -key "$T_DIR/hand.good.test.key" -cert_chain "$T_DIR/inter.pem" -www -quiet \
    > "$T_DIR/s_in.log" 2>&1 &
T_PIDS+=($!)
openssl s_server -accept 127.0.0.4:443 -cert "$T_DIR/evil.test.pem" \
    -key "$T_DIR/evil.test.key" -cert_chain "$T_DIR/inter.pem" -www -quiet \
    > "$T_DIR/s_out.log" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 && t_wait_port 127.0.0.4 443 || t_fail "s_server did not start"

# The clients: NAME IP PORT CAFILE -> "OK", or "REJECTED: why" and exit 1.
(cd "$T_DIR" && go build -o nc-go "$HERE/nc_client.go") || t_fail "go build"
(cd "$T_DIR" && javac -d "$T_DIR" "$HERE/NcClient.java") || t_fail "javac"
client() { # client RUNTIME NAME IP
    case $1 in
    curl) curl -sS -o /dev/null --connect-to "$2:443:$3:443" --cacert "$CA" -m 10 \
              "https://$2/" 2>&1 && echo OK ;;
    python) /usr/bin/python3 "$HERE/nc_client.py" "$2" "$3" 443 "$CA" ;;
    node) node "$HERE/nc_client.js" "$2" "$3" 443 "$CA" ;;
    go) "$T_DIR/nc-go" "$2" "$3" 443 "$CA" ;;
    java) java -cp "$T_DIR" NcClient "$2" "$3" 443 "$CA" ;;
    esac
}
# What each stack says when a name is outside a CA's constraints.
declare -A why=(
    [curl]="permitted subtree violation"
    [python]="permitted subtree violation"
    [node]="permitted subtree violation"
    [go]='not permitted by any constraint'
    [java]="name constraints check failed"
)
for rt in curl python node go java; do
    out=$(client "$rt" www.good.test 127.0.0.1 2>&1)
    t_eq "$rt accepts airlock's leaf for www.good.test (inside)" OK "$(tail -1 <<< "$out")"
    out=$(client "$rt" hand.good.test 127.0.0.3 2>&1)
    t_eq "$rt accepts a leaf signed by hand inside (hand.good.test)" OK "$(tail -1 <<< "$out")"
    out=$(client "$rt" evil.test 127.0.0.4 2>&1)
    case $out in
    *OK) t_fail "$rt accepted a leaf signed by hand outside the constraints (evil.test)" ;;
    *"${why[$rt]}"*) t_ok "$rt rejects the leaf outside (evil.test): ${why[$rt]}" ;;
    *) t_fail "$rt rejects evil.test, but not for the constraints: $out" ;;
    esac
done
out=$(openssl verify -CAfile "$CA" -untrusted "$T_DIR/inter.pem" -purpose sslserver \
    "$T_DIR/hand.good.test.pem" 2>&1)
t_contains "openssl verify accepts the leaf inside" "$out" ": OK"
out=$(openssl verify -CAfile "$CA" -untrusted "$T_DIR/inter.pem" -purpose sslserver \
    "$T_DIR/evil.test.pem" 2>&1)
t_contains "openssl verify rejects the leaf outside" "$out" "permitted subtree violation"
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" https://www.good.test/ 2>&1)
t_eq "a request through airlock to an allowed host inside: 200" 200 "$code"
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" \
    -x http://127.0.0.1:3128 https://www.good.test/ 2>&1)
t_eq "... and through the explicit proxy: 200" 200 "$code"

out=$(curl -sS -o /dev/null --cacert "$CA" -m 10 https://evil.test/ 2>&1)
t_eq "a blocked host outside the CA: no certificate, so no 403 answer: the handshake fails" \
    35 $?
t_logged "... the log says it is not in the allowlist" \
    '^TLS REJECTED evil\.test (no certificate: not in the network allowlist, and outside the conversation CA.s name constraints)$'
# The alert that ends the handshake is access_denied (not OpenSSL's internal_error for a
# failed certificate callback); what each client prints is quoted in docs/ca-trust.md.
for rt in curl python node; do
    out=$(client "$rt" evil.test 127.0.0.1 2>&1)
    echo "# $rt, evil.test: $out"
    case $out in
    *"tlsv1 alert access denied"*) t_ok "$rt is told 'tlsv1 alert access denied' for evil.test" ;;
    *) t_fail "$rt, evil.test: [$out] does not say access denied" ;;
    esac
done
for rt in go java; do # printed for docs/ca-trust.md, not checked
    echo "# $rt, evil.test: $(client "$rt" evil.test 127.0.0.1 2>&1 | tail -1)"
done
# A name no certificate can carry (SNI with a character a DNS name cannot have): unrecognized_name
out=$(openssl s_client -connect 127.0.0.1:443 -servername 'bad;name.test' < /dev/null 2>&1)
t_contains "an SNI no certificate can carry gets unrecognized_name" "$out" "unrecognized name"

# ---- a reload that widens the allowlist past the constraints -----------------------------
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [".good.test", "new.test"]
YAML
t_reload || t_fail "reload"
out=$(curl -sS -o /dev/null --cacert "$CA" -m 10 https://new.test/ 2>&1)
rc=$?
t_check "TLS to new.test (allowed now, outside the CA) fails its handshake (curl $rc)" \
    [ "$rc" = 35 ]
t_contains "... with the alert access_denied" "$out" "tlsv1 alert access denied"
t_logged "... and the log says why" \
    '^TLS REJECTED new\.test (no certificate: outside the conversation CA.s name constraints; start a new conversation)$'
out=$(curl -sS --cacert "$CA" -x http://127.0.0.1:3128 -m 10 https://new.test/ -o /dev/null \
    -w '%{http_connect}' 2>&1)
t_contains "an explicit-proxy CONNECT to new.test gets 403" "$out" "403"
exec 3<>/dev/tcp/127.0.0.1/3128
printf 'CONNECT new.test:443 HTTP/1.1\r\nHost: new.test:443\r\n\r\n' >&3
answer=$(timeout 10 cat <&3)
exec 3<&-
t_contains "... whose JSON says the error" "$answer" '"error": "outside_conversation_ca"'
t_contains "... and what to do" "$answer" "start a new conversation"
t_logged "... and the log line says it" \
    '^BLOCKED CONNECT new\.test:443 -> 403 (outside the conversation CA.s name constraints; start a new conversation)$'
code=$(curl -sS -o /dev/null -w '%{http_code}' http://new.test/ 2>&1)
t_eq "plain http:// to new.test needs no certificate: allowed (200)" 200 "$code"
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" https://www.good.test/ 2>&1)
t_eq "hosts inside still work after the reload" 200 "$code"
t_check "no other CA was made or used" [ "$(ls "$T_DIR/confdir" | tr '\n' ' ')" = \
    "mitmproxy-ca-cert.cer mitmproxy-ca-cert.pem mitmproxy-ca.pem " ]
t_stop_airlock

# ---- airlock run never uses an unconstrained CA with --ca-per-conversation ----------------
"$AIRLOCK" ca init --confdir "$T_DIR/plain-ca" > /dev/null
"$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" \
    --log "$T_DIR/x.log" --confdir "$T_DIR/plain-ca" --ca-per-conversation \
    --listen-dns off --listen-http 127.0.0.1:8080 --listen-https 127.0.0.1:8443 \
    > "$T_DIR/out" 2>&1
t_eq "--ca-per-conversation refuses a CA without name constraints: exit 1" 1 $?
t_contains "... saying so" "$(cat "$T_DIR/out")" "has no name constraints"
printf '*\n' > "$T_DIR/star.txt"
"$AIRLOCK" run --proxy-ip 127.0.0.1 --upstream-dns 127.0.0.53 --allowlist "$T_DIR/star.txt" \
    --log "$T_DIR/x.log" --confdir "$T_DIR/star-ca" --ca-per-conversation \
    --listen-dns off --listen-http 127.0.0.1:8080 --listen-https 127.0.0.1:8443 \
    > "$T_DIR/out" 2>&1
t_eq "--ca-per-conversation with an allowlist of '*' does not start: exit 1" 1 $?
t_contains "... saying why" "$(cat "$T_DIR/out")" "cannot be limited to it"
t_check "... and leaves no CA behind" [ ! -e "$T_DIR/star-ca/mitmproxy-ca.pem" ]

t_done
