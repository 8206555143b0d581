#!/bin/bash
# Issue 4: a CA that mitmproxy itself generated (mitmdump writes one into its confdir on first
# start) loads in airlock, and clients that trust it accept airlock's certificates.
. "$(dirname "$0")/lib.sh"
command -v mitmdump >/dev/null 2>&1 || t_skip package "mitmdump not found (apt-get install mitmproxy)"
t_enter_netns "$@"

mkdir -p "$T_DIR/confdir"
# PYTHONUNBUFFERED: its "listening" line must reach the log file when it is printed, not at exit.
HOME="$T_DIR" PYTHONUNBUFFERED=1 mitmdump --set confdir="$T_DIR/confdir" --listen-host 127.0.0.1 \
    --listen-port 0 > "$T_DIR/mitmdump.log" 2>&1 &
mpid=$!
until_ok '[ -s "$T_DIR/confdir/mitmproxy-ca.pem" ] && [ -s "$T_DIR/confdir/mitmproxy-ca-cert.pem" ] &&
    grep -qi listening "$T_DIR/mitmdump.log"' 60 ||
    t_fail "mitmdump did not say it was listening within 60 s: $(tail -3 "$T_DIR/mitmdump.log")"
kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null
t_check "mitmdump wrote its CA" test -s "$T_DIR/confdir/mitmproxy-ca.pem"
before=$(sha256sum "$T_DIR/confdir/mitmproxy-ca.pem")

printf 'domains: ["nginx.test"]\n' > "$T_DIR/allow.yaml"
t_start_resolver
t_upstream_ca
t_upstream_cert "DNS:nginx.test" "$T_DIR/up"
echo "hello via mitmproxy's CA" > "$T_DIR/index.html"
mkdir -p "$T_DIR/www" && mv "$T_DIR/index.html" "$T_DIR/www/"
chmod -R a+rX "$T_DIR"
t_start_nginx "
    }
    server {
        listen 127.0.0.2:443 ssl;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;
" || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
out=$(curl -s -m 5 --cacert "$CA" https://nginx.test/)
t_eq "curl trusting mitmproxy's CA accepts airlock's certificate" "hello via mitmproxy's CA" "$out"
out=$(REQUESTS_CA_BUNDLE="$CA" /usr/bin/python3 -c 'import requests; print(requests.get("https://nginx.test/", timeout=5).status_code)')
t_eq "python requests trusting mitmproxy's CA" "200" "$out"
out=$(echo | openssl s_client -connect 127.0.0.1:443 -servername nginx.test -CAfile "$CA" \
      -verify_return_error 2>/dev/null | grep -a 'Verify return code')
t_contains "openssl s_client verifies the chain" "$out" "0 (ok)"
t_eq "airlock left mitmproxy's CA untouched" "$before" "$(sha256sum "$T_DIR/confdir/mitmproxy-ca.pem")"
t_stop_airlock
t_done
