#!/bin/bash
# container/README.md's podman blocks (issue 29), run as pasted: "The image"
# (container/build-image.sh) and "Running it by hand" (a shared CA, the egress and internal
# networks, the proxy container, an agent image holding curl, two requests), from the
# repository's root, with a podman of the test's own (as test_container.sh makes it: state,
# storage and network config in the test's directory, /run's podman parts on tmpfs) in
# network and mount namespaces of the test's own. What the blocks reach, the test provides:
# UPSTREAM_DNS=192.168.1.1 is a dnsmasq on this namespace's loopback answering example.com
# with 93.184.215.14, an upstream in a namespace of its own whose certificate's CA the image's
# bundle holds (the block copies the host's /etc/ssl/certs/ca-certificates.crt, here on an
# overlay with the test CA added). The block's /tmp/ paths are moved under the test's
# directory (docs_check.py's convention), and the repository is overlaid at its own path so
# the block's agent/ directory lands in the test's directory. The static airlock is built
# (once) in $AIRLOCK_BUILD/container-static (test_container.sh's, one at a time: a ctest
# RESOURCE_LOCK), through build-image.sh's
# AIRLOCK_STATIC_BUILD_DIR.
. "$(dirname "$0")/lib.sh"
if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ "$(id -u)" = 0 ] || t_skip root "needs root (podman networks, namespaces)"
    for tool in podman runc dnsmasq readelf strip nft ldd cmake; do
        command -v "$tool" >/dev/null || t_skip package "$tool is not installed"
    done
fi
t_enter_netns "$@"
SRC=$AIRLOCK_SRC
: "${AIRLOCK_BUILD:=$SRC/build}"

# ---- a private podman (as test_container.sh), all of /run on a tmpfs (airlock-sandbox's state) ----
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p "$T_DIR/ovl"
mount -t tmpfs tmpfs "$T_DIR/ovl"
t_private_podman "$T_DIR/ovl" || { echo "FAIL: a private podman"; exit 1; }

c_cleanup() {
    t_podman_clear
    umount -l "$AIRLOCK_BUILD" "$SRC" /etc /run /var/lib /var/cache 2>/dev/null
    grep -o " $T_DIR/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
    t_cleanup
}
trap c_cleanup EXIT

# ---- /etc with the test CA in the system bundle; the repository on an overlay ----
overlay() { # overlay LOWER MOUNTPOINT NAME
    mkdir -p "$T_DIR/ovl/$3.up" "$T_DIR/ovl/$3.work"
    mount -t overlay overlay \
        -o "lowerdir=$1,upperdir=$T_DIR/ovl/$3.up,workdir=$T_DIR/ovl/$3.work" "$2"
}
t_upstream_ca
t_upstream_cert "DNS:example.com,DNS:api.github.com" "$T_DIR/up"
mkdir -p "$T_DIR/realbuild" "$AIRLOCK_BUILD/container-static"
mount --bind "$AIRLOCK_BUILD" "$T_DIR/realbuild"
overlay /etc /etc etc || t_skip root "cannot mount an overlay on /etc"
mount --bind "$T_DIR/resolv.conf" /etc/resolv.conf
cat "$T_DIR/upca.pem" >> /etc/ssl/certs/ca-certificates.crt
overlay "$SRC" "$SRC" repo || t_skip root "cannot mount an overlay on the repository"
t_overlay_var || t_skip root "cannot mount overlays on /var/lib and /var/cache"
mount --bind "$T_DIR/realbuild" "$AIRLOCK_BUILD" # the static build is kept between runs
export AIRLOCK_STATIC_BUILD_DIR=$AIRLOCK_BUILD/container-static

# ---- the internet: 192.168.1.1 resolves, 93.184.215.14 serves example.com ----
UP=al-dup-$$
ip netns add $UP || t_skip netns "ip netns add failed"
cleanup_ns() { ip netns del $UP 2>/dev/null; }
trap 'c_cleanup; cleanup_ns' EXIT
ip link add vup type veth peer name eth0 netns $UP
ip addr add 93.184.215.1/24 dev vup && ip link set vup up
ip -n $UP addr add 93.184.215.14/24 dev eth0 && ip -n $UP link set eth0 up
ip -n $UP link set lo up && ip -n $UP route add default via 93.184.215.1
ip addr add 192.168.1.1/32 dev lo
sysctl -qw net.ipv4.ip_forward=1
dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
    --listen-address=192.168.1.1 --bind-interfaces --port=53 \
    --address=/example.com/93.184.215.14 --address=/github.com/93.184.215.14 \
    -q > "$T_DIR/dnsmasq.log" 2>&1 &
T_PIDS+=($!)
t_wait_udp53 192.168.1.1
cat > "$T_DIR/up.py" <<'PY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[3], "a") as f:
            f.write(self.headers.get("Host", "") + self.path + "\n")
        body = b"hello from the test upstream\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
