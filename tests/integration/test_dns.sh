#!/usr/bin/env bash
# DNS responder end to end (docs/network-log.md, "DNS").
# Part 1: `airlock run` on loopback, queried with dig and kdig over UDP and TCP (one query per
#         connection and several on a kept-open connection); checks answers and the log.
# Part 2: inside a private network + mount namespace (root), airlock listens on 127.0.0.1:53
#         and /etc/resolv.conf points there; a glibc and a static musl program resolve a name
#         with getaddrinfo(AF_UNSPEC). musl fails the whole lookup if AAAA gets NOTIMP.
# Env: AIRLOCK (binary), AIRLOCK_SRC (repo). Exit 0 pass, 1 fail, 77 skipped (said loudly).
set -u

: "${AIRLOCK:?AIRLOCK must name the airlock binary}"
: "${AIRLOCK_SRC:?AIRLOCK_SRC must name the repository}"
. "$(dirname "$0")/lib.sh" # the fixed environment and t_skip; this test makes its own dirs
PROXY_IP=10.199.1.100
READY_WAIT_S=30

tmp=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/airlock.err" ] && sed 's/^/  airlock: /' "$tmp/airlock.err" >&2
    exit 1
}

for tool in dig kdig; do
    command -v "$tool" >/dev/null \
        || t_skip package "$tool not installed (apt-get install dnsutils knot-dnsutils)"
done

