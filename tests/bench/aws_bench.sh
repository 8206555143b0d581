#!/bin/bash
# Cost of AWS re-signing per request: small PUTs over HTTPS through one airlock, keep-alive,
# wrk on one core and airlock on the other. Each signed variant is compared, in the same run,
# with the same PUT (same path, headers and body) sent WITHOUT credentials.
#
#   tests/bench/aws_bench.sh
#
# Variants (surrogate credentials, re-signed by airlock on every request):
#   v4        SigV4, x-amz-content-sha256 = hex hash (header form, body streamed through)
#   v4-defer  SigV4 without x-amz-content-sha256 (body buffered and hashed, then signed)
#   v4a       SigV4A (ECDSA P-256 signature per request; key pair from the addon's cache)
# The signed request is made once per wrk run by botocore/awscrt (aws_client.py helpers) and
# replayed: airlock has no surrogate secret and never checks the client's signature, so every
# replay is re-signed in full. X-Amz-Date is taken fresh for every run (no skew warnings).
#
# Environment: RUNS=3 (medians), DURATION=10, WARMUP=2 (seconds), CONNS=16, BODY=1024 (bytes
# per PUT), PROXY_CPU=0, LOAD_CPU=1, AIRLOCK=binary (default build-bench/airlock),
# KEEP_TEST_DIR=1. Prints figures; never fails on a timing (it fails if any reply is not 200).
# CONNS stays at 16 because airlock keeps at most PX_POOL_PER_KEY_MAX (16) idle upstream
# connections per host: with more client connections than that, upstream connections are
# closed and reopened all the time (a TLS handshake every few requests) and the figures
# measure that churn instead of signing. The script prints the upstream connections opened
# during each measured run so that this stays visible.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
: "${AIRLOCK:=$ROOT/build-bench/airlock}"
export AIRLOCK_WORKERS=${AIRLOCK_WORKERS:-1} # one event loop unless asked (the default is one per CPU)
export AIRLOCK
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-16}
BODY=${BODY:-1024}
PROXY_CPU=${PROXY_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}

if [ -z "${AIRLOCK_IN_NETNS:-}" ]; then
    [ -x "$AIRLOCK" ] || { echo "no airlock binary at $AIRLOCK" >&2; exit 2; }
    for tool in wrk nginx dnsmasq taskset; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed" >&2; exit 77; }
    done
    /usr/bin/python3 -c 'import botocore.auth, awscrt.auth' 2>/dev/null ||
        { echo "SKIP: python3-botocore / python3-awscrt missing" >&2; exit 77; }
fi
. "$ROOT/tests/integration/lib.sh"
t_enter_netns "$@"
trap 'kill "$(cat "$T_DIR/up.pid" 2>/dev/null)" 2>/dev/null; t_cleanup' EXIT
taskset -p -c "$LOAD_CPU" $$ > /dev/null
if ldd "$AIRLOCK" | grep -q libasan; then echo "note: $AIRLOCK is an ASan build"; fi

SURR_AKID=AKIASURROGATE0000001
SURR_SECRET='surrogateSecretSURR/0000+000000000000001'
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["s3.test"]
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR_AKID": {"type": "aws-sigv4", "access_key_id": "AKIAREALKEY000000001",
  "secret_access_key": "wJalrXUtnREAL/K7MDENG+bPxRfiCYREALKEY01", "scopes": ["s3.test"]}}
JSON
t_start_resolver
t_upstream_ca
t_upstream_cert "DNS:s3.test" "$T_DIR/up"
mkdir -p "$T_DIR/up-tmp"
cat > "$T_DIR/up.conf" <<NGINX
worker_processes 1;
pid $T_DIR/up.pid;
error_log $T_DIR/up-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $T_DIR/up-tmp/body;
    proxy_temp_path $T_DIR/up-tmp/proxy;
    fastcgi_temp_path $T_DIR/up-tmp/fastcgi;
    uwsgi_temp_path $T_DIR/up-tmp/uwsgi;
    scgi_temp_path $T_DIR/up-tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    ssl_protocols TLSv1.2 TLSv1.3;
    server {
        listen 127.0.0.2:443 ssl backlog=4096;
        ssl_certificate $T_DIR/up.pem;
        ssl_certificate_key $T_DIR/up.key;
        location / { return 200 "ok\n"; }
    }
}
NGINX
nginx -c "$T_DIR/up.conf" -g 'daemon on;' || exit 1
t_wait_port 127.0.0.2 443 || exit 1
# airlock alone on PROXY_CPU
taskset -c "$PROXY_CPU" true || exit 1
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --upstream-ca "$T_DIR/upca.pem" || exit 1
taskset -a -p -c "$PROXY_CPU" "$AIRLOCK_PID" > /dev/null  # all threads (the log writer too)

