#!/bin/bash
# Issue 2/3/4: the `airlock` command-line contract: --help/--version, usage errors (exit 2, one
# line), the PROXY_IP/UPSTREAM_DNS environment, check, explain, ca init, and clean shutdown.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

out=$("$AIRLOCK" --help); rc=$?
t_eq "--help exits 0" "0" "$rc"
t_contains "--help shows usage" "$out" "airlock run [options]"
out=$("$AIRLOCK" --version)
t_contains "--version" "$out" "airlock "

usage() { # usage "description" expected-exit args...
    local d=$1 want=$2; shift 2
    local err; err=$(UPSTREAM_DNS=127.0.0.53 "$AIRLOCK" "$@" 2>&1 >/dev/null); local rc=$?
    t_eq "$d: exit $want" "$want" "$rc"
    t_eq "$d: one line" "1" "$(printf '%s\n' "$err" | wc -l)"
}
usage "unknown flag" 2 run --no-such-flag
usage "bad listen address" 2 run --listen-http nonsense
usage "bad port" 2 run --listen-dns 127.0.0.1:99999
usage "bad CIDR" 2 run --allow-upstream-cidr 10.0.0.0/99
usage "bad proxy ip" 2 run --proxy-ip not-an-ip
usage "bad upstream dns" 2 run --upstream-dns dns.example
usage "missing value" 2 run --allowlist
usage "unknown command" 2 frobnicate
err=$(env -u UPSTREAM_DNS "$AIRLOCK" run --listen-dns off 2>&1); rc=$?
t_eq "missing UPSTREAM_DNS: exit 1" "1" "$rc"
t_contains "missing UPSTREAM_DNS: says so" "$err" "UPSTREAM_DNS environment variable is required"

# --- check ---
cat > "$T_DIR/ok.yaml" <<'YAML'
domains: [a.test]
url_prefixes:
  - host: api.test
    path: /v1/*
    methods: [GET]
YAML
out=$("$AIRLOCK" check --allowlist "$T_DIR/ok.yaml"); rc=$?
t_eq "check: valid file exit 0" "0" "$rc"
t_contains "check: summary" "$out" "1 domains, 1 url_prefixes"
printf 'domains: [a.test]\nurl_prefixes:\n  - host: b.test\n    paht: /x\n' > "$T_DIR/bad.yaml"
out=$("$AIRLOCK" check --allowlist "$T_DIR/bad.yaml" 2>&1); rc=$?
t_eq "check: invalid file exit 1" "1" "$rc"
t_contains "check: file:line:col" "$out" "bad.yaml:4:5:"
out=$("$AIRLOCK" check --allowlist "$T_DIR/nope.yaml" 2>&1); rc=$?
t_eq "check: missing file exit 1" "1" "$rc"

# --- explain ---
ex() { "$AIRLOCK" explain --allowlist "$T_DIR/ok.yaml" "$@"; }
t_contains "explain: allowed by domains" "$(ex GET https://a.test/x)" "allowed"
t_contains "explain: names the entry" "$(ex GET https://api.test/v1/users)" "url_prefixes[0]"
t_contains "explain: method" "$(ex POST https://api.test/v1/users)" "method POST"
t_contains "explain: pre-check" "$(ex GET 'https://a.test/x/%2e%2e/y')" "pre-check"
t_contains "explain: unknown host" "$(ex GET https://evil.test/)" "blocked"
t_contains "explain: port" "$(ex GET https://a.test:8443/)" "blocked"

# --- ca init ---
out=$("$AIRLOCK" ca init --confdir "$T_DIR/ca"); rc=$?
t_eq "ca init: exit 0" "0" "$rc"
t_contains "ca init: created" "$out" "created"
t_eq "ca init: key file 0600" "600" "$(stat -c %a "$T_DIR/ca/mitmproxy-ca.pem")"
t_check "ca init: cert files" test -s "$T_DIR/ca/mitmproxy-ca-cert.pem" -a -s "$T_DIR/ca/mitmproxy-ca-cert.cer"
out=$("$AIRLOCK" ca init --confdir "$T_DIR/ca")
t_contains "ca init: second run leaves it" "$out" "exists"

# --- the documentation (issue 14, part 3) ---
# Every option the help texts name is documented in the repository (README.md, docs/*.md),
# every option `airlock run` parses is in its help, and the docs' relative links resolve.
# That no file of the repository (docs included) reads or cites anything outside it is
# tests/standalone.sh (unit/standalone), over every tracked file.
docs=("$AIRLOCK_SRC/README.md" "$AIRLOCK_SRC"/docs/*.md)
out=$("$AIRLOCK" run --help); rc=$?
t_eq "run --help exits 0" "0" "$rc"
t_contains "run --help shows the run options" "$out" "--listen-dns"
helps=$( { "$AIRLOCK" --help; "$AIRLOCK" run --help; "$AIRLOCK" health --help
           "$AIRLOCK" replay --help; "$AIRLOCK" report --help; "$AIRLOCK" suggest --help; } 2>&1)
flags=$(printf '%s\n' "$helps" | grep -oE -- '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' |
        sed 's/^[^-]*//' | sort -u)
