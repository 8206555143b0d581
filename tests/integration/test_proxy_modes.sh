#!/bin/bash
# Issue 8: the explicit-proxy (HTTP_PROXY / CONNECT) and transparent-redirect modes, in three
# network namespaces the test creates: client (10.77.1.2) -- router/proxy (10.77.1.1 |
# 10.77.2.1) -- upstream (10.77.2.2 allowed hosts, 10.77.2.3 a host nobody may reach).
# The router forwards nothing from the client: the proxy is the only way out.
. "$(dirname "$0")/lib.sh"
command -v nft >/dev/null || t_skip package "nft not installed (apt-get install nftables)"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

CL=al-cl-$$ UP=al-up-$$
cleanup_ns() { ip netns del $CL 2>/dev/null; ip netns del $UP 2>/dev/null; }
trap 't_cleanup; cleanup_ns' EXIT
ip netns add $CL && ip netns add $UP || t_skip netns "ip netns add failed"
# this (the test's own) namespace is the router/proxy
ip link add vcl type veth peer name eth0 netns $CL
ip link add vup type veth peer name eth0 netns $UP
ip addr add 10.77.1.1/24 dev vcl && ip link set vcl up
ip addr add 10.77.2.1/24 dev vup && ip link set vup up
ip -n $CL addr add 10.77.1.2/24 dev eth0 && ip -n $CL link set eth0 up && ip -n $CL link set lo up
ip -n $CL route add default via 10.77.1.1
ip -n $UP addr add 10.77.2.2/24 dev eth0 && ip -n $UP addr add 10.77.2.3/24 dev eth0
ip -n $UP link set eth0 up && ip -n $UP link set lo up && ip -n $UP route add default via 10.77.2.1
sysctl -qw net.ipv4.ip_forward=1
# the firewall: nothing from the client is forwarded anywhere
nft -f - <<NFT
table inet airlock_test {
  chain forward { type filter hook forward priority 0; policy accept; iifname "vcl" drop; }
}
NFT

# resolver for *.test on the router, for airlock and (transparent part) for the client
dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
    --listen-address=10.77.1.1 --listen-address=127.0.0.53 --bind-interfaces --port=53 \
    --address=/test/10.77.2.2 --address=/evil-ip.test/10.77.2.3 -q > "$T_DIR/dnsmasq.log" 2>&1 &
T_PIDS+=($!)
t_wait_udp53 127.0.0.53

# upstreams: allowed hosts on 10.77.2.2:443, the forbidden one on 10.77.2.3:443 (logs connects)
t_upstream_ca
t_upstream_cert "DNS:app.test,DNS:pass.test,DNS:blocked.test" "$T_DIR/up"
t_upstream_cert "DNS:app.test,DNS:evil-ip.test" "$T_DIR/evil"
cat > "$T_DIR/tls_up.py" <<PYX
import ssl, sys, runpy, http.server
addr, port, cert, key, log = sys.argv[1:6]
sys.argv = ["upstream.py", addr, port, log]
orig = http.server.ThreadingHTTPServer.get_request
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
def get_request(self):
    c, a = orig(self)
    return ctx.wrap_socket(c, server_side=True), a
http.server.ThreadingHTTPServer.get_request = get_request
runpy.run_path("$HERE/upstream.py", run_name="__main__")
PYX
: > "$T_DIR/evil.log"
ip netns exec $UP "$PY" "$T_DIR/tls_up.py" 10.77.2.2 443 "$T_DIR/up.pem" "$T_DIR/up.key" "$T_DIR/up.log" >/dev/null 2>&1 &
T_PIDS+=($!)
ip netns exec $UP "$PY" "$T_DIR/tls_up.py" 10.77.2.3 443 "$T_DIR/evil.pem" "$T_DIR/evil.key" "$T_DIR/evil.log" >/dev/null 2>&1 &
T_PIDS+=($!)
ip netns exec $UP "$PY" "$HERE/upstream.py" 10.77.2.2 80 >/dev/null 2>&1 &
T_PIDS+=($!)
until_ok "ip netns exec $UP bash -c 'exec 3<>/dev/tcp/10.77.2.2/443 && exec 4<>/dev/tcp/10.77.2.3/443 && exec 5<>/dev/tcp/10.77.2.2/80' 2>/dev/null" ||
    t_fail "the upstreams never listened"

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["app.test"]
url_prefixes:
  - host: pass.test
    tls: passthrough
  - host: evil-ip.test
    path: /never
YAML
: > "$T_DIR/net.log"
"$AIRLOCK" run --proxy-ip 10.77.1.1 --upstream-dns 127.0.0.53 --allowlist "$T_DIR/allow.yaml" \
    --log "$T_DIR/net.log" --confdir "$T_DIR/confdir" --upstream-ca "$T_DIR/upca.pem" \
    --listen-dns off --listen-http off --listen-https off \
    --listen-proxy 10.77.1.1:3128 --listen-transparent 10.77.1.1:3129 \
    --allow-upstream-cidr 10.77.2.0/24 2> "$T_DIR/airlock.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q ready "$T_DIR/airlock.err"' || { t_fail "airlock never got ready"; cat "$T_DIR/airlock.err"; }
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
inc() { ip netns exec $CL "$@"; }
printf 'nameserver 10.77.1.1\n' > "$T_DIR/cl-resolv.conf"

