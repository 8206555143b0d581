#!/bin/bash
# The documentation blocks that change the machine (issue 29), run as pasted: each block
# marked `checked: tests/integration/test_docs_machine.sh` (docs_check.py --block finds it and
# refuses a block not so marked). They bind 10.0.0.1, 10.77.0.1, write /etc, /var/log,
# /usr/local, add nft tables, change the trust store and reach example.com; here they do so in
# namespaces of this test: network, mount and pid (every process the blocks start dies with
# it), /etc, /usr and /var on overlays whose upper layers are a tmpfs in the test's directory,
# and a network the test builds first:
#   this namespace (the host): veth-sbx 10.0.0.1/24, lo 192.168.1.1, 1.1.1.1 (a
#     dnsmasq: example.com and its subdomains -> 93.184.215.14), 10.77.0.1-2 (sandboxes.md);
#   namespace al-sbx (the sandbox): eth0 10.0.0.2/24, default route via 10.0.0.1;
#   namespace al-up (the internet): 93.184.215.14 serving HTTP :80 and HTTPS :443 with a
#     certificate of a test CA the host's (overlaid) system store trusts.
# What each block is said to do is checked after it ran.
. "$(dirname "$0")/lib.sh"
for p in nft dnsmasq update-ca-certificates cmake; do
    command -v $p >/dev/null || t_skip package "$p not installed"
done
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    unshare --net --mount --pid --fork --mount-proc true 2>/dev/null ||
        t_skip netns "cannot create network, mount and pid namespaces here"
    export AIRLOCK_IN_NETNS=1
    exec unshare --net --mount --pid --fork --mount-proc --propagation private bash "$0" "$@"
fi
t_enter_netns "$@"
SRC=$AIRLOCK_SRC
: "${AIRLOCK_BUILD:=$(dirname "$AIRLOCK")}"
mkdir -p "$T_DIR/bin"
ln -s "$AIRLOCK" "$T_DIR/bin/airlock"
export PATH="$T_DIR/bin:$PATH"

# The overlays go away before the test's directory is removed, every process of the
# namespace first (we are its pid 1: kill -1 reaches only what this test started).
machine_cleanup() {
    disown -a
    kill -KILL -1 2>/dev/null
    umount -l /run /var /usr /etc "$T_DIR/repo/build" 2>/dev/null
    umount -l "$T_DIR/ovl" 2>/dev/null
    t_cleanup
}
trap machine_cleanup EXIT
mkdir -p "$T_DIR/ovl" "$T_DIR/repo/build"
mount -t tmpfs tmpfs "$T_DIR/ovl"
overlay() { # overlay LOWER MOUNTPOINT NAME
    mkdir -p "$T_DIR/ovl/$3.up" "$T_DIR/ovl/$3.work"
    mount -t overlay overlay \
        -o "lowerdir=$1,upperdir=$T_DIR/ovl/$3.up,workdir=$T_DIR/ovl/$3.work" "$2"
}
for d in etc usr var; do overlay "/$d" "/$d" "$d" || t_skip root "cannot mount an overlay on /$d"; done
overlay "$AIRLOCK_BUILD" "$T_DIR/repo/build" build || t_skip root "cannot overlay the build dir"
mount -t tmpfs tmpfs /run # ip netns keeps its handles there
mount --bind "$T_DIR/resolv.conf" /etc/resolv.conf

block() { # block DOC 'text of one of its lines': the first such block's text, or fail the test
    "$PY" "$SRC/tests/integration/docs_check.py" --block "$SRC/$1" test_docs_machine.sh "$2" ||
        { t_fail "$1: block '$2' not found"; return 1; }
}
wait_ready() { # wait_ready FILE: until airlock says ready in FILE
    # shellcheck disable=SC2034 # read by until_ok's eval
    WR_FILE=$1
    # shellcheck disable=SC2016 # expanded by until_ok
    until_ok 'grep -q ": ready" "$WR_FILE" 2>/dev/null' 20 || { cat "$1"; return 1; }
}
stop_matching() { # stop_matching 'pgrep -f pattern': SIGTERM, then wait until gone
    local p
    for p in $(pgrep -f -- "$1"); do kill -TERM "$p"; done
    until_ok "! pgrep -f -- '$1' >/dev/null" 10
}