# Waits for airlock's ready line on stderr (file $1) and prints the DNS port from it.
wait_ready() {
    local i line
    for ((i = 0; i < READY_WAIT_S * 20; i++)); do
        line=$(grep -m1 'ready' "$1" 2>/dev/null)
        if [ -n "$line" ]; then
            echo "$line" | sed -n 's/.* dns [^ ,]*:\([0-9][0-9]*\).*/\1/p'
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# ---------------------------------------------------------------- part 1: dig and kdig
log="$tmp/network.log"
allow="$tmp/allowlist.json"
echo '{"domains": []}' >"$allow"
"$AIRLOCK" run --proxy-ip "$PROXY_IP" --upstream-dns 127.0.0.1:9 --listen-dns 127.0.0.1:0 \
    --listen-http 127.0.0.1:0 --listen-https 127.0.0.1:0 --allowlist "$allow" \
    --log "$log" --log-create --confdir "$tmp/confdir" 2>"$tmp/airlock.err" &
pids+=($!)
port=$(wait_ready "$tmp/airlock.err") || fail "airlock did not become ready"
[ -n "$port" ] || fail "no DNS port in the ready line: $(grep ready "$tmp/airlock.err")"
echo "airlock DNS on 127.0.0.1:$port"

D=(dig @127.0.0.1 -p "$port" +time=2 +tries=1)
K=(kdig @127.0.0.1 -p "$port" +time=2 +retry=0)

expect_eq() { # name got want
    [ "$2" == "$3" ] || fail "$1: got '$2', want '$3'"
    echo "ok - $1"
}

expect_eq "dig UDP A" "$("${D[@]}" +short api.github.com A)" "$PROXY_IP"
expect_eq "dig TCP A" "$("${D[@]}" +tcp +short tcp.example.com A)" "$PROXY_IP"

out=$("${D[@]}" evil.com AAAA)
echo "$out" | grep -q 'status: NOERROR' || fail "AAAA status: $out"
echo "$out" | grep -q 'ANSWER: 0,' || fail "AAAA must be NODATA: $out"
echo "ok - dig AAAA is NODATA with NOERROR"

out=$("${D[@]}" +tcp example.org MX)
echo "$out" | grep -q 'status: NOERROR' && echo "$out" | grep -q 'ANSWER: 0,' \
    || fail "TCP MX must be NODATA: $out"
echo "ok - dig TCP MX is NODATA"

out=$("${D[@]}" +tcp +keepopen +short one.example A two.example A three.example A)
expect_eq "dig TCP +keepopen, 3 queries" "$(echo "$out" | tr '\n' ' ')" \
    "$PROXY_IP $PROXY_IP $PROXY_IP "

out=$("${D[@]}" +edns=0 +nsid edns.example A)
echo "$out" | grep -q 'EDNS: version: 0' || fail "EDNS query without OPT in the answer: $out"
echo "$out" | grep -q "$PROXY_IP" || fail "EDNS answer: $out"
echo "ok - EDNS query answered with OPT"

out=$("${D[@]}" +edns=1 +noednsnegotiation badvers.example A)
echo "$out" | grep -q 'status: BADVERS' || fail "EDNS version 1 must give BADVERS: $out"
echo "ok - EDNS version 1 gives BADVERS"

expect_eq "kdig UDP A" "$("${K[@]}" +short kdig.example A)" "$PROXY_IP"
expect_eq "kdig TCP A" "$("${K[@]}" +tcp +short kdig-tcp.example A)" "$PROXY_IP"
out=$("${K[@]}" -t HTTPS svc.example)
echo "$out" | grep -q 'status: NOERROR' || fail "kdig HTTPS: $out"
echo "ok - kdig HTTPS is NOERROR"

expect_eq "escaped label" "$("${D[@]}" +short 'a\032b.example' A)" "$PROXY_IP"

for line in "DNS A api.github.com -> $PROXY_IP" "DNS AAAA evil.com -> NODATA" \
    "DNS A tcp.example.com -> $PROXY_IP" "DNS MX example.org -> NODATA" \
    "DNS A three.example -> $PROXY_IP" "DNS HTTPS svc.example -> NODATA" \
    "DNS A badvers.example -> BADVERS" 'DNS A a\032b.example -> '"$PROXY_IP"; do
    grep -qxF "$line" "$log" || fail "log lacks '$line':
$(cat "$log")"
done
echo "ok - log lines"

# ---------------------------------------------------------------- part 2: glibc and musl
cc -O1 -o "$tmp/probe_glibc" "$AIRLOCK_SRC/tests/integration/dns_probe.c" \
    || fail "cannot build the glibc probe"
if command -v musl-gcc >/dev/null; then
    musl-gcc -static -O1 -o "$tmp/probe_musl" "$AIRLOCK_SRC/tests/integration/dns_probe.c" \
        || fail "cannot build the musl probe"
else
    t_skip package "part 1 passed; part 2 needs musl-gcc (apt-get install musl-tools)"
fi
if ! unshare --net --mount true 2>"$tmp/unshare.err"; then
    t_skip netns "part 1 passed; part 2 (glibc/musl getaddrinfo against port 53) needs \
'unshare --net --mount' (root): $(cat "$tmp/unshare.err")"
fi

printf 'nameserver 127.0.0.1\noptions timeout:2 attempts:1\n' >"$tmp/resolv.conf"
printf 'hosts: files dns\n' >"$tmp/nsswitch.conf"
printf '127.0.0.1 localhost\n' >"$tmp/hosts"
cat >"$tmp/inner.sh" <<'EOF'
# Runs inside the new namespaces: its own loopback, its own view of /etc.
set -u
tmp=$1 AIRLOCK=$2 PROXY_IP=$3
apid=
trap '[ -n "$apid" ] && kill "$apid" 2>/dev/null && wait "$apid" 2>/dev/null' EXIT
ip link set lo up || exit 3
mount --bind "$tmp/resolv.conf" /etc/resolv.conf || exit 3
mount --bind "$tmp/nsswitch.conf" /etc/nsswitch.conf || exit 3
mount --bind "$tmp/hosts" /etc/hosts || exit 3
"$AIRLOCK" run --proxy-ip "$PROXY_IP" --upstream-dns 127.0.0.1:9 --listen-dns 127.0.0.1:53 \
    --listen-http 127.0.0.1:0 --listen-https 127.0.0.1:0 --allowlist "$tmp/allowlist.json" \
    --log "$tmp/ns.log" --log-create --confdir "$tmp/ns-confdir" 2>"$tmp/ns-airlock.err" &
apid=$!
for ((i = 0; i < 200; i++)); do
    grep -q ready "$tmp/ns-airlock.err" 2>/dev/null && break
    sleep 0.05
done
grep -q ready "$tmp/ns-airlock.err" || exit 4
rc=0
for probe in probe_glibc probe_musl; do
    out=$("$tmp/$probe" "agent-$probe.example.com" 2>&1)
    echo "$probe: $out"
    [ "$out" == "$PROXY_IP" ] || rc=5
done
exit $rc
EOF
unshare --net --mount bash "$tmp/inner.sh" "$tmp" "$AIRLOCK" "$PROXY_IP" >"$tmp/inner.out" 2>&1
rc=$?
cat "$tmp/inner.out"
case $rc in
0) ;;
3) t_skip netns "part 1 passed; part 2 could not set up the namespace: $(cat "$tmp/inner.out")" ;;
4) fail "airlock did not start on 127.0.0.1:53 in the namespace: $(cat "$tmp/ns-airlock.err")" ;;
*) fail "glibc/musl getaddrinfo did not return only $PROXY_IP" ;;
esac
for probe in probe_glibc probe_musl; do
    grep -qxF "DNS A agent-$probe.example.com -> $PROXY_IP" "$tmp/ns.log" \
        || fail "namespace log lacks the $probe A query: $(cat "$tmp/ns.log")"
    grep -qxF "DNS AAAA agent-$probe.example.com -> NODATA" "$tmp/ns.log" \
        || fail "namespace log lacks the $probe AAAA query: $(cat "$tmp/ns.log")"
done
echo "ok - glibc and musl getaddrinfo(AF_UNSPEC) get $PROXY_IP (AAAA answered NODATA)"
echo "PASS"
