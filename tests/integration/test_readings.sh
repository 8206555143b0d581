#!/bin/bash
# The readings of a path (docs/allowlist.md, "Readings"): upstreams read one path several ways
# (nginx merges slashes, Tomcat and Spring drop ";parameters", every server removes "."
# segments). A request is allowed only if every reading is; a block entry applies if it matches
# any; a '#' in a request target is refused (400), over HTTP/1.1 and HTTP/2; a "." segment
# alone is allowed (apt's flat repositories ask for /./InRelease: a real apt-get runs here).
#
# Addresses in the test's own namespace: airlock 127.0.0.1 (:80, :443, explicit proxy :3128);
# nginx on 127.0.0.2:80 for every *.test name, logging each request line it receives.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [api.test, repo.test, gql.test]
block:
  - host: api.test
    path: "/admin/*"
url_prefixes:
  - host: pub.test
    path: "/pub/*"
  - host: gql.test
    path: /graphql
    methods: [POST]
    graphql:
      queries: [viewer]
YAML
t_start_resolver || exit 1
mkdir -p "$T_DIR/www/pub" "$T_DIR/www/admin"
echo public > "$T_DIR/www/pub/a"
echo secret > "$T_DIR/www/admin/x"
t_start_nginx "location /admin/ { return 200 \"admin reached\\n\"; }" || exit 1
t_start_airlock "$T_DIR/allow.yaml" --listen-proxy 127.0.0.1:3128 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
reached() { grep -c "$1" "$T_DIR/nginx/access.log" || true; }
get() { # get HOST PATH: the status airlock answers (--path-as-is: curl sends the path unchanged)
    curl -s -o /dev/null -w '%{http_code}' --path-as-is --resolve "$1:80:127.0.0.1" \
        "http://$1$2"
}

# ---- a block entry applies if any reading matches ----
t_eq "control: /admin/x is blocked" 403 "$(get api.test /admin/x)"
for p in '//admin/x' '///admin//x' '/admin;x/y' '/admin%3bx/y' '/./admin/x' '/%2fadmin/x' \
    '/%2e/admin/x' '/admin/;p/x'; do
    t_eq "block /admin/*: $p is blocked (a server may read it as /admin/...)" 403 \
        "$(get api.test "$p")"
done
t_logged "the log line names the request as sent" \
    '^BLOCKED GET http://api\.test//admin/x -> 403$'
t_eq "nothing reached /admin on the upstream" 0 "$(reached ' /admin\| //admin\| /\./admin\| /%2')"
t_eq "control: /adminx is allowed" 404 "$(get api.test /adminx)"
t_eq "control: /x/admin/y is allowed" 404 "$(get api.test /x/admin/y)"

# ---- allowed only if every reading is ----
t_eq "/pub/* allows /pub//a (merged: /pub/a)" 200 "$(get pub.test /pub//a)"
t_eq "/pub/* allows /pub/./a" 200 "$(get pub.test /pub/./a)"
t_eq "/pub/* refuses //pub/a (as sent it is not under /pub/)" 403 "$(get pub.test //pub/a)"
t_eq "/pub/* refuses /pub;x/a (as sent it is not under /pub/)" 403 "$(get pub.test '/pub;x/a')"
t_check "the upstream got /pub//a as sent" grep -q 'GET /pub//a HTTP' "$T_DIR/nginx/access.log"
t_eq ".. stays refused" 403 "$(get api.test /pub/../admin/x)"

# ---- a feature's path applies if any reading matches, in any case, whatever entry allowed it
gql() { # gql PATH BODY: the status (gql.test is open to every path by a domains entry too)
    curl -s -o /dev/null -w '%{http_code}' --path-as-is --resolve gql.test:80:127.0.0.1 \
        -H 'Content-Type: application/json' --data-binary "$2" "http://gql.test$1"
}
MUT='{"query": "mutation { deleteRepository(id: 1) { id } }"}'
t_eq "graphql entry: a mutation to /graphql is refused" 403 "$(gql /graphql "$MUT")"
t_eq "... to //graphql too (allowed by the domains entry as sent)" 403 "$(gql //graphql "$MUT")"
t_eq "... to /graphql;x too" 403 "$(gql '/graphql;x' "$MUT")"
t_eq "... to /GraphQL too" 403 "$(gql /GraphQL "$MUT")"
t_eq "... a GET /graphql?query=mutation... (the entry is POST-only; domains allow GET)" 403 \
    "$(curl -s -o /dev/null -w '%{http_code}' --resolve gql.test:80:127.0.0.1 \
        'http://gql.test/graphql?query=mutation%7BdeleteRepository(id:1)%7Bid%7D%7D')"
