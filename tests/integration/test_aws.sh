#!/bin/bash
# AWS re-signing (docs/replacements.md, AWS) through a real airlock. Clients sign with the
# SURROGATE credentials (botocore, awscrt, the AWS CLI); the upstream (aws_verifier.py) checks
# every signature with the REAL credentials using botocore and awscrt, never airlock's code.
# Each request is also sent with surrogates straight to the verifier, which must refuse it.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
AWSCLI=/usr/bin/aws
if ! "$PY" -c 'import botocore.auth, awscrt.auth' 2>/dev/null || [ ! -x "$AWSCLI" ]; then
    t_skip package "needs python3-botocore, python3-awscrt and awscli (apt-get install)"
fi
ASAN=0
ldd "$AIRLOCK" 2>/dev/null | grep -q libasan && ASAN=1

# real credentials (only airlock's replacements file and the verifier know them)
REAL_AKID=AKIAREALKEY000000001
REAL_SECRET='wJalrXUtnREAL/K7MDENG+bPxRfiCYREALKEY01'
REAL_AKID2=ASIAREALKEY000000002
REAL_SECRET2='je7MtGbClwBF/2Zp9Utk/h3yCo8nvbREALKEY02'
REAL_TOKEN='FwoGZXIvYXdzEREAL/Session+Token=Value/0123456789abcdefREALTOKEN=='
# surrogates (what the agent holds)
SURR_AKID=AKIASURROGATE0000001
SURR_SECRET='surrogateSecretSURR/0000+000000000000001'
SURR_AKID2=ASIASURROGATE0000002
SURR_SECRET2='surrogateSecretSURR/0000+000000000000002'
SURR_TOKEN='SurrogateSessionTokenSURR0000000000000000000000000000000000000002'
BUCKET=bkt

ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["s3.test", "*.s3.test", "api.test", "sts.test", "nosign.test"]
YAML
SCOPES='["s3.test", "*.s3.test", "api.test", "sts.test"]'
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR_AKID": {"type": "aws-sigv4", "access_key_id": "$REAL_AKID",
                 "secret_access_key": "$REAL_SECRET", "scopes": $SCOPES},
  "$SURR_AKID2": {"type": "aws-sigv4", "access_key_id": "$REAL_AKID2",
                  "secret_access_key": "$REAL_SECRET2", "session_token": "$REAL_TOKEN",
                  "surrogate_session_token": "$SURR_TOKEN", "scopes": $SCOPES}
}
JSON
cat > "$T_DIR/creds.json" <<JSON
{"$REAL_AKID": {"secret": "$REAL_SECRET"},
 "$REAL_AKID2": {"secret": "$REAL_SECRET2", "token": "$REAL_TOKEN"}}
JSON
t_start_resolver --address=/s3.test/127.0.0.3 --address=/api.test/127.0.0.3 \
    --address=/sts.test/127.0.0.3 --address=/nosign.test/127.0.0.3
t_upstream_ca
t_upstream_cert "DNS:s3.test,DNS:*.s3.test,DNS:api.test,DNS:sts.test,DNS:nosign.test,IP:127.0.0.3" \
    "$T_DIR/up"
mkdir -p "$T_DIR/store"
VLOG="$T_DIR/verifier.jsonl"
"$PY" "$HERE/aws_verifier.py" --listen 127.0.0.3:443 --cert "$T_DIR/up.pem" --key "$T_DIR/up.key" \
    --creds "$T_DIR/creds.json" --log "$VLOG" --store "$T_DIR/store" > "$T_DIR/verifier.out" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 10 || { cat "$T_DIR/verifier.out"; exit 1; }
grep -q "self test passed" "$T_DIR/verifier.out"
t_check "verifier: awscrt-signed V4/V4A header+query requests verify with botocore/aws-c-auth" test $? -eq 0
# The upstream echoes what it got: answers are not scrubbed here (--scrub-responses off), so
# the echo shows the real value that went upstream; test_scrub.sh covers scrubbing.
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --scrub-responses off \
    --upstream-ca "$T_DIR/upca.pem" --allow-upstream-cidr 127.0.0.3/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
