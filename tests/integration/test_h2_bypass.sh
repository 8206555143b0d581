#!/bin/bash
# The bypass suite's HTTP/2 section (issue 16): frames built by hand (h2_raw.py +
# h2_attacks.py, python3-h2's hpack) on TLS connections to airlock with SNI ok.test.
#  - disagreements between :authority, the SNI and a Host field, CONNECT and extended CONNECT,
#    pseudo-header tricks and connection-specific fields: a 4xx, a stream reset or a connection
#    error, and nothing reaches either upstream;
#  - the attacks of http/px_h2.h with the limits named there (PX_H2_*): rapid reset, a
#    CONTINUATION flood, an HPACK bomb, SETTINGS and PING floods, too many SETTINGS entries,
#    more streams than allowed (before and after the SETTINGS ack), a header list over the
#    cap (in several fields; in one field), too many fields. After each,
#    airlock answers an ordinary request; its RSS stays bounded over the whole run.
#
# Addresses in the test's own namespace: airlock 127.0.0.1; nginx as ok.test on 127.0.0.3 and
# evil.test on 127.0.0.4 (h2_lib.sh), each counting the requests it receives.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/h2_lib.sh"
"$PY" -c 'import hpack' 2> /dev/null || t_skip package "python3-hpack (python3-h2) is not installed"