t_check "control: an allowed query is not refused" \
    test "$(gql //graphql '{"query": "{ viewer { login } }"}')" != 403
t_eq "no mutation reached the upstream" 0 "$(reached 'graphql?query\|GraphQL')"

# ---- '#' in a request target: 400, over HTTP/1.1 (origin and absolute form) and HTTP/2 ----
raw1() { # raw1 PORT REQUEST-LINE HOST: the status line airlock answers
    "$PY" - "$@" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(f"{sys.argv[2]}\r\nHost: {sys.argv[3]}\r\nConnection: close\r\n\r\n".encode())
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.split(b"\r\n", 1)[0].decode(errors="replace"))
PY
}
n0=$(reached 'admin\|graphql')
t_contains "HTTP/1.1 /admin/x#frag: 400" "$(raw1 80 'GET /pub/a#/../admin/x HTTP/1.1' api.test)" \
    "HTTP/1.1 400"
t_contains "HTTP/1.1 /graphql#x: 400" "$(raw1 80 'POST /graphql#x HTTP/1.1' api.test)" \
    "HTTP/1.1 400"
t_contains "explicit proxy, absolute form with a fragment: 400" \
    "$(raw1 3128 'GET http://api.test/a#b HTTP/1.1' api.test)" "HTTP/1.1 400"
if "$PY" -c 'import hpack' 2> /dev/null; then
    out=$(timeout 60 "$PY" "$HERE/h2_raw.py" 127.0.0.1 443 api.test "$CA" get api.test \
        '/graphql#x' 2>&1)
    t_contains "HTTP/2 :path /graphql#x: refused (400)" "$out" "sid=1 status=400"
else
    t_fail "python3-hpack (python3-h2) is not installed"
fi
t_eq "no fragment request reached the upstream" "$n0" "$(reached 'admin\|graphql')"

# ---- a "." segment alone: a real apt-get on a flat repository ----
mkdir -p "$T_DIR/www/repo"
: > "$T_DIR/www/Packages"
sz=$(stat -c %s "$T_DIR/www/Packages")
sum=$(sha256sum "$T_DIR/www/Packages" | cut -d' ' -f1)
printf 'Origin: airlock-test\nLabel: airlock-test\nSuite: flat\nCodename: flat\nDate: %s\nSHA256:\n %s %s Packages\n' \
    "$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')" "$sum" "$sz" > "$T_DIR/www/Release"
mkdir -p "$T_DIR/apt/lists/partial" "$T_DIR/apt/cache/archives/partial" "$T_DIR/apt/etc"
echo "deb [trusted=yes] http://repo.test/ ./" > "$T_DIR/apt/etc/sources.list"
: > "$T_DIR/apt/etc/status"
if timeout 60 apt-get update -q \
    -o Dir::Etc::SourceList="$T_DIR/apt/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$T_DIR/apt/lists" -o Dir::Cache="$T_DIR/apt/cache" \
    -o Dir::State::status="$T_DIR/apt/etc/status" -o APT::Sandbox::User=root \
    -o Acquire::http::Proxy=http://127.0.0.1:3128 -o Acquire::Languages=none \
    > "$T_DIR/apt.out" 2>&1; then
    t_ok "apt-get update on a flat repository (deb http://repo.test/ ./) through airlock"
else
    t_fail "apt-get update on a flat repository failed: $(tail -3 "$T_DIR/apt.out" | tr '\n' ' ')"
fi
t_logged "apt asked for /./InRelease and was let through" \
    '^allowed GET http://repo\.test/\./InRelease -> 404$'
t_logged "... and got /./Release" '^allowed GET http://repo\.test/\./Release -> 200$'

t_done