UPCA="$T_DIR/upca.pem"

S1=(--akid "$SURR_AKID" --secret "$SURR_SECRET")
S2=(--akid "$SURR_AKID2" --secret "$SURR_SECRET2" --token "$SURR_TOKEN")
cl() { "$PY" "$HERE/aws_client.py" "$@"; }
# jf JSON EXPR: a field of the client's JSON line (d is the parsed object)
jf() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[1] or "{}"); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
# through airlock: must verify upstream; the same request straight to the verifier: refused
via() { # via "description" client-args...
    local d=$1; shift
    local out
    out=$(cl "$@" --ca "$CA" --direct-ca "$UPCA")
    if [ "$(jf "$out" 'd["verify"]')" = ok ]; then t_ok "$d: verified upstream"
    else t_fail "$d: through airlock: $out"; fi
    case "$(jf "$out" 'd["direct"]["status"]') $(jf "$out" 'd["direct"]["verify"]')" in
        "403 unknown access key id"*) t_ok "$d: refused when sent straight to the verifier" ;;
        *) t_fail "$d: straight to the verifier: $out" ;;
    esac
}
# curl a presigned URL through airlock (must verify) and straight to the verifier (refused)
curl_pre() { # curl_pre "description" URL
    local h
    h=$(curl -s -m 20 -o /dev/null -D - --cacert "$CA" "$2" | tr -d '\r')
    case "${h,,}" in *"x-verify: ok"*) t_ok "$1: verified upstream" ;; *) t_fail "$1: $h" ;; esac
    local host=${2#https://}; host=${host%%/*}
    h=$(curl -s -m 20 -o /dev/null -D - --cacert "$UPCA" --resolve "$host:443:127.0.0.3" "$2" | tr -d '\r')
    case "${h,,}" in *"x-verify: unknown access key id"*) t_ok "$1: refused straight" ;; *) t_fail "$1 straight: $h" ;; esac
}

# ---- controls: the verifier accepts the real key and refuses a forged one -------------------
out=$(cl botocore --url "https://s3.test/$BUCKET/control" --akid "$REAL_AKID" --secret "$REAL_SECRET" \
      --ca "$UPCA" --connect 127.0.0.3)
t_eq "control: real credentials straight to the verifier" ok "$(jf "$out" 'd["verify"]')"
out=$(cl botocore --url "https://s3.test/$BUCKET/control" --akid "$REAL_AKID" --secret "$SURR_SECRET" \
      --ca "$UPCA" --connect 127.0.0.3)
t_eq "control: real key id with a wrong secret is refused" "SigV4 signature does not match" \
    "$(jf "$out" 'd["verify"]')"

# ---- SigV4 by botocore --------------------------------------------------------------------------
via "botocore GET (S3)" botocore --url "https://s3.test/$BUCKET/obj.txt?x-id=GetObject" "${S1[@]}"
via "botocore GET, virtual-host bucket, odd key" botocore \
    --url "https://$BUCKET.s3.test/a%20key/%E2%82%AC%281%29%2Bx%3D.txt" "${S1[@]}"
via "botocore PUT with x-amz-content-sha256" botocore --method PUT \
    --url "https://s3.test/$BUCKET/put.bin" --body-size 300000 "${S1[@]}" \
    --header "x-amz-meta-note:  two   spaces "
via "botocore PUT without x-amz-content-sha256 (deferred body hash)" botocore --method PUT \
    --service execute-api --region eu-central-1 --url "https://api.test/v1/items/a%3Ab?q=1&a=%2F" \
    --body '{"hello": "world"}' "${S1[@]}" --header "content-type:application/json"
via "botocore POST, empty body, deferred, empty segment" botocore --method POST --service execute-api \
    --region eu-central-1 --url "https://api.test/v1//x/items/" "${S1[@]}"
via "STS session token in the header" botocore --url \
    "https://sts.test/?Action=GetCallerIdentity&Version=2011-06-15" --service sts \
    --region us-east-1 "${S2[@]}"