# ---------------- explicit proxy ----------------
P=http://10.77.1.1:3128
out=$(inc env HTTPS_PROXY=$P curl -s -m 5 --cacert "$CA" https://app.test/echo-headers)
t_contains "explicit: CONNECT to an allowed host, intercepted, 200" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
out=$(inc env http_proxy=$P curl -s -m 5 http://app.test/echo-headers)  # curl reads only lowercase http_proxy
t_contains "explicit: absolute-form GET through HTTP_PROXY" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
code=$(inc env HTTPS_PROXY=$P curl -s -m 5 --cacert "$CA" -o /dev/null -w '%{http_connect}' https://blocked.test/)
t_eq "explicit: CONNECT to a host with no entry: 403 before any tunnel" "403" "$code"
t_logged "explicit: CONNECT blocked line" '^BLOCKED CONNECT blocked.test:443 -> 403$'
out=$(inc env HTTPS_PROXY=$P curl -s -m 5 --cacert "$CA" https://evil-ip.test/other)
t_contains "explicit: blocked path inside an allowed tunnel: 403 JSON" "$out" '"error": "blocked_by_network_allowlist", "host": "evil-ip.test", "path": "/other"'
out=$(inc env HTTPS_PROXY=$P REQUESTS_CA_BUNDLE="$CA" /usr/bin/python3 -c '
import requests
a = requests.get("https://app.test/echo-headers", timeout=5)
try:
    requests.get("https://blocked.test/", timeout=5); b = "no error"
except requests.exceptions.ProxyError as e:
    b = "403" if "403" in str(e) else str(e)[:80]
print(a.status_code, b)')
t_eq "explicit: python requests allowed / CONNECT refused" "200 403" "$out"
out=$(inc env HTTPS_PROXY=$P curl -s -m 5 --cacert "$T_DIR/upca.pem" https://pass.test/echo-headers)
t_contains "explicit: passthrough host reached with the upstream's own certificate" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
t_logged "explicit: passthrough line says tunnel" '^allowed CONNECT pass.test:443 -> 200 tunnel$'
out=$(inc env HTTPS_PROXY=$P curl -s -m 5 -k --connect-to app.test:443:pass.test:443 https://app.test/ -o /dev/null -w '%{http_code}')
t_check "explicit: passthrough tunnel whose SNI names another host is refused ($out)" test "$out" != 200
t_logged "explicit: passthrough SNI mismatch logged" '^BLOCKED CONNECT pass.test:443 -> 403 (host mismatch: connect=pass.test, sni=app.test)$'
out=$(inc env HTTPS_PROXY=$P curl -s -m 5 --cacert "$CA" --connect-to app.test:443:app.test:443 -H 'Host: evil-ip.test' https://app.test/never)
t_contains "explicit: Host differing from the CONNECT host: 403" "$out" '"error": "blocked_by_network_allowlist"'
out=$(inc curl -s -m 3 --cacert "$T_DIR/upca.pem" --resolve app.test:443:10.77.2.2 https://app.test/ -o /dev/null -w '%{http_code}'; echo " rc=$?")
t_contains "explicit: a direct connection without the proxy fails (firewall)" "$out" "000"

# ---------------- transparent redirect ----------------
nft -f - <<NFT
table ip airlock_nat {
  chain prerouting { type nat hook prerouting priority dstnat; policy accept;
    iifname "vcl" tcp dport { 80, 443 } redirect to :3129; }
}
NFT
trun() { ip netns exec $CL unshare --mount bash -c "mount --bind '$T_DIR/cl-resolv.conf' /etc/resolv.conf && \"\$@\"" _ "$@"; }
out=$(trun curl -s -m 5 --cacert "$CA" https://app.test/echo-headers)
t_contains "transparent: HTTPS to the real address, redirected, 200" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
out=$(trun curl -s -m 5 http://app.test/echo-headers)
t_contains "transparent: plain HTTP routed by Host" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
out=$(trun curl -s -m 5 --cacert "$CA" https://blocked.test/x)
t_contains "transparent: blocked host 403 JSON" "$out" '"host": "blocked.test", "path": "/x"'
before=$(wc -l < "$T_DIR/evil.log")
out=$(trun curl -s -m 5 --cacert "$CA" --resolve app.test:443:10.77.2.3 https://app.test/echo-headers)
t_contains "transparent: SNI app.test while dialing another IP reaches app.test" "$out" '"request_line": "GET /echo-headers HTTP/1.1"'
t_eq "transparent: the dialed IP got no connection" "$before" "$(wc -l < "$T_DIR/evil.log")"
out=$(trun curl -s -m 5 --cacert "$CA" https://evil-ip.test/never -o /dev/null -w '%{http_code}')
t_eq "transparent: an allowed name is dialed by name (upstream answers 404 for /never)" "404" "$out"
t_logged "transparent: log line" '^allowed GET https://app.test/echo-headers -> 200$'

kill -TERM "$AIRLOCK_PID"; wait "$AIRLOCK_PID"; t_eq "SIGTERM: exit 0" "0" "$?"
t_done