# ---- the network ----
SBX=al-sbx UP=al-up
if ! ip netns add $SBX || ! ip netns add $UP; then t_skip netns "ip netns add failed"; fi
ip link add veth-sbx type veth peer name eth0 netns $SBX
ip addr add 10.0.0.1/24 dev veth-sbx && ip link set veth-sbx up
ip -n $SBX addr add 10.0.0.2/24 dev eth0 && ip -n $SBX link set eth0 up
ip -n $SBX link set lo up && ip -n $SBX route add default via 10.0.0.1
ip link add vup type veth peer name eth0 netns $UP
ip addr add 93.184.215.1/24 dev vup && ip link set vup up
ip -n $UP addr add 93.184.215.14/24 dev eth0 && ip -n $UP link set eth0 up
ip -n $UP link set lo up && ip -n $UP route add default via 93.184.215.1
for a in 192.168.1.1 1.1.1.1 10.77.0.1 10.77.0.2; do ip addr add $a/32 dev lo; done
sysctl -qw net.ipv4.ip_forward=1 # so that only the blocks' nft rules stop the sandbox
dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
    --listen-address=192.168.1.1 --listen-address=1.1.1.1 --bind-interfaces --port=53 \
    --address=/example.com/93.184.215.14 -q > "$T_DIR/dnsmasq.log" 2>&1 &
T_PIDS+=($!)
t_wait_udp53 192.168.1.1