via "session token, S3 PUT (token must be signed)" botocore --method PUT \
    --url "https://s3.test/$BUCKET/tok.bin" --body "token body" "${S2[@]}"
via "session credentials, client sent no token (airlock adds the real one, signed)" botocore \
    --url "https://s3.test/$BUCKET/notok" --akid "$SURR_AKID2" --secret "$SURR_SECRET2"

# clock skew: 10 minutes off still verifies (AWS allows 15) and warns
out=$(cl botocore --url "https://s3.test/$BUCKET/skewed" "${S1[@]}" --date-offset 600 --ca "$CA")
t_eq "clock skew of 10 min: still verified upstream" ok "$(jf "$out" 'd["verify"]')"

# ---- presigned URLs (botocore) fetched with curl -------------------------------------------
curl_pre "presigned GET (S3)" "$(cl presign --url "https://s3.test/$BUCKET/pre.txt" "${S1[@]}")"
curl_pre "presigned GET with session token" \
    "$(cl presign --url "https://s3.test/$BUCKET/pre-tok.txt" "${S2[@]}")"
curl_pre "presigned GET, non-S3 (empty payload hash layout)" \
    "$(cl presign --url "https://api.test/v1/items?limit=5" --service execute-api --region eu-central-1 "${S1[@]}")"

# ---- SigV4A by awscrt -------------------------------------------------------------------------
RS="us-west-2,eu-west-1"
via "awscrt SigV4 GET" crt --url "https://s3.test/$BUCKET/crt-v4" "${S1[@]}"
via "awscrt SigV4A GET (S3)" crt --alg v4a --region "$RS" --url "https://s3.test/$BUCKET/v4a" "${S1[@]}"
via "awscrt SigV4A PUT with session token" crt --alg v4a --region "$RS" --method PUT \
    --url "https://s3.test/$BUCKET/v4a-put" --body-size 100000 "${S2[@]}"
via "awscrt SigV4A PUT, non-S3, deferred body hash" crt --alg v4a --region '*' --method PUT \
    --service execute-api --url "https://api.test/v1/v4a" --body "v4a deferred" "${S1[@]}"
curl_pre "awscrt SigV4A presigned GET" \
    "$(cl crt --presign --alg v4a --region "$RS" --url "https://s3.test/$BUCKET/v4a-pre" "${S1[@]}")"
curl_pre "awscrt SigV4A presigned GET with session token" \
    "$(cl crt --presign --alg v4a --region "$RS" --url "https://s3.test/$BUCKET/v4a-pre-tok" "${S2[@]}")"

# ---- aws-chunked uploads, signed chunk by chunk -----------------------------------------------
obj() { curl -s -m 10 --cacert "$UPCA" --resolve s3.test:443:127.0.0.3 \
        "https://s3.test/__verifier/object?key=$1"; }
for alg in v4 v4a; do
    for tr in "" --trailer; do
        size=$((20 * 1024 * 1024 + 12345)); [ -z "$tr" ] && size=200000
        key="/$BUCKET/chunked-$alg${tr:+-trailer}"
        d="aws-chunked $alg ${tr:+with trailer }$((size / 1024)) KiB"
        t0=$(date +%s.%N)
        via "$d" chunked --alg "$alg" --region "$([ $alg = v4a ] && echo "$RS" || echo us-west-2)" \
            --method PUT --url "https://s3.test$key" --body-size $size $tr "${S1[@]}"
        t1=$(date +%s.%N)
        o=$(obj "$key")
        t_eq "$d: object stored whole" "$size" "$(jf "$o" 'd["size"]')"
        echo "# $d: $(echo "$t1 - $t0" | bc) s (through airlock and direct)"
    done
