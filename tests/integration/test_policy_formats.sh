#!/bin/bash
# Issue 18: the allowlist formats against a real airlock. Each format (native YAML, a domain
# list, an agentbox config.toml with allow_file) decides real requests through nginx and is
# reloaded with SIGHUP, agentbox's allow_file too; a block entry's 403 (and CONNECT refusal) names
# it; a broken reload keeps the previous policy; check/explain exit codes, --allowlist-format,
# --print-effective and file:line:col errors for every reader.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"

t_start_resolver
t_start_nginx || { echo "nginx did not start"; exit 1; }

# t_start_airlock again in the same test: lib.sh's wait for "ready" can read the previous run's
# airlock.err before the new process truncates it, so the old file goes first.
restart_airlock() {
    rm -f "$T_DIR/airlock.err"
    t_start_airlock "$@"
}

# status of GET http://HOST/echo through airlock's HTTP listener
st() { curl -sS -o "$T_DIR/body" -w '%{http_code}' --max-time 5 --resolve "$1:80:127.0.0.1" "http://$1/echo" 2>>"$T_DIR/curl.err"; }
# sends SIGHUP and waits for airlock to say the reload happened or failed
hup() {
    local before; before=$(grep -c 'reload' "$T_DIR/airlock.err")
    kill -HUP "$AIRLOCK_PID"
    local _
    for _ in $(seq 1 60); do
        [ "$(grep -c 'reload' "$T_DIR/airlock.err")" -gt "$before" ] && return 0
        sleep 0.05
    done
    return 1
}

# --- native YAML with a block list ---
cat > "$T_DIR/al.yaml" <<'YAML'
block:
  - "*.evil.a.test"
domains: [.a.test, b.test]
YAML
t_start_airlock "$T_DIR/al.yaml" --listen-proxy 127.0.0.1:3128 || exit 1
t_eq "native: leading dot covers the apex" 200 "$(st a.test)"
t_eq "native: and a subdomain" 200 "$(st www.a.test)"
t_eq "native: block glob wins" 403 "$(st x.evil.a.test)"
t_contains "native: the 403 names the block" "$(cat "$T_DIR/body")" 'matches block[0] (host *.evil.a.test'
t_contains "native: ... and where it was written" "$(cat "$T_DIR/body")" "al.yaml:2"
t_logged "native: the log line is the usual one" '^BLOCKED GET http://x.evil.a.test/echo -> 403$'
exec 3<>/dev/tcp/127.0.0.1/3128
printf 'CONNECT y.evil.a.test:443 HTTP/1.1\r\nHost: y.evil.a.test:443\r\n\r\n' >&3
resp=$(timeout 3 cat <&3); exec 3<&-
t_contains "native: CONNECT to a blocked host is refused" "$resp" "HTTP/1.1 403"
t_contains "native: ... with the block's message" "$resp" 'matches block[0]'
t_logged "native: BLOCKED CONNECT logged" '^BLOCKED CONNECT y.evil.a.test:443 -> 403$'
printf 'domains: [c.test]\n' > "$T_DIR/al.yaml"
t_check "native: SIGHUP reloads" hup
t_eq "native: reloaded (new host allowed)" 200 "$(st c.test)"
t_eq "native: reloaded (old host blocked)" 403 "$(st a.test)"
printf 'domains: [d.test\n' > "$T_DIR/al.yaml"
t_check "native: broken reload said" hup
t_contains "native: the reload error has file:line:col" "$(cat "$T_DIR/airlock.err")" "al.yaml:2:1:"
t_eq "native: broken reload keeps the old policy" 200 "$(st c.test)"
t_check "native: clean exit (no sanitizer report)" t_stop_airlock