# wrk script for one variant: the request is signed now (fresh X-Amz-Date) and replayed.
make_lua() { # make_lua VARIANT OUT.lua
    /usr/bin/python3 - "$1" "$BODY" "$SURR_AKID" "$SURR_SECRET" > "$2" <<'PYX'
import hashlib, io, json, sys
variant, size, akid, secret = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
body = (b"0123456789abcdef" * (size // 16 + 1))[:size]
url, path = "https://s3.test/bkt/small-object", "/bkt/small-object"
headers = [("Content-Type", "application/octet-stream")]
if variant in ("v4", "v4-defer"):
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="PUT", url=url, data=body, headers=dict(headers))
    req.headers["Host"] = "s3.test"
    # v4-defer: a non-S3 signer, which sends no x-amz-content-sha256 (airlock hashes the body)
    (S3SigV4Auth if variant == "v4" else SigV4Auth)(
        Credentials(akid, secret), "s3" if variant == "v4" else "execute-api",
        "us-west-2").add_auth(req)
    headers = [(k, v) for k, v in req.headers.items() if k.lower() != "host"]
elif variant == "v4a":
    from awscrt import auth as ca, http as ch
    r = ch.HttpRequest("PUT", path, ch.HttpHeaders([("Host", "s3.test")] + headers +
                                                  [("Content-Length", str(len(body)))]),
                       io.BytesIO(body))
    cfg = ca.AwsSigningConfig(
        ca.AwsSigningAlgorithm.V4_ASYMMETRIC, ca.AwsSignatureType.HTTP_REQUEST_HEADERS,
        ca.AwsCredentialsProvider.new_static(akid, secret), "us-west-2", "s3",
        use_double_uri_encode=False, should_normalize_uri_path=False,
        signed_body_value=hashlib.sha256(body).hexdigest(),
        signed_body_header_type=ca.AwsSignedBodyHeaderType.X_AMZ_CONTENT_SHA_256)
    ca.aws_sign_request(r, cfg).result(10)
    headers = [(k, v) for k, v in r.headers if k.lower() not in ("host", "content-length")]
elif variant != "plain":
    raise SystemExit("unknown variant " + variant)
print('wrk.method = "PUT"')
print("wrk.body = %s" % json.dumps(body.decode()))
for k, v in headers:
    print("wrk.headers[%s] = %s" % (json.dumps(k), json.dumps(v)))
PYX
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
run_wrk() { # run_wrk VARIANT -> "rate cpu_us_per_request non2xx upstream_opens"
    local v=$1 lua="$T_DIR/$1.lua" out c0 c1 o0 o1 reqs
    make_lua "$v" "$lua" || return 1
    wrk -t1 -c"$CONNS" -d"$WARMUP"s -s "$lua" https://s3.test/bkt/small-object > /dev/null 2>&1
    c0=$(cpu_ticks "$AIRLOCK_PID")
    o0=$(nstat -az TcpActiveOpens | awk '/TcpActiveOpens/ {print $2}')
    out=$(wrk -t1 -c"$CONNS" -d"$DURATION"s -s "$lua" https://s3.test/bkt/small-object 2>&1)
    c1=$(cpu_ticks "$AIRLOCK_PID")
    o1=$(nstat -az TcpActiveOpens | awk '/TcpActiveOpens/ {print $2}')
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    local rate bad
    rate=$(echo "$out" | awk '/^Requests\/sec/ {print $2}')
    bad=$(echo "$out" | awk '/Non-2xx/ {print $5}')
    echo "$rate $(echo "scale=1; ($c1 - $c0) * 1000000 / $HZ / $reqs" | bc) ${bad:-0} $((o1 - o0))"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }

echo "airlock $AIRLOCK; PUT of $BODY bytes over HTTPS, $CONNS keep-alive connections, ${DURATION}s x $RUNS runs"
# Rounds interleave the variants (plain, v4, v4-defer, v4a, plain, ...) so that whatever else
# runs on the machine hits all of them alike; each round gives its own ratios, and the medians
# over rounds are reported.
VARIANTS="plain v4 v4-defer v4a"
declare -A RATES CPUS OPENS RATIOS ADDED
fail=0
for i in $(seq 1 "$RUNS"); do
    for v in $VARIANTS; do
        read -r rate cpu bad op < <(run_wrk "$v")
        [ "${bad:-0}" != 0 ] && { echo "$v: $bad replies were not 2xx"; fail=1; }
        RATES[$v]+="$rate "; CPUS[$v]+="$cpu "; OPENS[$v]+="$op "
        if [ "$v" = plain ]; then prate=$rate; pcpu=$cpu; continue; fi
        RATIOS[$v]+="$(echo "scale=3; $rate / $prate" | bc) "
        ADDED[$v]+="$(echo "scale=1; $cpu - $pcpu" | bc) "
    done
done
med() { printf '%s\n' $1 | median; }
for v in $VARIANTS; do
    printf '%-9s %10s req/s  airlock CPU %6s us/request   (rounds: %s| CPU %s| upstream opens %s)\n' \
        "$v" "$(med "${RATES[$v]}")" "$(med "${CPUS[$v]}")" "${RATES[$v]}" "${CPUS[$v]}" "${OPENS[$v]}"
done
echo
for v in v4 v4-defer v4a; do
    printf '%-9s re-signed/plain rate ratio %s (rounds: %s)  added airlock CPU %s us/request (rounds: %s)\n' \
        "$v" "$(med "${RATIOS[$v]}")" "${RATIOS[$v]}" "$(med "${ADDED[$v]}")" "${ADDED[$v]}"
done
grep -c "\[masked: 1\]" "$T_DIR/net.log" | sed 's/^/log lines with [masked: 1]: /'
if grep -q '^ERROR\|WARNING' "$T_DIR/net.log"; then
    echo "unexpected ERROR/WARNING lines:"; grep '^ERROR\|WARNING' "$T_DIR/net.log" | head -5; fail=1
fi
t_stop_airlock
exit $fail
