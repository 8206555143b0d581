#!/bin/sh
# Starts airlock on loopback with unprivileged ports and the bundled example allowlist, and
# prints how to try it. Stop it with Ctrl-C (the network log stays in $DIR).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${AIRLOCK:-$HERE/../../build/airlock}
DIR=${DEMO_DIR:-/tmp/airlock-demo}
mkdir -p "$DIR"
UPSTREAM=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)
UPSTREAM=${UPSTREAM:-127.0.0.1}
"$BIN" check --allowlist "$HERE/allowlist.yaml"
cat <<TXT

airlock is starting on 127.0.0.1 (DNS :5353, HTTP :8080, HTTPS :8443); log: $DIR/network-sandbox.log
Try it from another shell:
  dig +short @127.0.0.1 -p 5353 anything.example A       # every name -> the proxy IP
  dig @127.0.0.1 -p 5353 example.com AAAA                 # NOERROR, no answer (NODATA)
  curl -s http://127.0.0.1:8080/ -H 'Host: evil.example'  # 403 JSON: not in the allowlist
  curl -s -X DELETE http://127.0.0.1:8080/ -H 'Host: api.github.com'  # 403 (path)
  curl -si http://127.0.0.1:8080/ -H 'Host: example.com'  # allowed: resolved via $UPSTREAM
  curl -s --cacert $DIR/confdir/mitmproxy-ca-cert.pem --resolve evil.example:8443:127.0.0.1 \
       https://evil.example:8443/                         # TLS intercepted, then 403 JSON
  $BIN explain --allowlist $HERE/allowlist.yaml GET https://api.github.com/repos/o/r
  tail -f $DIR/network-sandbox.log

TXT
exec "$BIN" run --proxy-ip 127.0.0.1 --upstream-dns "$UPSTREAM" \
    --allowlist "$HERE/allowlist.yaml" --replacements "$DIR/replacements.json" \
    --log "$DIR/network-sandbox.log" --log-create --confdir "$DIR/confdir" \
    --listen-dns 127.0.0.1:5353 --listen-http 127.0.0.1:8080 --listen-https 127.0.0.1:8443
