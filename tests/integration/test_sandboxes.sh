#!/bin/bash
# Issue 20 part 1: one airlock, many sandboxes, isolated by source address. Four network
# namespaces stand for sandboxes on one bridge (10.77.0.1 is airlock): A (10.77.1.2) and B
# (10.77.2.2) each have their own allowlist, credentials and log; C (10.77.3.2) is in no
# sandbox; D (10.77.4.2) gets a sandbox by a reload. Nothing the client says (Host, SNI,
# credentials) moves a request into another sandbox: the source decides. A removed sandbox's
# open connections (HTTP/1 idle, in flight, a passthrough tunnel, HTTP/2) take no new request,
# and neither does a connection whose source a reload moved out of its sandbox. Sources compare
# in one address space: `::/0` overlaps an IPv4 sandbox.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
NS=(al-sa-$$ al-sb-$$ al-sc-$$ al-sd-$$)
cleanup_ns() { local n; for n in "${NS[@]}"; do ip netns del "$n" 2>/dev/null; done; }
trap 't_cleanup; cleanup_ns' EXIT
ip link add br0 type bridge && ip link set br0 up && ip addr add 10.77.0.1/16 dev br0 ||
    t_skip netns "cannot create a bridge"
for i in 0 1 2 3; do
    n=${NS[$i]}
    ip netns add "$n" || t_skip netns "ip netns add failed"
    ip link add "v$i" type veth peer name eth0 netns "$n"
    ip link set "v$i" master br0 && ip link set "v$i" up
    ip -n "$n" addr add "10.77.$((i + 1)).2/16" dev eth0
    ip -n "$n" link set eth0 up && ip -n "$n" link set lo up
    printf 'nameserver 10.77.0.1\noptions timeout:1 attempts:1\n' > "$T_DIR/resolv-$i.conf"
done
in_ns() { # in_ns INDEX command...: runs in that sandbox's namespace, DNS pointing at airlock
    local i=$1; shift
    ip netns exec "${NS[$i]}" unshare --mount sh -c \
        'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$T_DIR/resolv-$i.conf" "$@"
}

t_start_resolver || exit 1
t_upstream_ca
t_upstream_cert "DNS:shared.test,DNS:pass.test" "$T_DIR/up"
# /slow/NAME waits (in slow.py) until the test creates $T_DIR/release: a request in flight
cat > "$T_DIR/slow.py" <<'PY'
import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        open(os.path.join(sys.argv[1], "arrived" + self.path.replace("/", ".")), "w").close()
        while not os.path.exists(os.path.join(sys.argv[1], "release")):
            time.sleep(0.05)
        b = b"slow done\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