# --- a domain list (Squid dstdomain / allowlist.txt) ---
printf '# allowed\n.a.test\nb.test # only the name\n' > "$T_DIR/allowlist.txt"
restart_airlock "$T_DIR/allowlist.txt" || exit 1
t_eq "domain list: .a.test covers a.test" 200 "$(st a.test)"
t_eq "domain list: and www.a.test" 200 "$(st www.a.test)"
t_eq "domain list: b.test" 200 "$(st b.test)"
t_eq "domain list: not www.b.test" 403 "$(st www.b.test)"
t_contains "domain list: the usual 403 message" "$(cat "$T_DIR/body")" "not in the network allowlist"
printf 'c.test\n' > "$T_DIR/allowlist.txt"
t_check "domain list: SIGHUP reloads" hup
t_eq "domain list: reloaded (c.test)" 200 "$(st c.test)"
t_eq "domain list: reloaded (a.test gone)" 403 "$(st a.test)"
printf 'c.test\nd.test critical\n' > "$T_DIR/allowlist.txt"
t_check "domain list: broken reload said" hup
t_contains "domain list: the reload error has file:line:col" "$(cat "$T_DIR/airlock.err")" \
    "allowlist.txt:2:8: one host per line"
t_eq "domain list: broken reload keeps the old policy" 200 "$(st c.test)"
t_check "domain list: clean exit (no sanitizer report)" t_stop_airlock

# --- an agentbox config.toml with allow_file ---
mkdir -p "$T_DIR/proj/.agentbox"
cat > "$T_DIR/proj/.agentbox/config.toml" <<'TOML'
docker_networks = ["homelab"]

[network]
mode = "allowlist"
allow_hosts = ["a.test", "*.b.test", { host = "p.test", ports = [8080] }]
block_hosts = ["x.b.test", "c.test"]
allow_file = "extra-hosts.txt"
TOML
printf '# extra\n.e.test\nc.test\n' > "$T_DIR/proj/.agentbox/extra-hosts.txt"
restart_airlock "$T_DIR/proj/.agentbox/config.toml" || exit 1
t_eq "agentbox: allow_hosts" 200 "$(st a.test)"
t_eq "agentbox: glob in allow_hosts" 200 "$(st y.b.test)"
t_eq "agentbox: block_hosts inside a glob" 403 "$(st x.b.test)"
t_contains "agentbox: the 403 names block_hosts" "$(cat "$T_DIR/body")" "config.toml:6 (block_hosts)"
t_eq "agentbox: allow_file, leading dot" 200 "$(st www.e.test)"
t_eq "agentbox: allow_file entry removed by block_hosts" 403 "$(st c.test)"
printf 'f.test\n' > "$T_DIR/proj/.agentbox/extra-hosts.txt"
t_check "agentbox: SIGHUP reloads" hup
t_eq "agentbox: allow_file re-read (f.test)" 200 "$(st f.test)"
t_eq "agentbox: allow_file re-read (e.test gone)" 403 "$(st www.e.test)"
rm "$T_DIR/proj/.agentbox/extra-hosts.txt"
t_check "agentbox: reload with allow_file missing said" hup
t_contains "agentbox: the error points at allow_file" "$(cat "$T_DIR/airlock.err")" \
    "config.toml:7:14: network.allow_file: $T_DIR/proj/.agentbox/extra-hosts.txt: No such file"
t_eq "agentbox: failed reload keeps the old policy" 200 "$(st f.test)"
t_check "agentbox: clean exit (no sanitizer report)" t_stop_airlock

# --- a forced format, at startup ---
printf 'domains: [a.test]\n' > "$T_DIR/forced.yaml"
err=$(UPSTREAM_DNS=127.0.0.53 "$AIRLOCK" run --allowlist "$T_DIR/forced.yaml" \
    --allowlist-format domain-list --listen-dns off --listen-http 127.0.0.1:8081 \
    --listen-https off --log "$T_DIR/x.log" --log-create --confdir "$T_DIR/confdir" 2>&1); rc=$?
