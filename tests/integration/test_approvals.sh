#!/bin/bash
# Persisted approvals (docs/approvals.md, "--scope persist"): `airlock approve ID --scope
# persist` lets the held request go on at once, writes the entry to the drafts file beside the
# allowlist (allow.approved.yaml, mode 0600) and lets the next identical request through without
# a hold; the entry survives a restart and a SIGHUP; `airlock approvals list` shows it, `airlock
# approvals undo` removes it and the next request is held again. --path/--methods widen what a
# conversation approval allows and are refused when they leave out the held request; `airlock
# check --print-effective` names the drafts file as the entry's source; a malformed drafts file
# is ignored with one stderr line naming it. Upstream: a recorder that answers 200.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
on_block: hold
hold_seconds: 30
domains: [open.test]
YAML
DRAFTS=$T_DIR/allow.approved.yaml
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_resolver --address=/open.test/127.0.0.3 --address=/other.test/127.0.0.3
CTL=$T_DIR/control.sock
export AIRLOCK_CONTROL=$CTL
start() {
    t_start_airlock "$T_DIR/allow.yaml" --control "$CTL" --allow-upstream-cidr 127.0.0.3/32
}
start || exit 1

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# bg NAME URL [CURL-ARGS]: curl in the background; $T_DIR/NAME.out gets "status end_ms"
bg() {
    rm -f "$T_DIR/$1.out"
    (code=$(curl -sS -m 40 -o /dev/null -w '%{http_code}' "${@:3}" "$2" 2>/dev/null)
        echo "$code $(now_ms)" > "$T_DIR/$1.out") &
    T_PIDS+=($!)
}
# hold_id PATH: the ID `airlock pending` lists for a hold of PATH (waits for it)
hold_id() {
    HOLD_URL=other.test$1
    # shellcheck disable=SC2016 # expanded by until_ok's eval
    until_ok '"$AIRLOCK" pending | awk -v p="$HOLD_URL" '"'"'$NF == p {f = 1} END {exit !f}'"'"'' ||
        return 1
    "$AIRLOCK" pending | awk -v p="$HOLD_URL" '$NF == p {print $1}' | head -1
}
code() { curl -sS -m 10 -o /dev/null -w '%{http_code}' "$@"; }
# is_held PATH [CURL-ARGS]: a request for PATH is held (then denied: nothing is left waiting)
is_held() {
    bg held "http://other.test$1" "${@:2}"
    local id
    id=$(hold_id "$1") || return 1
    "$AIRLOCK" deny "$id" > /dev/null
    until_ok 'test -s "$T_DIR/held.out"' 10
}

# persist: the held request goes on at once, the entry is written and applies at once
bg p1 http://other.test/p/1
id=$(hold_id /p/1)
t0=$(now_ms)
t_contains "approve --scope persist answers ok" "$("$AIRLOCK" approve "$id" --scope persist)" \
    "ok $id approved 1"
until_ok 'test -s "$T_DIR/p1.out"' 10
read -r c t1 < "$T_DIR/p1.out"
t_eq "... the held request is answered 200" 200 "$c"
t_check "... within 1 s of the approval ($((t1 - t0)) ms)" test $((t1 - t0)) -lt 1000
t_eq "... the drafts file is written beside the allowlist, mode 0600" 600 "$(stat -c %a "$DRAFTS" 2>/dev/null)"
t_check "... with who approved it and when" \
    grep -Eq "^  # approval a1 by uid $(id -u) at 20[0-9-]+T[0-9:]+Z \(hold $id\)$" "$DRAFTS"
t_check "... the entry: host, path, method" grep -A2 -q '^  - host: "other.test"$' "$DRAFTS"
t_check "... path" grep -q '^    path: "/p/1"$' "$DRAFTS"
t_check "... methods" grep -q '^    methods: \[GET\]$' "$DRAFTS"
t_eq "... the next identical request is not held (no reload)" 200 "$(code http://other.test/p/1)"
t_logged "... the DECISION line says scope persist" \
    "^DECISION $id approved GET other\.test /p/1 by uid $(id -u) (scope persist, 1 request)$"
t_logged "... the request's line says persisted, not for this conversation" \
    "^allowed GET http://other\.test/p/1 -> 200 \[held: $id approved by uid $(id -u), persisted\]$"
t_contains "... airlock check loads the allowlist with it" \
    "$("$AIRLOCK" check --allowlist "$T_DIR/allow.yaml")" "url_prefixes[0] host other.test, path /p/1, methods GET"