tls = http.server.ThreadingHTTPServer(("93.184.215.14", 443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
tls.serve_forever()
PY
: > "$T_DIR/up.log"
ip netns exec $UP "$PY" "$T_DIR/up.py" "$T_DIR/up.pem" "$T_DIR/up.key" "$T_DIR/up.log" \
    > "$T_DIR/up.err" 2>&1 &
T_PIDS+=($!)
until_ok "ip netns exec $UP bash -c 'exec 3<>/dev/tcp/93.184.215.14/443' 2>/dev/null" ||
    t_fail "the upstream never listened"

block() { # block 'text of one of its lines': container/README.md's first such block
    "$PY" "$SRC/tests/integration/docs_check.py" --block "$SRC/container/README.md" \
        test_docs_container.sh "$1" | sed "s#/tmp/#$T_DIR/tmp/#g"
}
mkdir -p "$T_DIR/tmp"

# ---- "The image" ----
block 'container/build-image.sh' > "$T_DIR/image.sh"
(cd "$SRC" && bash -e "$T_DIR/image.sh") > "$T_DIR/image.out" 2> "$T_DIR/image.err"
rc=$?
t_eq "the image block runs" 0 "$rc"
[ "$rc" = 0 ] || tail -n 20 "$T_DIR/image.err"
t_check "it prints localhost/airlock-proxy:VERSION-HASH" \
    grep -Eqx 'localhost/airlock-proxy:[0-9.]+-[0-9a-f]{12}' "$T_DIR/image.out"
if ! out=$(podman run --rm --network none --entrypoint /airlock airlock-proxy --version 2>&1); then
    t_skip podman "podman cannot run containers here: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
fi

# ---- "Running it by hand" ----
block 'podman network create --disable-dns airlock-egress' > "$T_DIR/byhand.sh"
(cd "$SRC" && timeout 300 bash -e "$T_DIR/byhand.sh") > "$T_DIR/byhand.out" \
    2> "$T_DIR/byhand.err"
rc=$?
t_eq "the by-hand block runs to its end" 0 "$rc"
[ "$rc" = 0 ] || tail -n 20 "$T_DIR/byhand.err"
sed 's/^/  | /' "$T_DIR/byhand.out"
t_check "airlock health in the proxy container (exit 0, its probe in the log)" \
    grep -qx 'DNS A airlock-health.invalid -> 10.199.1.100' "$T_DIR/tmp/demo.log"
t_check "the agent's https://example.com/: 200 (through the proxy to the test upstream)" \
    grep -qx 200 "$T_DIR/byhand.out"
t_check "the test upstream got it" grep -qx 'example.com/' "$T_DIR/up.log"
t_check "api.github.com/zen: 403 JSON, path not allowed" \
    grep -q '"error": "blocked_by_network_allowlist", "host": "api.github.com"' "$T_DIR/byhand.out"
t_check "the log has the 200" grep -qx 'allowed GET https://example.com/ -> 200' "$T_DIR/tmp/demo.log"
t_check "and the 403" grep -qx 'BLOCKED GET https://api.github.com/zen -> 403' "$T_DIR/tmp/demo.log"
t_check "the CA is in ~/.airlock-mitmproxy" test -s "$HOME/.airlock-mitmproxy/mitmproxy-ca-cert.pem"
t_check "the block removed its proxy container" \
    bash -c '! podman container exists airlock-proxy-demo'
t_check "and its internal network" bash -c '! podman network exists airlock-conv-demo'
t_check "agent/ landed on the overlay, not in the repository" \
    test -d "$T_DIR/ovl/repo.up/agent/root"

# ---- README.md: the image, airlock-sandbox setup and run, agent-image CMD... filled in ----
# (airlock-sandbox on PATH as `cmake --install` puts it; UPSTREAM_DNS as the README's
# container section says: the resolver, here the test's)
"$PY" "$SRC/tests/integration/docs_check.py" --block "$SRC/README.md" test_docs_container.sh \
    'airlock-sandbox setup' | sed -e "s#/tmp/#$T_DIR/tmp/#g" \
    -e 's#agent-image CMD\.\.\.#localhost/agent-curl curl -s https://example.com/#' \
    > "$T_DIR/readme.sh"
t_check "README: the block's placeholders filled in" grep -q 'agent-curl curl' "$T_DIR/readme.sh"
printf 'domains: [example.com]\n' > "$SRC/allowlist.yaml"
(cd "$SRC" && PATH=$SRC/container:$PATH AIRLOCK_UPSTREAM_DNS=192.168.1.1 \
    timeout 300 bash -e "$T_DIR/readme.sh") > "$T_DIR/readme.out" 2> "$T_DIR/readme.err"
rc=$?
t_eq "README: the airlock-sandbox block runs" 0 "$rc"
[ "$rc" = 0 ] || tail -n 20 "$T_DIR/readme.err"
t_check "README: the agent got the test upstream's answer" \
    grep -qx 'hello from the test upstream' "$T_DIR/readme.out"
t_check "README: in task1's log" \
    grep -qx 'allowed GET https://example.com/ -> 200' "$T_DIR/tmp/task1.log"
t_check "README: run removed its proxy" bash -c '! podman container exists airlock-proxy-task1'
t_done
