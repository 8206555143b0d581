#!/bin/sh
# Starts airlock on loopback with unprivileged ports and the bundled example allowlist, plus a
# small local HTTPS upstream (openssl s_server) so that one allowed HTTPS request can be shown,
# and prints how to try it. Ctrl-C (or SIGTERM) stops both; the network log stays in DEMO_DIR.
#
# Ports, all on 127.0.0.1, chosen by environment variables (defaults in brackets):
#   DEMO_DNS_PORT       airlock's DNS listener, UDP and TCP        [25353]
#   DEMO_HTTP_PORT      airlock's plain HTTP listener, TCP         [28080]
#   DEMO_HTTPS_PORT     airlock's HTTPS listener, TCP              [28443]
#   DEMO_UPSTREAM_PORT  the local HTTPS upstream (openssl), TCP    [28444]
# The defaults avoid mDNS (5353, held by avahi on desktops) and the usual development ports
# (8000, 8080, 8443). Other variables: AIRLOCK (the binary; default build/airlock of this
# checkout), DEMO_DIR (log, CA and scratch files; default /tmp/airlock-demo).
# Uses openssl for the local upstream (s_server -WWW) and its throwaway test CA.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${AIRLOCK:-$HERE/../../build/airlock}
# an absolute path without "..", so that the commands printed below work from any directory
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
DIR=${DEMO_DIR:-/tmp/airlock-demo}
DNS_PORT=${DEMO_DNS_PORT:-25353}
HTTP_PORT=${DEMO_HTTP_PORT:-28080}
HTTPS_PORT=${DEMO_HTTPS_PORT:-28443}
UP_PORT=${DEMO_UPSTREAM_PORT:-28444}
mkdir -p "$DIR/upstream"
UPSTREAM=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf)
UPSTREAM=${UPSTREAM:-127.0.0.1}

# The example allowlist, plus an entry for the local upstream on its port (a url_prefixes item:
# the example file ends with its url_prefixes list).
cp "$HERE/allowlist.yaml" "$DIR/allowlist.yaml"
printf '  - host: 127.0.0.1                # the demo'"'"'s local HTTPS upstream\n    ports: [%s]\n' \
    "$UP_PORT" >> "$DIR/allowlist.yaml"
"$BIN" check --allowlist "$DIR/allowlist.yaml"

# A throwaway test CA and a certificate for 127.0.0.1 signed by it; airlock verifies the
# upstream against the system's roots plus this CA (--upstream-ca).
U=$DIR/upstream
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=airlock demo test CA" -keyout "$U/ca.key" -out "$U/ca.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
    >/dev/null 2>&1
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$U/server.key" -out "$U/server.csr" >/dev/null 2>&1
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$U/server.ext"
openssl x509 -req -in "$U/server.csr" -CA "$U/ca.pem" -CAkey "$U/ca.key" -CAcreateserial \
    -days 2 -extfile "$U/server.ext" -out "$U/server.pem" >/dev/null 2>&1
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    cat /etc/ssl/certs/ca-certificates.crt "$U/ca.pem" > "$U/roots.pem"
else
    cp "$U/ca.pem" "$U/roots.pem"
fi
mkdir -p "$U/www"
echo "hello from the demo's local HTTPS upstream" > "$U/www/hello.txt"

UP_PID=
AL_PID=
stop() {
    rc=$1
    trap - EXIT INT TERM
    set +e
    [ -n "$AL_PID" ] && kill "$AL_PID" 2>/dev/null && wait "$AL_PID" 2>/dev/null
    [ -n "$UP_PID" ] && kill "$UP_PID" 2>/dev/null && wait "$UP_PID" 2>/dev/null
    exit "$rc"
}
trap 'stop $?' EXIT
trap 'stop 0' INT TERM

# openssl's -WWW server: files of $U/www over TLS, one connection at a time; it is all the
# demo needs, and openssl is already installed where airlock's build ran (ca-certificates).
(cd "$U/www" && exec openssl s_server -quiet -WWW -accept "127.0.0.1:$UP_PORT" \
    -cert "$U/server.pem" -key "$U/server.key" </dev/null >"$U/server.log" 2>&1) &
UP_PID=$!

"$BIN" run --proxy-ip 127.0.0.1 --upstream-dns "$UPSTREAM" \
    --allowlist "$DIR/allowlist.yaml" --replacements "$DIR/replacements.json" \
    --log "$DIR/network-sandbox.log" --log-create --confdir "$DIR/confdir" \
    --upstream-ca "$U/roots.pem" --allow-upstream-cidr 127.0.0.1/32 \
    --listen-dns "127.0.0.1:$DNS_PORT" --listen-http "127.0.0.1:$HTTP_PORT" \
    --listen-https "127.0.0.1:$HTTPS_PORT" &
AL_PID=$!
until "$BIN" health --https "127.0.0.1:$UP_PORT" 2>/dev/null; do
    kill -0 "$UP_PID" 2>/dev/null || { cat "$U/server.log" >&2; echo "the local upstream did not start" >&2; exit 1; }
    sleep 0.1
done
until "$BIN" health --dns "127.0.0.1:$DNS_PORT" --http "127.0.0.1:$HTTP_PORT" \
    --https "127.0.0.1:$HTTPS_PORT" 2>/dev/null; do
    kill -0 "$AL_PID" 2>/dev/null || { echo "airlock did not start (see above)" >&2; exit 1; }
    sleep 0.1
done

CA=$DIR/confdir/mitmproxy-ca-cert.pem
cat <<TXT

airlock is running on 127.0.0.1 (DNS :$DNS_PORT UDP+TCP, HTTP :$HTTP_PORT, HTTPS :$HTTPS_PORT);
a local HTTPS upstream on 127.0.0.1:$UP_PORT; log: $DIR/network-sandbox.log
(ports: DEMO_DNS_PORT, DEMO_HTTP_PORT, DEMO_HTTPS_PORT, DEMO_UPSTREAM_PORT)
Try it from another shell:
  dig +short @127.0.0.1 -p $DNS_PORT anything.example A      # every name -> the proxy IP
  dig @127.0.0.1 -p $DNS_PORT example.com AAAA                # NOERROR, no answer (NODATA)
  curl -s http://127.0.0.1:$HTTP_PORT/ -H 'Host: evil.example'   # 403 JSON: not in the allowlist
  curl -s -X DELETE http://127.0.0.1:$HTTP_PORT/ -H 'Host: api.github.com'   # 403: path / not allowed
  curl -si http://127.0.0.1:$HTTP_PORT/ -H 'Host: example.com'   # allowed; resolved via $UPSTREAM (502 without internet)
  curl -s --cacert $CA https://127.0.0.1:$HTTPS_PORT/hello.txt -H 'Host: 127.0.0.1:$UP_PORT'   # allowed over TLS: the local upstream's file
  curl -s --cacert $CA --resolve evil.example:$HTTPS_PORT:127.0.0.1 https://evil.example:$HTTPS_PORT/   # TLS intercepted, then 403 JSON
  curl -s --cacert $CA --resolve example.com:$HTTPS_PORT:127.0.0.1 https://example.com:$HTTPS_PORT/   # 403 JSON: port $HTTPS_PORT not allowed
  $BIN explain --allowlist $DIR/allowlist.yaml GET https://api.github.com/repos/o/r
  tail -f $DIR/network-sandbox.log
Ctrl-C to stop.

TXT
wait "$AL_PID"