ThreadingHTTPServer(("127.0.0.2", 8099), H).serve_forever()
PY
"$PY" "$T_DIR/slow.py" "$T_DIR" & T_PIDS+=($!)
t_start_nginx "listen 127.0.0.2:443 ssl; ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;
    location /hdr { return 200 \"auth=\$http_authorization conn=\$connection\n\"; }
    location /slow/ { proxy_pass http://127.0.0.2:8099; proxy_read_timeout 120s; }"
t_wait_port 127.0.0.2 8099

SB=$T_DIR/sandboxes
mkdir -p "$SB/a" "$SB/b"
printf 'source 10.77.1.0/24\n' > "$SB/a/sandbox.conf"
printf 'domains: ["a.test", "shared.test", "budg.test"]\nbudgets:\n  - host: budg.test\n    requests: 2\n' \
    > "$SB/a/network-allowlist.yaml"
printf '{"sur-aaaaaaaaaaaaaaaa": {"value": "REAL-A-0123456789", "scopes": ["shared.test"], "headers": ["Authorization"], "allow_plain_http": true}}\n' \
    > "$SB/a/replacements.json"
printf 'source 10.77.2.0/24   # sandbox B\nmax-connections 64\n' > "$SB/b/sandbox.conf"
printf 'domains: ["b.test", "shared.test", "budg.test"]\nbudgets:\n  - host: budg.test\n    requests: 2\n' \
    > "$SB/b/network-allowlist.yaml"
printf '{"sur-bbbbbbbbbbbbbbbb": {"value": "REAL-B-0123456789", "scopes": ["shared.test"], "headers": ["Authorization"], "allow_plain_http": true}}\n' \
    > "$SB/b/replacements.json"
: > "$T_DIR/host.log"
# The upstream echoes what it got: answers are not scrubbed here (--scrub-responses off), so
# the echo shows the real value that went upstream; test_scrub.sh covers scrubbing.
"$AIRLOCK" run --proxy-ip 10.77.0.1 --upstream-dns 127.0.0.53 --sandboxes "$SB" --scrub-responses off \
    --log "$T_DIR/host.log" --confdir "$T_DIR/confdir" --listen-dns 10.77.0.1:53 \
    --listen-http 10.77.0.1:80 --listen-https 10.77.0.1:443 --listen-proxy 10.77.0.1:3128 --allow-upstream-cidr 127.0.0.2/32 --upstream-ca "$T_DIR/upca.pem" \
    2> "$T_DIR/airlock.err" &
AIRLOCK_PID=$!
T_PIDS+=($AIRLOCK_PID)
until_ok 'grep -q "ready (proxy" "$T_DIR/airlock.err"' 20 || { cat "$T_DIR/airlock.err"; exit 1; }
CA=$T_DIR/confdir/mitmproxy-ca-cert.pem
get() { # get INDEX URL [curl args]: status and body, one line
    local i=$1 u=$2; shift 2
    in_ns "$i" curl -s -m 5 --cacert "$CA" -w ' %{http_code}' "$@" "$u" 2>/dev/null | tr '\n' ' '
}
log_a=$SB/a/network-sandbox.log log_b=$SB/b/network-sandbox.log

# DNS: a sandbox's query is answered with airlock's address, in its own log; C gets nothing
t_eq "DNS from sandbox A: airlock's address" 10.77.0.1 "$(in_ns 0 dig +short +time=1 +tries=1 a.test)"
t_eq "DNS from sandbox B: airlock's address" 10.77.0.1 "$(in_ns 1 dig +short +time=1 +tries=1 b.test)"
out=$(in_ns 2 dig +time=1 +tries=1 c.test 2>&1)
t_contains "DNS from C (in no sandbox): no answer" "$out" "timed out"
until_ok 'grep -q "^DNS A a.test -> 10.77.0.1" "$log_a"' 10
t_check "A's query in A's log" grep -q '^DNS A a.test -> 10.77.0.1' "$log_a"
t_check "... not in B's" test "$(grep -c a.test "$log_b")" -eq 0
t_logged_in() { until_ok "grep -q -- \"$2\" \"$1\"" 10; }
t_logged_in "$T_DIR/host.log" '^BLOCKED DNS - -> no answer (source 10.77.3.2 is in no sandbox)$'
t_check "C's query: one line in the host log" test $? -eq 0

# each sandbox under its own policy
t_contains "A to a.test: allowed" "$(get 0 http://a.test/echo)" "host=a.test  200"
t_contains "A to b.test: 403 (B's host)" "$(get 0 http://b.test/echo)" " 403"
t_contains "B to b.test: allowed" "$(get 1 http://b.test/echo)" "host=b.test  200"
t_contains "B to a.test: 403 (A's host)" "$(get 1 http://a.test/echo)" " 403"
t_contains "B with Host: a.test: still B's policy" "$(get 1 http://b.test/echo -H 'Host: a.test')" " 403"
t_contains "B over TLS with SNI a.test: still B's policy" "$(get 1 https://a.test/echo)" " 403"
out=$(in_ns 1 curl -s -m 5 -o /dev/null -w '%{http_connect}' -p -x http://10.77.0.1:3128 http://a.test/echo 2>&1)
t_eq "B's CONNECT to a.test through the explicit proxy: 403 (B's policy)" 403 "$out"
out=$(in_ns 0 curl -s -m 5 -w ' %{http_code}' -x http://10.77.0.1:3128 http://a.test/echo 2>&1)
t_contains "A through the explicit proxy to a.test: allowed" "$out" "host=a.test
 200"
out=$(in_ns 1 curl -s -m 5 -w ' %{http_code}' -x http://10.77.0.1:3128 http://a.test/echo 2>&1)
t_contains "B through the explicit proxy to a.test: 403" "$out" " 403"
out=$(in_ns 2 curl -s -m 5 -o /dev/null -w '%{http_code}' http://10.77.0.1/echo -H 'Host: a.test')
t_eq "C (in no sandbox): the connection is closed" 000 "$out"
t_logged_in "$T_DIR/host.log" '^BLOCKED - - -> closed (source 10.77.3.2 is in no sandbox)$'
t_check "... one line in the host log" test $? -eq 0
until_ok 'grep -q "^BLOCKED GET http://a.test/echo -> 403" "$log_b"' 10
until_ok 'grep -q "^allowed GET http://b.test/echo -> 200" "$log_b"' 10
t_check "B's lines in B's log" grep -q '^allowed GET http://b.test/echo -> 200$' "$log_b"
t_check "... and never in A's" test "$(grep -c '^allowed GET http://b\.test/echo' "$log_a")" -eq 0
t_check "A's lines never in B's log" test "$(grep -c 'GET http://a\.test/echo -> 200' "$log_b")" -eq 0

# credentials: each sandbox swaps its own surrogate only
out=$(get 0 http://shared.test/hdr -H 'Authorization: sur-aaaaaaaaaaaaaaaa')
t_contains "A's surrogate from A: A's real value" "$out" "auth=REAL-A-0123456789"
out=$(get 1 http://shared.test/hdr -H 'Authorization: sur-aaaaaaaaaaaaaaaa')
case "$out" in
*REAL-A*) t_fail "A's surrogate from B: swapped with A's real value: $out" ;;
*" 200"*) t_ok "A's surrogate from B: never A's real value ($out)" ;;
*) t_fail "A's surrogate from B: $out" ;;
esac
out=$(get 1 http://shared.test/hdr -H 'Authorization: sur-bbbbbbbbbbbbbbbb')
t_contains "B's surrogate from B: B's real value" "$out" "auth=REAL-B-0123456789"
# the upstream connection that carried A's credential is never reused for B
ca=$(get 0 http://shared.test/hdr -H 'Authorization: sur-aaaaaaaaaaaaaaaa' | sed 's/.*conn=\([0-9]*\).*/\1/')
cb=$(get 1 http://shared.test/hdr | sed 's/.*conn=\([0-9]*\).*/\1/')
ca2=$(get 0 http://shared.test/hdr | sed 's/.*conn=\([0-9]*\).*/\1/')
# the loops airlock runs: AIRLOCK_WORKERS, else its default (auto: one per CPU it may use)
loops=${AIRLOCK_WORKERS:-auto}
[ "$loops" = auto ] && loops=$(nproc)
if [ "$loops" = 1 ]; then
    t_check "A's pooled upstream connection is A's again ($ca, $ca2)" test "$ca" = "$ca2"
    t_check "... never B's ($cb)" test "$cb" != "$ca"
else # each loop has its own pools: A's requests may ride either loop's, never one of B's
    as="$ca $ca2" bs="$cb"
    for i in 1 2 3 4 5 6; do
        as="$as $(get 0 http://shared.test/hdr | sed 's/.*conn=\([0-9]*\).*/\1/')"
        bs="$bs $(get 1 http://shared.test/hdr | sed 's/.*conn=\([0-9]*\).*/\1/')"
    done
    both=$(comm -12 <(tr ' ' '\n' <<< "$as" | sort -u) <(tr ' ' '\n' <<< "$bs" | sort -u))
    t_eq "A's upstream connections ($as) and B's ($bs) are never the same" "" "$both"
    t_check "... at most one per loop each" test "$(tr ' ' '\n' <<< "$as" | sort -u | wc -l)" \
        -le "$loops"
fi

# egress budgets count per sandbox: the same budget in A and B has two counters
get 0 http://budg.test/echo > /dev/null
get 0 http://budg.test/echo > /dev/null
t_contains "A's third request under its 2-request budget: 429" "$(get 0 http://budg.test/echo)" " 429"
t_contains "... B's first under the same budget: allowed" "$(get 1 http://budg.test/echo)" " 200"

# reloads: a broken file keeps that sandbox's policy and touches no other; a new directory is
# a new sandbox; a removed one takes no new connection
printf 'domains: [unclosed\n' > "$SB/a/network-allowlist.yaml"
printf 'domains: ["b.test", "shared.test", "b2.test"]\n' > "$SB/b/network-allowlist.yaml"
mkdir -p "$SB/d"
printf 'source 10.77.4.0/24\n' > "$SB/d/sandbox.conf"
printf 'domains: ["d.test"]\n' > "$SB/d/network-allowlist.yaml"
n=$(wc -l < "$T_DIR/airlock.err")
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 2 ]' 10
t_contains "reload: A's broken allowlist is named" "$(tail -n +$((n + 1)) "$T_DIR/airlock.err")" "sandbox a keeps its previous policy"
t_contains "... A keeps its old policy" "$(get 0 http://a.test/echo)" " 200"
t_contains "... B took its new one" "$(get 1 http://b2.test/echo)" " 200"
t_contains "... D is a new sandbox" "$(get 3 http://d.test/echo)" " 200"
t_logged_in "$SB/d/network-sandbox.log" '^allowed GET http://d.test/echo -> 200$'
t_check "... with its own log" test $? -eq 0
rm -rf "$SB/b"
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 3 ]' 10
out=$(in_ns 1 curl -s -m 5 -o /dev/null -w '%{http_code}' http://b.test/echo)
t_eq "B removed: its new connections are closed" 000 "$out"
t_contains "... A goes on" "$(get 0 http://a.test/echo)" " 200"

# A removed sandbox's open connections: an idle HTTP/1 one and a passthrough tunnel close at
# once, one with a request in flight answers it and closes, HTTP/2 gets a GOAWAY (its stream in
# flight finishes, a new one is refused); A's range goes to a new sandbox E, whose credential
# the agent's next connection gets. D's range moves away: D's open connection closes too.
printf 'domains: ["a.test", "shared.test"]\nurl_prefixes:\n  - host: pass.test\n    tls: passthrough\n' \
    > "$SB/a/network-allowlist.yaml"
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 4 ]' 10
t_contains "A's allowlist mended" "$(get 0 http://a.test/echo)" " 200"
cat > "$T_DIR/conns.py" <<'PY'
import os, socket, ssl, sys, time
mode, tdir = sys.argv[1], sys.argv[2]
SUR = "Authorization: sur-aaaaaaaaaaaaaaaa\r\n"
def req(s, path, host, extra=""):
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode())
def resp(s):  # one response (Content-Length) as "STATUS body", or "none" when s closed first
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return "none"
            buf += d
        head, _, body = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        while len(body) < n:
            d = s.recv(65536)
            if not d:
                break
            body += d
    except (OSError, ssl.SSLError):
        return "none"
    return head.split(b" ")[1].decode() + " " + body.decode(errors="replace").strip()
def closed(s):  # the peer closes s within 5 s, while we send nothing
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except (OSError, ssl.SSLError):
        return True
def conn(port=80):
    return socket.create_connection(("10.77.0.1", port), timeout=10)
def wait_go():
    print("ready", flush=True)
    while not os.path.exists(os.path.join(tdir, "go")):
        time.sleep(0.05)
if mode == "idle":  # D: one request, then idle
    idle = conn()
    req(idle, "/echo", "d.test")
    print("idle1", resp(idle))
    wait_go()
    if closed(idle):
        print("idle closed")
    else:
        req(idle, "/echo", "d.test")
        print("idle open; idle2", resp(idle))
    sys.exit(0)
idle = conn()
req(idle, "/hdr", "shared.test", SUR)
print("idle1", resp(idle))
busy = conn()
req(busy, "/slow/h1", "shared.test", SUR)
raw = conn(3128)
raw.sendall(b"CONNECT pass.test:443 HTTP/1.1\r\nHost: pass.test:443\r\n\r\n")
print("connect", resp(raw))
tun = ssl.create_default_context(cafile=os.path.join(tdir, "upca.pem")).wrap_socket(
    raw, server_hostname="pass.test")
req(tun, "/echo", "pass.test")
print("tunnel1", resp(tun))
wait_go()
if closed(idle):
    print("idle closed")
else:
    req(idle, "/hdr", "shared.test", SUR)
    print("idle open; idle2", resp(idle))
print("tunnel", "closed" if closed(tun) else "open")
print("busy1", resp(busy))
if closed(busy):
    print("busy closed")
else:
    req(busy, "/hdr", "shared.test", SUR)
    print("busy open; busy2", resp(busy))
new = conn()
req(new, "/hdr", "shared.test", SUR)
print("new", resp(new))
PY
cat > "$T_DIR/conns_h2.js" <<'JS'
const http2 = require('http2'), fs = require('fs');
const log = (...a) => console.log(...a);
const s = http2.connect('https://shared.test', {ca: fs.readFileSync(process.argv[2])});
s.on('goaway', () => log('h2 goaway'));
s.on('close', () => log('h2 closed'));
s.on('error', (e) => log('h2 error', e.code));
function get(path, cb) {
    let r;
    try {
        r = s.request({':path': path, 'authorization': 'sur-aaaaaaaaaaaaaaaa'});
    } catch (e) {
        return cb(e);
    }
    let body = '', st = 0;
    r.on('response', (h) => { st = h[':status']; });
    r.on('data', (d) => { body += d; });
    r.on('end', () => cb(null, st + ' ' + body.trim()));
    r.on('error', (e) => cb(e));
    r.end();
}
get('/hdr', (e, res) => {
    log('h2 req1', e ? 'error ' + e.code : res);
    get('/slow/h2', (e, res) => {
        log('h2 slow', e ? 'error ' + e.code : res);
        setImmediate(() => get('/hdr', (e, res) => {
            log('h2 req3', e ? 'refused ' + e.code : res);
            s.close();
        }));
    });
});
JS
in_ns 0 timeout 60 "$PY" "$T_DIR/conns.py" full "$T_DIR" > "$T_DIR/conns.out" 2>&1 & cpid=$!
in_ns 0 timeout 60 node "$T_DIR/conns_h2.js" "$CA" > "$T_DIR/conns_h2.out" 2>&1 & npid=$!
in_ns 3 timeout 60 "$PY" "$T_DIR/conns.py" idle "$T_DIR" > "$T_DIR/conns_d.out" 2>&1 & dpid=$!
T_PIDS+=($cpid $npid $dpid)
until_ok 'grep -q ready "$T_DIR/conns.out" && grep -q ready "$T_DIR/conns_d.out" &&
    [ -e "$T_DIR/arrived.slow.h1" ] && [ -e "$T_DIR/arrived.slow.h2" ]' 20 ||
    t_fail "the clients did not get ready: $(cat "$T_DIR"/conns*.out)"
# a reload that moves no source leaves every connection alone
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 5 ]' 10
t_check "a reload moving no source closes nothing" \
    test "$(grep -c "no longer belong" "$T_DIR/airlock.err")" -eq 0
mv "$SB/a" "$T_DIR/a-removed" # out of DIR; its log stays readable here
mkdir -p "$SB/e"
printf 'source 10.77.1.0/24\n' > "$SB/e/sandbox.conf"
printf 'domains: ["shared.test"]\n' > "$SB/e/network-allowlist.yaml"
printf '{"sur-aaaaaaaaaaaaaaaa": {"value": "REAL-E-0123456789", "scopes": ["shared.test"], "headers": ["Authorization"], "allow_plain_http": true}}\n' \
    > "$SB/e/replacements.json"
printf 'source 10.77.5.0/24\n' > "$SB/d/sandbox.conf"
kill -HUP "$AIRLOCK_PID"
until_ok '[ "$(grep -c "sandboxes .* in force" "$T_DIR/airlock.err")" -ge 6 ]' 10
touch "$T_DIR/go" "$T_DIR/release"
wait $cpid $npid $dpid
out=$(cat "$T_DIR/conns.out") h2=$(cat "$T_DIR/conns_h2.out") d=$(cat "$T_DIR/conns_d.out")
t_contains "before: A's keep-alive connection swaps A's credential" "$out" "idle1 200 auth=REAL-A-0123456789"
t_contains "before: a passthrough tunnel of A" "$out" "tunnel1 200 method=GET"
t_contains "A removed: its idle connection is closed at once" "$out" "idle closed"
t_contains "... its passthrough tunnel is closed" "$out" "tunnel closed"
t_contains "... its request in flight is answered" "$out" "busy1 200 slow done"
t_contains "... then that connection closes" "$out" "busy closed"
t_contains "... A's agent's next connection is in E, with E's credential" "$out" "new 200 auth=REAL-E-0123456789"
t_contains "HTTP/2: before, A's credential" "$h2" "h2 req1 200 auth=REAL-A-0123456789"
t_contains "... A removed: a GOAWAY" "$h2" "h2 goaway"
t_contains "... its stream in flight finishes" "$h2" "h2 slow 200 slow done"
t_contains "... a new stream is refused" "$h2" "h2 req3 refused"
t_contains "... and the connection closes" "$h2" "h2 closed"
t_contains "D's range moved: its idle connection is closed" "$d" "idle closed"
t_check "stderr counts the connections that left" \
    grep -q "open connections no longer belong to their sandbox" "$T_DIR/airlock.err"
log_a=$T_DIR/a-removed/network-sandbox.log
t_logged_in "$log_a" '^BLOCKED - - -> closed (sandbox a removed; connection from 10.77.1.2 closed)$'
t_check "A's log: its connections closed at once" test $? -eq 0
t_logged_in "$log_a" '^BLOCKED - - -> closed (sandbox a removed; connection from 10.77.1.2 closes after its requests in flight)$'
t_check "A's log: its connections with a request in flight" test $? -eq 0
t_logged_in "$SB/d/network-sandbox.log" '^BLOCKED - - -> closed (source 10.77.4.2 left sandbox d; connection closed)$'
t_check "D's log names its connection" test $? -eq 0

# sources compare in one address space: `::/0` overlaps an IPv4 sandbox (a dual-stack listener
# would hand it that sandbox's agents), and airlock refuses to start
SB2=$T_DIR/sandboxes2
mkdir -p "$SB2/v4" "$SB2/v6"
printf 'source 10.77.9.0/24\n' > "$SB2/v4/sandbox.conf"
printf 'source ::/0\n' > "$SB2/v6/sandbox.conf"
printf 'domains: ["a.test"]\n' | tee "$SB2/v4/network-allowlist.yaml" > "$SB2/v6/network-allowlist.yaml"
timeout 10 "$AIRLOCK" run --proxy-ip 10.77.0.1 --upstream-dns 127.0.0.53 --sandboxes "$SB2" \
    --log "$T_DIR/host2.log" --confdir "$T_DIR/confdir" --listen-dns off --listen-https off \
    --listen-http '[::]:8080' 2> "$T_DIR/airlock2.err"
rc=$?
t_check "::/0 next to 10.77.9.0/24: airlock does not start (rc $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
t_contains "... stderr says why" "$(cat "$T_DIR/airlock2.err")" "sandbox v6: its sources overlap those of sandbox v4"
t_done