done
# aws-chunked over HTTP/2 toward airlock (the upstream verifier speaks HTTP/1.1): each stream is
# re-signed chunk by chunk as an HTTP/1.1 request is
for alg in v4 v4a; do
    key="/$BUCKET/chunked-h2-$alg"
    out=$(cl chunked --h2 --alg "$alg" --region "$([ $alg = v4a ] && echo "$RS" || echo us-west-2)" \
        --method PUT --url "https://s3.test$key" --body-size 300000 --trailer "${S1[@]}" --ca "$CA")
    t_eq "aws-chunked $alg with trailer over HTTP/2: verified upstream" "ok 2" \
        "$(jf "$out" 'd["verify"]') $(jf "$out" 'd["http"]')"
    t_eq "... object stored whole" 300000 "$(jf "$(obj "$key")" 'd["size"]')"
done
# controls: the verifier checks every chunk and the trailer (real credentials, straight to it)
R1=(--akid "$REAL_AKID" --secret "$REAL_SECRET" --ca "$UPCA" --connect 127.0.0.3 --method PUT
    --url "https://s3.test/$BUCKET/corrupt" --body-size 300000 --trailer)
for alg in v4 v4a; do
    out=$(cl chunked --alg $alg --region us-west-2 "${R1[@]}")
    t_eq "control: $alg chunked with real credentials verifies" ok "$(jf "$out" 'd["verify"]')"
    out=$(cl chunked --alg $alg --region us-west-2 "${R1[@]}" --corrupt-chunk 2)
    t_eq "control: $alg chunked, one bad chunk signature, refused" "payload signature" \
        "$(jf "$out" 'd["verify"]')"
    out=$(cl chunked --alg $alg --region us-west-2 "${R1[@]}" --corrupt-chunk -1)
    t_eq "control: $alg chunked, bad trailer signature, refused" "trailer signature" \
        "$(jf "$out" 'd["verify"]')"
done
# broken framing in the middle of a re-signed body: airlock aborts, nothing half-signed goes on
out=$(cl chunked --alg v4 --method PUT --url "https://s3.test/$BUCKET/badframe" --body-size 2000000 \
      --corrupt-frame 5 "${S1[@]}" --ca "$CA")
t_eq "aws-chunked with broken framing: connection aborted" 0 "$(jf "$out" 'd["status"]')"
t_logged "aws-chunked with broken framing: ERROR line" "^ERROR PUT https://s3.test/$BUCKET/badframe -> .*aborted"
out=$(cl chunked --alg v4 --method PUT --url "https://s3.test/$BUCKET/chunked-s2" --body-size 300000 \
      --trailer "${S2[@]}" --ca "$CA")
t_eq "aws-chunked with a session token" ok "$(jf "$out" 'd["verify"]')"
# checked after the next request, not after a sleep: airlock never sent the body's end
t_eq "aws-chunked with broken framing: upstream saw no complete request" "" \
    "$(grep '/badframe' "$VLOG" | grep '"verdict": "ok"')"

# ---- out of scope: the surrogate goes out unchanged, the real key never --------------------
out=$(cl botocore --url "https://nosign.test/$BUCKET/outside" "${S1[@]}" --ca "$CA")
t_eq "out of scope: upstream sees the surrogate key id" "unknown access key id $SURR_AKID" \
    "$(jf "$out" 'd["verify"]')"
line=$(grep '"nosign.test"' "$VLOG")
case "$line" in
    *"$SURR_AKID"*) case "$line" in *"$REAL_AKID"*) t_fail "real key id sent out of scope" ;;
                                   *) t_ok "out of scope: no real key id upstream" ;; esac ;;
    *) t_fail "out of scope request not seen upstream: $line" ;;
esac

# ---- malformed Authorization with a known surrogate: 403, ERROR, nothing upstream -------------
nv=$(wc -l < "$VLOG")
out=$(curl -s -m 5 --cacert "$CA" -w ' %{http_code}' \
      -H "Authorization: AWS4-HMAC-SHA256 Credential=$SURR_AKID/20250101/us-west-2/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=NOT-HEX" \
      -H "x-amz-date: 20250101T000000Z" "https://s3.test/$BUCKET/malformed")
