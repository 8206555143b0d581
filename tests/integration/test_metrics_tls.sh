#!/bin/bash
# --metrics, the client side's TLS handshakes and HTTP/2 streams (docs/metrics.md): real clients
# fail their handshakes with airlock for each reason it counts (a client that does not trust
# airlock's CA, a name airlock refuses, a protocol version it does not speak, a client gone
# mid-handshake), and an HTTP/2 download held open shows as one stream in the gauge, back to 0
# when it ends.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [ok.test]
YAML
t_upstream_ca
t_upstream_cert "DNS:ok.test" "$T_DIR/up"
t_start_resolver || exit 1
t_start_nginx "location /slow/ { limit_rate 200k; } listen 127.0.0.2:443 ssl; ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;" || exit 1
mkdir -p "$T_DIR/www/slow"
head -c 3000000 /dev/zero > "$T_DIR/www/slow/big.bin"
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" --metrics 127.0.0.1:9464 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
metric() { curl -sS -m 5 http://127.0.0.1:9464/metrics | awk -v k="$1" '$1 == k {print $2}'; }
fails() { metric "airlock_tls_handshake_failures_total{reason=\"$1\"}"; }

t_eq "a client that trusts airlock's CA: 206" 206 \
    "$(curl -s -o /dev/null -m 5 -w '%{http_code}' --cacert "$CA" https://ok.test/slow/big.bin -r 0-9)"
for r in untrusted unknown_name no_sni protocol client_aborted other; do
    t_eq "no failure yet: $r" 0 "$(fails $r)"
done
# curl without airlock's CA: it rejects the certificate with an alert
curl -s -o /dev/null -m 5 https://ok.test/
t_eq "a client that does not trust airlock's CA: untrusted" 1 "$(fails untrusted)"
# a name no certificate can carry: airlock refuses it in the handshake
openssl s_client -connect 127.0.0.1:443 -servername 'bad..name' -CAfile "$CA" < /dev/null > /dev/null 2>&1
t_eq "a name airlock refuses: unknown_name" 1 "$(fails unknown_name)"
# TLS 1.1 only: airlock speaks 1.2 and 1.3; then no cipher both take
openssl s_client -connect 127.0.0.1:443 -servername ok.test -tls1_1 < /dev/null > /dev/null 2>&1
# RSA authentication only: airlock's certificates are ECDSA
openssl s_client -connect 127.0.0.1:443 -servername ok.test -tls1_2 -cipher aRSA \
    < /dev/null > /dev/null 2>&1
t_eq "an old version, no shared cipher: protocol" 2 "$(fails protocol)"
# half a ClientHello, then the client goes
"$PY" - <<'PY'
import socket, ssl
ctx = ssl.create_default_context()
inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
obj = ctx.wrap_bio(inb, outb, server_hostname="ok.test")
try:
    obj.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = outb.read()
s = socket.create_connection(("127.0.0.1", 443))
s.sendall(hello[: len(hello) // 2])
s.close()
PY
for _ in $(seq 1 40); do [ "$(fails client_aborted)" = 1 ] && break; sleep 0.05; done
t_eq "half a ClientHello, then gone: client_aborted" 1 "$(fails client_aborted)"
t_eq "none counted as another reason" 0 "$(fails other)"
t_eq "none without SNI here" 0 "$(fails no_sni)"

# ---- HTTP/2 streams ------------------------------------------------------------------------------
t_eq "no stream open" 0 "$(metric airlock_h2_streams)"
curl -s -o /dev/null -m 30 --http2 --cacert "$CA" https://ok.test/slow/big.bin & # 15 s upstream
DL=$!
T_PIDS+=("$DL")
got=
for _ in $(seq 1 100); do got=$(metric airlock_h2_streams); [ "$got" = 1 ] && break; sleep 0.05; done
t_eq "an HTTP/2 download under way: one stream open" 1 "$got"
kill "$DL" 2>/dev/null; wait "$DL" 2>/dev/null
for _ in $(seq 1 100); do got=$(metric airlock_h2_streams); [ "$got" = 0 ] && break; sleep 0.05; done
t_eq "the client went: no stream open" 0 "$got"
t_done