t_eq "run: a file that is not in the forced format does not start" 1 "$rc"
t_contains "run: ... and says where" "$err" "forced.yaml:1:10: one host per line"
err=$(UPSTREAM_DNS=127.0.0.53 "$AIRLOCK" run --allowlist-format toml 2>&1); rc=$?
t_eq "run: unknown --allowlist-format: exit 2" 2 "$rc"

# --- check and explain ---
ck() { "$AIRLOCK" check "$@" 2>&1; }
out=$(ck --allowlist "$T_DIR/proj/.agentbox/config.toml"); rc=$?
t_eq "check: agentbox with allow_file missing: exit 1" 1 "$rc"
t_contains "check: ... file:line:col" "$out" "config.toml:7:14: network.allow_file:"
printf '.e.test\nc.test\n' > "$T_DIR/proj/.agentbox/extra-hosts.txt"
out=$(ck --allowlist "$T_DIR/proj/.agentbox/config.toml"); rc=$?
t_eq "check: agentbox: exit 0" 0 "$rc"
t_contains "check: agentbox: summary" "$out" "(read as agentbox)"
out=$(ck --allowlist "$T_DIR/proj/.agentbox/config.toml" --print-effective); rc=$?
t_eq "check --print-effective: exit 0" 0 "$rc"
t_contains "check --print-effective: an entry and its origin" "$out" \
    "  - \".e.test\"  # $T_DIR/proj/.agentbox/extra-hosts.txt:1 (allow_file)"
t_contains "check --print-effective: defaults" "$out" '  - "api.anthropic.com"  # default'
t_contains "check --print-effective: ports" "$out" "    ports: [8080]"
t_contains "check --print-effective: what a block removed" "$out" \
    "#   c.test ($T_DIR/proj/.agentbox/extra-hosts.txt:2 (allow_file)) removed by block[1] c.test"
printf '%s\n' "$out" > "$T_DIR/effective.yaml"
out=$(ck --allowlist "$T_DIR/effective.yaml"); rc=$?
t_eq "check: the effective text loads as airlock YAML" 0 "$rc"
t_contains "check: ... as native" "$out" "effective.yaml: ok"
printf 'a.test\n\nb.test critical\n' > "$T_DIR/bad.txt"
out=$(ck --allowlist "$T_DIR/bad.txt"); rc=$?
t_eq "check: bad domain list: exit 1" 1 "$rc"
t_eq "check: bad domain list: file:line:col" \
    "$T_DIR/bad.txt:3:8: one host per line (a second word here; comments start with '#')" "$out"
printf '[network]\nallow_hosts = ["a.test", 5]\n' > "$T_DIR/bad.toml"
out=$(ck --allowlist "$T_DIR/bad.toml"); rc=$?
t_eq "check: bad agentbox: exit 1" 1 "$rc"
t_contains "check: bad agentbox: file:line:col" "$out" "bad.toml:2:26: network.allow_hosts[1]:"
out=$(ck --allowlist "$T_DIR/bad.txt" --allowlist-format nope); rc=$?
t_eq "check: bad --allowlist-format: exit 2" 2 "$rc"
out=$(ck --print-effective); rc=$?
t_eq "check: --print-effective without --allowlist: exit 2" 2 "$rc"
ex() { "$AIRLOCK" explain "$@" 2>&1; }
t_eq "explain: domain list" "allowed by domains[0] (.e.test)" \
    "$(printf '.e.test\n' > "$T_DIR/e.txt"; ex --allowlist "$T_DIR/e.txt" GET https://x.e.test/)"
out=$(ex --allowlist "$T_DIR/proj/.agentbox/config.toml" GET https://x.b.test/); rc=$?
t_eq "explain: agentbox block: exit 0" 0 "$rc"
t_contains "explain: agentbox block named" "$out" "blocked by block[0] (host x.b.test"
out=$(ex --allowlist "$T_DIR/forced.yaml" --allowlist-format domain-list GET https://a.test/); rc=$?
t_eq "explain: forced format error: exit 1" 1 "$rc"
t_contains "explain: ... file:line:col" "$out" "forced.yaml:1:10:"
t_done