t_eq "malformed Authorization: 403" 403 "${out##* }"
t_eq "malformed Authorization: JSON error" signing_failed "$(jf "${out% *}" 'd["error"]')"
t_logged "malformed Authorization: ERROR line" "^ERROR GET https://s3.test/$BUCKET/malformed -> 403 (signing failed: malformed Authorization)$"
out=$(curl -s -m 5 --cacert "$CA" -o /dev/null -w '%{http_code}' \
      "https://s3.test/$BUCKET/malformed-pre?X-Amz-Credential=$SURR_AKID%2Fbad&X-Amz-Signature=00")
t_eq "malformed presigned URL with a surrogate: 403" 403 "$out"
t_eq "nothing malformed reached upstream" "$nv" "$(wc -l < "$VLOG")"

# ---- aws s3 cp through airlock: single part and a 50 MB multipart upload ---------------------
export AWS_ACCESS_KEY_ID=$SURR_AKID AWS_SECRET_ACCESS_KEY=$SURR_SECRET AWS_DEFAULT_REGION=us-west-2
export AWS_CA_BUNDLE=$CA AWS_CONFIG_FILE=$T_DIR/aws.cfg AWS_SHARED_CREDENTIALS_FILE=/dev/null
export HOME=$T_DIR AWS_EC2_METADATA_DISABLED=true AWS_PAGER=
# four parts in flight: airlock holds at most ~1 MiB (PX_WQ_HIGH) per connection
printf '[default]\ns3 =\n    addressing_style = path\n    max_concurrent_requests = 4\n' > "$AWS_CONFIG_FILE"
head -c 1000 /dev/urandom > "$T_DIR/small.bin"
"$AWSCLI" --endpoint-url https://s3.test s3 cp "$T_DIR/small.bin" "s3://$BUCKET/small.bin" \
    > "$T_DIR/cli.out" 2>&1
t_check "aws s3 cp (PutObject) through airlock" test $? -eq 0
t_eq "aws s3 cp small: object stored" "$(sha256sum < "$T_DIR/small.bin" | cut -d' ' -f1)" \
    "$(jf "$(obj "/$BUCKET/small.bin")" 'd["sha256"]')"
AWS_CA_BUNDLE=$UPCA "$AWSCLI" --endpoint-url https://127.0.0.3 s3 cp "$T_DIR/small.bin" \
    "s3://$BUCKET/small-direct.bin" > "$T_DIR/cli-direct.out" 2>&1
t_check "aws s3 cp with surrogates straight to the verifier fails" test $? -ne 0

head -c $((50 * 1024 * 1024)) /dev/urandom > "$T_DIR/big.bin"
rss0=$(t_rss_kb "$AIRLOCK_PID")
( peak=0; while kill -0 "$AIRLOCK_PID" 2>/dev/null; do
      r=$(t_rss_kb "$AIRLOCK_PID"); [ "${r:-0}" -gt "$peak" ] && { peak=$r; echo "$peak" > "$T_DIR/rss.peak"; }
      [ -f "$T_DIR/rss.stop" ] && break; sleep 0.05; done ) &
sampler=$!
t0=$(date +%s.%N)
"$AWSCLI" --endpoint-url https://s3.test s3 cp "$T_DIR/big.bin" "s3://$BUCKET/big.bin" \
    > "$T_DIR/cli-big.out" 2>&1
rc=$?
t1=$(date +%s.%N)
touch "$T_DIR/rss.stop"; wait "$sampler"
t_check "aws s3 cp 50 MB (multipart) through airlock" test $rc -eq 0
[ $rc -eq 0 ] || cat "$T_DIR/cli-big.out"
o=$(obj "/$BUCKET/big.bin")
t_eq "aws s3 cp 50 MB: object complete" "$(sha256sum < "$T_DIR/big.bin" | cut -d' ' -f1)" \
    "$(jf "$o" 'd["sha256"]')"