cat > "$T_DIR/allow.yaml" <<'YAML'
url_prefixes:
  - host: ok.test
    path: /api/*
YAML
h2_setup_upstreams || exit 1
t_start_airlock "$T_DIR/allow.yaml" --upstream-ca "$T_DIR/upca.pem" \
    --allow-upstream-cidr 127.0.0.3/32 --allow-upstream-cidr 127.0.0.4/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"
raw() { timeout 60 "$PY" "$HERE/h2_raw.py" 127.0.0.1 443 ok.test "$CA" "$@" 2>&1; }
oneline() { tr '\n' ' ' <<< "$1"; }
# requests that reached either upstream, the markers left out
upstream_total() { cat "$T_DIR/ok.access" "$T_DIR/evil.access" | grep -cv 'mark=' || true; }
# mark N: an ordinary request that reaches ok.test's upstream; once it is there, a refused
# request sent before it would be there too, had airlock forwarded it
mark() {
    case "$(raw get ok.test "/api/echo?mark=$1")" in
        *"sid=1 status=200 "*) ;;
        *) t_fail "the marker request $1 was not answered"; return ;;
    esac
    # shellcheck disable=SC2034 # read by until_ok's eval
    MARK=$1
    # shellcheck disable=SC2016 # expanded by until_ok's eval
    until_ok 'grep -q "mark=$MARK " "$T_DIR/ok.access"' || t_fail "the marker request $1 never arrived"
}

# the connection works at all (otherwise every check below would fail for one reason)
out=$(raw get ok.test /api/echo)
t_contains "control: an ordinary h2 request is answered" "$out" "sid=1 status=200 rst=-"
ok0=$(h2_count ok)
t_eq "control: it reached ok.test's upstream" "1" "$ok0"

# ---- bypass cases ----
# refused CASE "why": stream 1 got a 4xx, or was reset, or the connection ended with an error;
# nothing new reached either upstream.
refused() {
    local n0 out st
    n0=$(upstream_total)
    out=$(raw "$1")
    st=$(oneline "$out")
    case "$st" in
        *"sid=1 status=4"[0-9][0-9]" "* | *"sid=1 status=None rst="[0-9]* | *"goaway="[1-9]*)
            t_ok "$1: refused ($2): $st" ;;
        *) t_fail "$1 ($2): not refused: $st" ;;
    esac
    mark "$1"
    t_eq "$1: nothing reached an upstream" "$n0" "$(upstream_total)"
    LAST=$out
}
refused authority-sni ":authority evil.test, SNI ok.test"
t_contains "... 403 blocked_by_network_allowlist" "$LAST" "sid=1 status=403 rst=- error=blocked_by_network_allowlist"
t_logged "... logged as a host mismatch" \
    '^BLOCKED GET https://evil\.test/api/echo -> 403 (host mismatch: header=evil\.test, sni=ok\.test)$'
refused authority-port ":authority evil.test:443, SNI ok.test"
refused authority-host ":authority ok.test with a Host field evil.test"
t_contains "... 400 (two hosts: duplicate Host)" "$LAST" "sid=1 status=400"
refused host-authority ":authority evil.test with a Host field ok.test"
refused host-only-evil "no :authority, Host evil.test, SNI ok.test"
t_contains "... 403 host mismatch" "$LAST" "sid=1 status=403 rst=- error=blocked_by_network_allowlist"
refused no-host "neither :authority nor Host"
refused authority-userinfo ":authority ok.test@evil.test"
refused dup-authority "two :authority fields"
refused connect "CONNECT evil.test:443"
refused connect-allowed "CONNECT ok.test:443 (tunnels are not allowed on 443)"
refused xconnect-blocked-path "extended CONNECT (websocket) to a path the policy refuses"
t_contains "... 403 blocked_by_network_allowlist" "$LAST" "sid=1 status=403 rst=- error=blocked_by_network_allowlist"
refused xconnect-evil "extended CONNECT (websocket) to another host than the SNI"
refused xconnect-other-protocol "extended CONNECT with :protocol connect-udp"
refused dup-path "two :path fields (/api/echo, /private)"
refused path-noslash ":path api/echo"
refused path-absolute ":path https://evil.test/api/echo"
refused path-empty "an empty :path"
refused scheme-other ":scheme ftp"
refused unknown-pseudo "a :foo pseudo-header"
refused uppercase-name "an uppercase field name"
refused pseudo-after-regular ":path after a regular field"
refused space-in-name "a space in a field name"
refused crlf-in-value "CR LF in a field value"
for f in connection keep-alive proxy-connection transfer-encoding upgrade te-gzip; do
    refused $f "the connection-specific field $f"
done
n0=$(h2_count ok)
out=$(raw host-only-ok)
t_contains "no :authority, Host ok.test (allowed by RFC 9113 8.3.1): served" "$out" "sid=1 status=200 rst=-"
t_eq "... once" "$((n0 + 1))" "$(h2_count ok)"
t_eq "no bypass case reached evil.test's upstream" "0" "$(h2_count evil)"
t_eq "/private never reached ok.test's upstream" "0" "$(h2_count ok /private)"

# ---- attacks ----
rss0=$(t_rss_kb "$AIRLOCK_PID")
# after CASE: airlock is alive and answers an ordinary request on a new connection
after() {
    local out
    if ! kill -0 "$AIRLOCK_PID" 2>/dev/null; then t_fail "$1: airlock died"; return; fi
    out=$(raw get ok.test "/api/echo?after=$1")
    t_contains "$1: an ordinary request afterwards is answered" "$out" "sid=1 status=200 rst=-"
}
n0=$(h2_count ok)
out=$(raw rapid-reset 1000)
t_contains "rapid reset (1000 streams opened and cancelled): GOAWAY(ENHANCE_YOUR_CALM)" "$out" "goaway=11 "
echo "# $(oneline "$out")requests that reached the upstream: $(($(h2_count ok) - n0))"
t_logged "... logged" '^BLOCKED - - -> 400 (HTTP/2 connection error: rapid reset: too many streams cancelled)$'
after rapid-reset

out=$(raw continuation-flood 2000)
t_contains "CONTINUATION flood (> PX_H2_MAX_CONTINUATIONS = 8): GOAWAY(ENHANCE_YOUR_CALM)" "$out" "goaway=11 "
t_logged "... logged" '^BLOCKED - - -> 400 (HTTP/2 connection error: flood: too many CONTINUATION frames)$'
echo "# $(oneline "$out")"
after continuation-flood

out=$(raw hpack-bomb 10000)
echo "# $(oneline "$out")"
t_contains "HPACK bomb (a 4 KB table entry referenced 10000 times, 40 MB decoded): 431 on its stream" \
    "$out" "sid=1 status=431"
t_contains "... and the connection goes on: the next stream is served" "$out" "sid=3 status=200 rst=-"
after hpack-bomb

# airlock ends the connection with a GOAWAY the client may never read: it closes with the
# client's flood unread, so the kernel resets the connection; its log line says why
for kind in settings ping; do
    n0=$(grep -c 'connection error: flood: SETTINGS or PING acks pile up unread' "$T_DIR/net.log")
    out=$(raw $kind-flood 1000000)
    echo "# $(oneline "$out")"
    case "$(oneline "$out")" in
        *"goaway=11 "* | *"closed=1"*)
            t_ok "$kind flood from a client that does not read: the connection ends" ;;
        *) t_fail "$kind flood from a client that does not read: the connection goes on: $(oneline "$out")" ;;
    esac
    t_wait_log "connection error: flood: SETTINGS or PING acks pile up unread" -F
    t_eq "... logged: acks over PX_H2_MAX_OUTBOUND_ACK (100), ENHANCE_YOUR_CALM" "$((n0 + 1))" \
        "$(grep -c 'connection error: flood: SETTINGS or PING acks pile up unread' "$T_DIR/net.log")"
    after $kind-flood
done

out=$(raw settings-entries 40)
t_contains "one SETTINGS frame with 40 entries (> PX_H2_MAX_SETTINGS = 32): GOAWAY(ENHANCE_YOUR_CALM)" \
    "$out" "goaway=11 "
after settings-entries

# more streams than PX_H2_MAX_STREAMS: before the client acknowledged airlock's SETTINGS, the
# excess streams are refused (REFUSED_STREAM) and the connection goes on; after it, the limit
# binds the client and nghttp2 makes a breach a connection error (PROTOCOL_ERROR; RFC 9113
# 5.1.2 allows either)
out=$(raw too-many-streams-eager 110)
echo "# $(oneline "$out")"
t_contains "110 streams at once: SETTINGS_MAX_CONCURRENT_STREAMS is PX_H2_MAX_STREAMS (100)" "$out" "max_concurrent_streams=100"
ans=$(sed -n 's/^answered=\([0-9]*\) refused=\([0-9]*\) codes=\(.*\)$/\1 \2 \3/p' <<< "$out")
read -r a r codes <<< "$ans"
if [ -n "$ans" ] && [ $((a + r)) -eq 110 ] && [ "$r" -ge 1 ] && [ "$codes" = 7 ]; then
    t_ok "... sent before the SETTINGS ack: the excess refused with REFUSED_STREAM, the others answered ($a answered, $r refused)"
else
    t_fail "... sent before the SETTINGS ack: [$(oneline "$out")]"
fi
t_contains "... the connection goes on" "$out" "goaway=none"
after too-many-streams-eager
out=$(raw too-many-streams 110)
echo "# $(oneline "$out")"
t_contains "110 streams after the SETTINGS ack: a connection error, PROTOCOL_ERROR" "$out" "goaway=1 "
t_logged "... logged" 'HTTP/2 connection error: GOAWAY PROTOCOL_ERROR: request HEADERS: max concurrent streams exceeded)$'
after too-many-streams

out=$(raw header-over-cap 70000 14000)
echo "# $(oneline "$out")"
t_contains "5 fields of 14000 bytes (over PX_H2_HEADER_LIST_MAX = 64 KiB): 431 on its stream" "$out" "sid=1 status=431"
t_contains "... and the connection goes on" "$out" "sid=3 status=200 rst=-"
after header-over-cap
# one field over 64 KiB is over nghttp2's own cap for a field: a connection error
# (COMPRESSION_ERROR), before any stream is handed out
n0=$(grep -c 'HTTP/2 connection error: GOAWAY COMPRESSION_ERROR' "$T_DIR/net.log")
out=$(raw header-over-cap 70000 70000)
echo "# $(oneline "$out")"
case "$(oneline "$out")" in
    *"goaway=9 "* | *"closed=1"*) t_ok "one 70000-byte field: the connection ends" ;;
    *) t_fail "one 70000-byte field: [$(oneline "$out")]" ;;
esac
t_wait_log 'HTTP/2 connection error: GOAWAY COMPRESSION_ERROR' -F
t_eq "... logged as a COMPRESSION_ERROR" "$((n0 + 1))" \
    "$(grep -c 'HTTP/2 connection error: GOAWAY COMPRESSION_ERROR' "$T_DIR/net.log")"
after header-over-field-cap

out=$(raw many-fields 150)
echo "# $(oneline "$out")"
t_contains "150 fields (over PX_HEADERS_MAX = 100): 431 on its stream" "$out" "sid=1 status=431"
t_contains "... and the connection goes on" "$out" "sid=3 status=200 rst=-"
after many-fields
t_logged "a 431 is logged" ' -> 431'

h2_rss_bounded "all the attacks" "$rss0" "$(t_rss_kb "$AIRLOCK_PID")"
t_eq "evil.test's upstream received nothing in the whole run" "0" "$(h2_count evil)"
kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
t_stop_airlock
t_eq "SIGTERM: exit 0" "0" "$?"
t_done