t_check "help texts name options" test -n "$flags"
for f in $flags; do
    if grep -qF -e "$f" "${docs[@]}"; then t_ok "documented: $f"
    else t_fail "documented: $f is in a --help text but in no README.md or docs/*.md"; fi
done
parsed=$(grep -oE '^[[:space:]]*\{"[a-z][a-z0-9-]*", (required|no|optional)_argument' \
             "$AIRLOCK_SRC/proxy/px_config.c" | grep -oE '"[a-z0-9-]+"' | tr -d '"')
t_check "px_config.c lists the run options" test -n "$parsed"
for f in $parsed; do
    t_contains "run --help names --$f" "$out" "--$f"
done
for d in "${docs[@]}" "$AIRLOCK_SRC/container/README.md"; do
    dir=$(dirname "$d")
    while read -r link; do
        if [ -e "$dir/$link" ]; then t_ok "${d#"$AIRLOCK_SRC"/}: link $link"
        else t_fail "${d#"$AIRLOCK_SRC"/}: link $link does not resolve"; fi
    done < <(grep -oE '\]\([^)#[:space:]]+' "$d" | sed 's/^](//' | grep -vE '^[a-z]+:')
done

# --- cmake --install: the binary and the host tool ---
build=${AIRLOCK_BUILD:-$(dirname "$AIRLOCK")}
cmake --install "$build" --prefix "$T_DIR/inst" > "$T_DIR/install.out" 2>&1; rc=$?
t_eq "cmake --install exits 0" "0" "$rc"
t_check "cmake --install: bin/airlock" test -x "$T_DIR/inst/bin/airlock"
t_check "cmake --install: bin/airlock-sandbox" test -x "$T_DIR/inst/bin/airlock-sandbox"
t_contains "installed airlock runs" "$("$T_DIR/inst/bin/airlock" --version)" "airlock "

# --- run with the environment, DNS answer, SIGTERM/SIGINT ---
t_start_resolver
for sig in TERM INT; do
    : > "$T_DIR/net.log"
    PROXY_IP=10.9.8.7 UPSTREAM_DNS=127.0.0.53 "$AIRLOCK" run --allowlist "$T_DIR/ok.yaml" \
        --log "$T_DIR/net.log" --confdir "$T_DIR/ca" --listen-dns 127.0.0.1:53 \
        --listen-http 127.0.0.1:80 --listen-https 127.0.0.1:443 2> "$T_DIR/run.err" &
    pid=$!
    for i in $(seq 1 100); do grep -q ready "$T_DIR/run.err" && break; sleep 0.05; done
    t_eq "PROXY_IP from the environment answers DNS" "10.9.8.7" "$(dig +short @127.0.0.1 x.example A)"
    kill -"$sig" "$pid"; wait "$pid"; rc=$?
    t_eq "SIG$sig: exit 0" "0" "$rc"
    t_logged "SIG$sig: log flushed (TASK START and the DNS line)" '^DNS A x.example -> 10.9.8.7$'
done
t_done