peak=$(cat "$T_DIR/rss.peak" 2>/dev/null || echo 0)
echo "# aws s3 cp 50 MB: $(echo "$t1 - $t0" | bc) s, $(jf "$o" 'd["parts"]') parts; airlock RSS ${rss0} KiB before, peak ${peak} KiB"
if [ "$ASAN" = 1 ]; then
    t_not_made "airlock RSS stays flat during the 50 MB upload (grew $((peak - rss0)) KiB)" \
        "ASan's allocator and shadow memory make RSS meaningless"
else
    t_check "airlock RSS stays flat during the 50 MB upload (grew $((peak - rss0)) KiB)" \
        test $((peak - rss0)) -lt 10240
fi

# ---- the network log -------------------------------------------------------------------------
log_has() { t_logged "$1" "$2" -xF; } # log_has "description" LINE: a whole line of the network log
log_has "log: SigV4 region" "allowed GET https://s3.test/$BUCKET/obj.txt?x-id=GetObject -> 200 [masked: 1] [region: us-west-2]"
log_has "log: deferred body hash, region" "allowed PUT https://api.test/v1/items/a%3Ab?q=1&a=%2F -> 200 [masked: 1] [region: eu-central-1]"
log_has "log: SigV4A region set" "allowed GET https://s3.test/$BUCKET/v4a -> 200 [masked: 1] [region: $RS]"
log_has "log: SigV4A deferred, region set" "allowed PUT https://api.test/v1/v4a -> 200 [masked: 1] [region: *]"
t_logged "log: SigV4A presigned [region: $RS]" "^allowed GET https://s3.test/$BUCKET/v4a-pre?.* -> 200 \[masked: 1\] \[region: $RS\]$"
log_has "log: aws-chunked" "allowed PUT https://s3.test/$BUCKET/chunked-v4a-trailer -> 200 [masked: 1] [region: $RS]"
log_has "log: aws s3 cp" "allowed PUT https://s3.test/$BUCKET/small.bin -> 200 [masked: 1] [region: us-west-2]"
log_has "log: out of scope is not masked" "allowed GET https://nosign.test/$BUCKET/outside -> 403"
# signed 600 s ahead: a request that takes a second to arrive on a loaded machine is 9m 59s ahead
t_logged "log: clock-skew WARNING" "^WARNING: Container clock skew detected: x-amz-date=.*(drift=\(9\|10\)m). Upstream rejection likely.$"
t_eq "log: one clock-skew warning only" 1 "$(grep -c 'clock skew' "$T_DIR/net.log")"

t_stop_airlock; t_eq "SIGTERM: airlock exits 0" 0 "$?"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T_DIR/airlock.err"; then
    t_fail "sanitizer report on stderr"; grep -E -A20 'Sanitizer|runtime error' "$T_DIR/airlock.err" | head -60
else
    t_ok "no sanitizer report"
fi
# real credentials and the signatures airlock made: never in the log or on stderr
for v in "$REAL_AKID" "$REAL_AKID2" "$REAL_SECRET" "$REAL_SECRET2" "$REAL_TOKEN" \
         "$(printf %s "$REAL_TOKEN" | "$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.stdin.read(), safe=""))')"; do
    if grep -qF -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err"; then
        t_fail "a real credential appears in the log or stderr: ${v:0:6}..."
    else
        t_ok "real credential ${v:0:6}... absent from the log and stderr"
    fi
done
sigs=$("$PY" - "$VLOG" "$REAL_AKID" "$REAL_AKID2" <<'PYX'
import json, re, sys
real = sys.argv[2:]
out = set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("verdict") != "ok" or r.get("akid") not in real:
        continue
    for s in re.findall(r"Signature=([0-9a-f]{64,})", (r.get("authorization") or "") + r["target"]):
        out.add(s)
print("\n".join(sorted(out)))
PYX
)
n=$(echo "$sigs" | grep -c .)
leaked=0
for s in $sigs; do grep -qF -- "$s" "$T_DIR/net.log" "$T_DIR/airlock.err" && leaked=$((leaked + 1)); done
t_check "the $n signatures airlock made are absent from the log and stderr" test "$n" -gt 20 -a "$leaked" -eq 0
t_done