# the upstream: its CA in the (overlaid) system store, which airlock verifies against
t_upstream_ca
t_upstream_cert "DNS:example.com,DNS:allowed.example.com" "$T_DIR/up"
cat > "$T_DIR/up.py" <<'PY'
import http.server, ssl, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the test upstream\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
plain = http.server.ThreadingHTTPServer(("93.184.215.14", 80), H)
tls = http.server.ThreadingHTTPServer(("93.184.215.14", 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
threading.Thread(target=plain.serve_forever, daemon=True).start()
tls.serve_forever()
PY
ip netns exec $UP "$PY" "$T_DIR/up.py" "$T_DIR/up.pem" "$T_DIR/up.key" > "$T_DIR/up.err" 2>&1 &
T_PIDS+=($!)
until_ok "ip netns exec $UP bash -c 'exec 3<>/dev/tcp/93.184.215.14/443' 2>/dev/null" ||
    t_fail "the upstream never listened"
cp "$T_DIR/upca.pem" /usr/local/share/ca-certificates/test-upstream-ca.crt
update-ca-certificates > "$T_DIR/update-ca.out" 2>&1 || t_fail "setup: update-ca-certificates"

# ---- README.md: cmake --install build --prefix /usr/local ----
block README.md 'cmake --install build' > "$T_DIR/install.sh"
(cd "$T_DIR/repo" && bash -e "$T_DIR/install.sh") > "$T_DIR/install.out" 2>&1
t_eq "README: the install block runs" 0 "$?"
t_check "README: it installs /usr/local/bin/airlock, which runs" \
    bash -c '/usr/local/bin/airlock --version | grep -q "^airlock "'
t_check "README: and /usr/local/bin/airlock-sandbox" test -x /usr/local/bin/airlock-sandbox
t_check "README: on the overlay, not the machine's /usr/local" test -e "$T_DIR/ovl/usr.up/local/bin/airlock"

# ---- ca-trust.md: the system store, then the three checks, with example.com local ----
mkdir -p "$T_DIR/dns"
printf 'domains: [example.com, api.internal.example]\n' > "$T_DIR/dns/allow.yaml"
# (the credential of replacements.md's allow_plain_http example, below)
printf '{"SURROGATE": {"value": "real", "scopes": ["api.internal.example"], "headers": ["Authorization"]}}\n' \
    > "$T_DIR/dns/repl.json"
airlock run --proxy-ip 127.0.0.1 --upstream-dns 192.168.1.1 --allowlist "$T_DIR/dns/allow.yaml" \
    --replacements "$T_DIR/dns/repl.json" \
    --log "$T_DIR/dns/net.log" --log-create --confdir "$T_DIR/dns/ca" \
    --listen-dns 127.0.0.1:53 --listen-http 127.0.0.1:80 --listen-https 127.0.0.1:443 \
    2> "$T_DIR/dns/airlock.err" &
T_PIDS+=($!)
wait_ready "$T_DIR/dns/airlock.err" || t_fail "ca-trust: the DNS-mode airlock never got ready"
export CA=$T_DIR/dns/ca/mitmproxy-ca-cert.pem
# shellcheck disable=SC2016 # $CA: exported, expanded by that bash
t_check "ca-trust: the store does not trust airlock's CA before the block" \
    bash -c '! openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt "$CA" >/dev/null 2>&1'
# shellcheck disable=SC2016 # the block's text
block docs/ca-trust.md 'cp "$CA" /usr/local/share' > "$T_DIR/store.sh"
bash -e "$T_DIR/store.sh" > "$T_DIR/store.out" 2>&1
t_eq "ca-trust: the system-store block runs" 0 "$?"
t_check "ca-trust: it wrote /usr/local/share/ca-certificates/airlock-ca.crt (on the overlay)" \
    test -e "$T_DIR/ovl/usr.up/local/share/ca-certificates/airlock-ca.crt"
t_check "ca-trust: ca-certificates.crt now trusts airlock's CA" \
    openssl verify -CAfile /etc/ssl/certs/ca-certificates.crt "$CA"
block docs/ca-trust.md 'curl -sS --cacert' > "$T_DIR/checks.sh"
bash -e "$T_DIR/checks.sh" > "$T_DIR/checks.out" 2> "$T_DIR/checks.err"
t_eq "ca-trust: the three checks run (python's urlopen trusts the system store)" 0 "$?"
t_eq "ca-trust: curl prints a status and openssl verifies" \
    "$(printf '200\nVerify return code: 0 (ok)')" "$(cat "$T_DIR/checks.out")"
t_check "ca-trust: the requests went through airlock to the local example.com" until_ok \
    "grep -qx 'allowed GET https://example.com/ -> 200' '$T_DIR/dns/net.log'"

# ---- audit.md: replay in CI, with nothing and then something to change ----
mkdir -p "$T_DIR/ci/logs"
cp "$T_DIR/dns/net.log" "$T_DIR/ci/logs/run1.log"
block docs/audit.md 'airlock replay --allowlist new-allowlist.yaml' > "$T_DIR/ci.sh"
cp "$T_DIR/dns/allow.yaml" "$T_DIR/ci/new-allowlist.yaml"
(cd "$T_DIR/ci" && bash "$T_DIR/ci.sh") > "$T_DIR/ci.out" 2>&1
t_eq "audit: the CI line passes when the new allowlist changes nothing" 0 "$?"
t_eq "audit: and prints nothing" "" "$(cat "$T_DIR/ci.out")"
t_check "audit: replay.txt was written" test -s "$T_DIR/ci/replay.txt"
printf 'domains: [pypi.org]\n' > "$T_DIR/ci/new-allowlist.yaml"
(cd "$T_DIR/ci" && bash "$T_DIR/ci.sh") > "$T_DIR/ci.out" 2>&1
t_eq "audit: the CI line fails when it would block a logged request" 1 "$?"
t_check "audit: and prints replay.txt" cmp "$T_DIR/ci.out" "$T_DIR/ci/replay.txt"
t_check "audit: which names the request" grep -q 'example.com' "$T_DIR/ci.out"

# ---- replacements.md: a surrogate over plain http, against the same airlock ----
# The shown answer is wrapped ("one line in reality"): its lines joined are the one line.
block docs/replacements.md 'curl -s http://api.internal.example/v1/x' > "$T_DIR/plain.txt"
cmd=$(sed -n 's/^\$ //p' "$T_DIR/plain.txt")
t_eq "replacements: the block holds one command" 1 "$(grep -c '^\$ ' "$T_DIR/plain.txt")"
shown=$(sed '0,/^\$ /d' "$T_DIR/plain.txt" | tr -d '\n')
got=$(bash -c "$cmd" 2>&1)
t_eq "replacements: the allow_plain_http refusal is the one shown" "$shown" "$got"
t_check "replacements: and its log line" until_ok "grep -qx \
    'BLOCKED GET http://api.internal.example/v1/x -> 403 (credential needs https)' \
    '$T_DIR/dns/net.log'"

# ---- cli.md: the explicit proxy on 10.0.0.1:3128, then the sandbox's firewall ----
mkdir -p /etc/airlock
printf 'domains: [allowed.example.com]\n' > /etc/airlock/allowlist.yaml
echo '{}' > /etc/airlock/replacements.json
mkdir -p /etc/netns/$SBX
printf 'nameserver 10.0.0.1\noptions timeout:1 attempts:1\n' > /etc/netns/$SBX/resolv.conf
block docs/cli.md '--listen-proxy 10.0.0.1:3128' > "$T_DIR/explicit.sh"
bash -e "$T_DIR/explicit.sh" > "$T_DIR/explicit.out" 2>&1 &
wait_ready "$T_DIR/explicit.out"
t_eq "cli: the explicit-proxy block starts airlock" 0 "$?"
t_check "cli: it created the log in /var/log (on the overlay)" \
    test -e "$T_DIR/ovl/var.up/log/airlock-sandbox.log"
block docs/cli.md 'tcp dport 3128 accept' > "$T_DIR/fw.sh"
# the block's host lines here, its sandbox lines (after "# in the sandbox") in the sandbox
sed '/^# in the sandbox/,$d' "$T_DIR/fw.sh" > "$T_DIR/fw-host.sh"
sed -n '/^# in the sandbox/,$p' "$T_DIR/fw.sh" > "$T_DIR/fw-sbx.sh"
t_check "cli: the firewall block has host and sandbox lines" \
    test -s "$T_DIR/fw-host.sh" -a -s "$T_DIR/fw-sbx.sh"
bash -e "$T_DIR/fw-host.sh" > "$T_DIR/fw-host.out" 2>&1
t_eq "cli: its nft lines run on the host" 0 "$?"
# the sandbox trusts airlock's CA (ca-trust.md) through curl's variable
CURL_CA_BUNDLE=/etc/airlock/ca/mitmproxy-ca-cert.pem ip netns exec $SBX \
    bash "$T_DIR/fw-sbx.sh" > "$T_DIR/fw-sbx.out" 2> "$T_DIR/fw-sbx.err"
t_check "cli: the sandbox's last curl fails (its exit status)" test "$?" -ne 0
t_eq "cli: the first curl works through airlock; the second prints nothing" \
    "hello from the test upstream" "$(cat "$T_DIR/fw-sbx.out")"
t_check "cli: the proxy logged the CONNECTed request" until_ok \
    "grep -qx 'allowed GET https://allowed.example.com/ -> 200' /var/log/airlock-sandbox.log"
t_check "cli: the sandbox cannot reach the upstream's address directly (forward drop)" \
    bash -c "! ip netns exec $SBX curl -s --max-time 2 http://93.184.215.14/ >/dev/null"
t_check "cli: nor airlock on another port (input drop)" \
    bash -c "! ip netns exec $SBX curl -s --max-time 2 http://10.0.0.1:3129/ >/dev/null"
stop_matching '--listen-proxy 10.0.0.1:3128'
nft delete table inet sandbox

# ---- cli.md: the transparent redirect ----
block docs/cli.md '--listen-transparent 10.0.0.1:3129' > "$T_DIR/transparent.sh"
grep -q '^NFT$' "$T_DIR/transparent.sh" || t_fail "cli: the transparent block not found"
bash -e "$T_DIR/transparent.sh" > "$T_DIR/transparent.out" 2>&1
t_eq "cli: the transparent block runs (airlock in the background, then nft)" 0 "$?"
wait_ready "$T_DIR/transparent.out" || t_fail "cli: the transparent airlock never got ready"
got=$(ip netns exec $SBX curl -s --max-time 10 http://allowed.example.com/)
t_eq "cli: the sandbox's plain HTTP is redirected to airlock" "hello from the test upstream" "$got"
got=$(CURL_CA_BUNDLE=/etc/airlock/ca/mitmproxy-ca-cert.pem ip netns exec $SBX \
    curl -s --max-time 10 https://allowed.example.com/)
t_eq "cli: and its HTTPS" "hello from the test upstream" "$got"
got=$(ip netns exec $SBX curl -s --max-time 10 http://evil.example.com/)
t_contains "cli: a host the allowlist does not name: 403" "$got" \
    '"error": "blocked_by_network_allowlist"'
stop_matching '--listen-transparent 10.0.0.1:3129'

# ---- sandboxes.md: one airlock for many sandboxes on 10.77.0.1 ----
mkdir -p /etc/airlock/sandboxes/conv42 /etc/airlock/sandboxes/health
printf 'source 10.77.0.2/32\n' > /etc/airlock/sandboxes/conv42/sandbox.conf
printf 'domains: [example.com]\n' > /etc/airlock/sandboxes/conv42/network-allowlist.yaml
printf 'source 10.77.0.1/32\n' > /etc/airlock/sandboxes/health/sandbox.conf
: > /etc/airlock/sandboxes/health/network-allowlist.yaml
block docs/sandboxes.md 'mkdir -p /var/log/airlock' > "$T_DIR/sandboxes.sh"
bash -e "$T_DIR/sandboxes.sh" > "$T_DIR/sandboxes.out" 2>&1 &
wait_ready "$T_DIR/sandboxes.out"
t_eq "sandboxes: the block starts airlock" 0 "$?"
t_check "sandboxes: airlock health on 10.77.0.1" \
    airlock health --dns 10.77.0.1:53 --http 10.77.0.1:80 --https 10.77.0.1:443
got=$(curl -s --interface 10.77.0.2 http://10.77.0.1/ -H 'Host: evil.example')
t_contains "sandboxes: conv42's allowlist answers 403" "$got" '"host": "evil.example"'
got=$(curl -s --interface 10.77.0.2 http://10.77.0.1/ -H 'Host: example.com')
t_eq "sandboxes: and lets example.com through (1.1.1.1 resolves it)" \
    "hello from the test upstream" "$got"
t_check "sandboxes: conv42's own log has the 403" \
    grep -qx 'BLOCKED GET http://evil.example/ -> 403' /etc/airlock/sandboxes/conv42/network-sandbox.log
t_check "sandboxes: and the 200" until_ok "grep -qx \
    'allowed GET http://example.com/ -> 200' /etc/airlock/sandboxes/conv42/network-sandbox.log"
t_check "sandboxes: the host log is in /var/log/airlock (on the overlay)" \
    test -e "$T_DIR/ovl/var.up/log/airlock/host.log"
t_check "sandboxes: the CA is in /var/lib/airlock/ca (on the overlay)" \
    test -e "$T_DIR/ovl/var.up/lib/airlock/ca/mitmproxy-ca-cert.pem"
stop_matching '--sandboxes /etc/airlock/sandboxes'

# ---- sandboxes.md: a CA per sandbox, its warning as shown ----
printf 'domains: [github.com, pypi.org]\n' > /etc/airlock/sandboxes/conv42/network-allowlist.yaml
rm -rf /var/lib/airlock/ca # the previous block's shared CA
# a sandbox whose allowlist allows nothing gets no CA (airlock refuses to start): none here
rm -rf /etc/airlock/sandboxes/health
block docs/sandboxes.md '--ca-per-conversation --ca-days 7' > "$T_DIR/sbxca.sh"
block docs/sandboxes.md 'sandbox conv42: created a per-conversation CA' > "$T_DIR/sbxca.want"
bash -e "$T_DIR/sbxca.sh" > "$T_DIR/sbxca.out" 2>&1 &
wait_ready "$T_DIR/sbxca.out"
t_eq "sandboxes: the per-sandbox CA block starts airlock" 0 "$?"
t_check "sandboxes: its stderr has the line shown" grep -qxFf "$T_DIR/sbxca.want" "$T_DIR/sbxca.out"
t_check "sandboxes: conv42's certificate is where the line says" \
    test -s /etc/airlock/sandboxes/conv42/mitmproxy-ca-cert.pem
stop_matching '--sandboxes /etc/airlock/sandboxes'
t_done