eff=$("$AIRLOCK" check --allowlist "$T_DIR/allow.yaml" --print-effective)
t_contains "... check --print-effective names the drafts file and line" "$eff" \
    "- host: \"other.test\"  # $DRAFTS:6"

# survives SIGHUP and a restart
t_reload
t_eq "after SIGHUP the entry still allows: 200" 200 "$(code http://other.test/p/1)"
t_stop_airlock
start || exit 1
t_eq "after a restart the entry is loaded from the drafts file: 200" 200 "$(code http://other.test/p/1)"
t_logged "... logged allowed by the drafts entry" "^allowed GET http://other\.test/p/1 -> 200$"
t_check "... a POST (not approved) is still held" is_held /p/1 -X POST

# approvals list / undo through the control socket
list=$("$AIRLOCK" approvals list)
t_contains "approvals list shows ID, who, when, method, host, path" "$list" "a1    uid $(id -u)"
t_contains "... the entry" "$list" "GET        other.test/p/1"
t_contains "approvals undo a1" "$("$AIRLOCK" approvals undo a1)" "ok a1 removed"
t_check "... the entry is gone from the file" sh -c "! grep -q other.test '$DRAFTS'"
until_ok 'grep -q "reloaded" "$T_DIR/airlock.err"' 10
t_check "... the running airlock dropped it: the next request is held again" is_held /p/1
t_contains "an unknown approval is an error" "$("$AIRLOCK" approvals undo a9 2>&1)" "no approval a9"

# --path / --methods
bg m1 http://other.test/m/1
id=$(hold_id /m/1)
t_contains "a --path that leaves out the held path is refused" \
    "$("$AIRLOCK" approve "$id" --scope conversation --path '/other/*' 2>&1)" "does not match"
t_contains "--methods without the held method is refused" \
    "$("$AIRLOCK" approve "$id" --scope conversation --methods POST 2>&1)" "leaves out"
t_contains "--path with scope once is refused" \
    "$("$AIRLOCK" approve "$id" --path '/m/*' 2>&1)" "go with scope"
t_contains "approve --scope persist --path /m/* --methods GET,POST" \
    "$("$AIRLOCK" approve "$id" --scope persist --path '/m/*' --methods GET,POST)" "ok $id approved 1"
until_ok 'test -s "$T_DIR/m1.out"' 10
t_eq "... the held request: 200" 200 "$(cut -d' ' -f1 "$T_DIR/m1.out")"
t_eq "... another path under the pattern: 200 without a hold" 200 "$(code http://other.test/m/2?q=1)"
t_eq "... a POST: 200 without a hold" 200 "$(code -X POST http://other.test/m/3)"
t_check "... a path outside the pattern is held" is_held /n/1
t_check "... the drafts file says the pattern" grep -q '^    path: "/m/\*"$' "$DRAFTS"
t_check "... and both methods" grep -q '^    methods: \[GET, POST\]$' "$DRAFTS"
t_contains "approvals list --allowlist reads the file without airlock" \
    "$("$AIRLOCK" approvals list --allowlist "$T_DIR/allow.yaml")" "GET,POST   other.test/m/*"

# a malformed drafts file: the allowlist loads alone, one stderr line names the file and line
t_stop_airlock
cp "$DRAFTS" "$T_DIR/drafts.good"
printf 'url_prefixes:\n  - host: [\n' > "$DRAFTS"
start || exit 1
t_check "a malformed drafts file is named on stderr (file:line)" \
    grep -q "^.*$DRAFTS:[0-9]*.*the approvals drafts are ignored" "$T_DIR/airlock.err"
t_eq "... the allowlist still loads: open.test 200" 200 "$(code http://open.test/)"
t_check "... the drafts are not applied: held" is_held /m/5
t_check "... airlock check fails" sh -c "! '$AIRLOCK' check --allowlist '$T_DIR/allow.yaml' >/dev/null 2>&1"
t_contains "... approvals undo refuses to rewrite a file it cannot read" \
    "$("$AIRLOCK" approvals undo a2 2>&1)" "$DRAFTS:2"
printf 'mode: warn\nurl_prefixes: []\n' > "$DRAFTS"
t_reload
t_check "a drafts file with mode: is refused on SIGHUP" \
    grep -q "mode is not allowed in a drafts file" "$T_DIR/airlock.err"
t_check "... and not applied: held" is_held /m/6

t_done
