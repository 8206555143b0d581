#!/bin/bash
# GitHub App credentials (reference §4.5, catalogue §10.5 G1-G9): airlock mints an RS256 JWT,
# exchanges it at a fake GitHub API (HTTPS with the test CA; it verifies the JWT with the app's
# public key and counts the mints), caches the installation token, and puts it in place of the
# ghs_ surrogate (Bearer, Basic password) for in-scope hosts. 20 concurrent requests share one
# mint; an expired token is minted anew; a failed mint answers 502 with the reference's line; a
# request body waits intact while the token is minted; the private key, the JWT and the token
# never reach the network log or stderr.
# GraphQL repository scoping (reference §11.4): after each mint airlock fetches the
# installation's repositories (150 of them, two pages); GraphQL requests with the token may
# only target those (repository(owner, name), variables, node IDs of both kinds), else 403
# graphql_repo_scope_blocked; a failed fetch refuses them with the reference's loud line.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)
"$PY" -c 'import cryptography' 2>/dev/null ||
    t_skip package "python3-cryptography is not installed"

SURR="ghs_SurrogateTokenValue1234567890abcde"
SURR2="ghs_OtherSurrogate0000000000000000000001"
SURR3="ghs_WrongKeySurrogate00000000000000000002"
REAL="ghs_real_token_value"
ST="$T_DIR/api"
mkdir -p "$ST"
openssl genrsa -out "$T_DIR/app.key" 2048 2>/dev/null
openssl rsa -in "$T_DIR/app.key" -pubout -out "$T_DIR/app.pub" 2>/dev/null
openssl genrsa -out "$T_DIR/other.key" 2048 2>/dev/null
KEY_JSON=$("$PY" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$T_DIR/app.key")
OTHER_JSON=$("$PY" -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$T_DIR/other.key")
KEY_LINE=$(sed -n 2p "$T_DIR/app.key") # a line of the key's base64 body, looked for in the logs

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: ["api.github.com", "github.com", "other-api.example.com", "foreign-ok.example.com",
          "wrongkey.example.com"]
url_prefixes:
  - host: gql.github.com
    path: /graphql
    methods: [POST]
    graphql:
      queries: [viewer]
YAML
cat > "$T_DIR/repl.json" <<JSON
{
  "$SURR": {"type": "github-app", "app_id": "12345", "private_key": $KEY_JSON,
            "installation_id": 678, "base_url": "https://api.github.test",
            "scopes": ["api.github.com", "github.com", "gql.github.com"],
            "permissions": {"contents": "write"}, "repositories": ["my-repo"]},
  "$SURR2": {"type": "github-app", "app_id": "12345", "private_key": $KEY_JSON,
             "installation_id": 999, "base_url": "https://api.github.test/",
             "scopes": ["foreign-ok.example.com"], "allow_foreign_credentials": true},
  "$SURR3": {"type": "github-app", "app_id": "12345", "private_key": $OTHER_JSON,
             "installation_id": 678, "base_url": "https://api.github.test",
             "scopes": ["wrongkey.example.com"]}
}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
t_start_resolver --address=/api.github.test/127.0.0.3 --address=/github.com/127.0.0.3 \
    --address=/example.com/127.0.0.3
t_upstream_ca
t_upstream_cert "DNS:api.github.test,DNS:*.github.com,DNS:github.com,DNS:*.example.com" "$T_DIR/up"
"$PY" "$HERE/ghapp_api.py" 127.0.0.3 443 "$T_DIR/up.pem" "$T_DIR/up.key" "$T_DIR/app.pub" 12345 \
    "$ST" > "$T_DIR/api.out" 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 443 10 || { cat "$T_DIR/api.out"; exit 1; }
# one loop: the token counts below are one loop's (each loop refreshes on its own; docs/cli.md
# "More than one core")
t_start_airlock "$T_DIR/allow.yaml" --workers 1 --replacements "$T_DIR/repl.json" \
    --upstream-ca "$T_DIR/upca.pem" --allow-upstream-cidr 127.0.0.3/32 || exit 1
CA="$T_DIR/confdir/mitmproxy-ca-cert.pem"

mints() { [ -f "$ST/mints.jsonl" ] && wc -l < "$ST/mints.jsonl" || echo 0; }
fetches() { [ -f "$ST/repos.jsonl" ] && wc -l < "$ST/repos.jsonl" || echo 0; }
# a node ID of the current format: nid PREFIX ID... (MessagePack array of the ids)
nid() {
    "$PY" -c 'import base64,sys
ids = [int(a) for a in sys.argv[2:]]
b = bytes([0x90 | len(ids)])
for v in ids:
    b += bytes([v]) if v < 0x80 else bytes([0xCD]) + v.to_bytes(2, "big") if v <= 0xFFFF else bytes([0xCE]) + v.to_bytes(4, "big")
print(sys.argv[1] + "_" + base64.urlsafe_b64encode(b).decode().rstrip("="))' "$@"
}
# gql QUERY [VARIABLES-JSON]: POST https://api.github.com/graphql with the surrogate
gql() {
    local body
    body=$("$PY" -c 'import json,sys
d = {"query": sys.argv[1]}
if len(sys.argv) > 2: d["variables"] = json.loads(sys.argv[2])
print(json.dumps(d))' "$@")
    get https://api.github.com/graphql -H "Authorization: Bearer $SURR" --data-binary "$body"
}
gql_sent() { # how many GraphQL requests reached the API
    "$PY" -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["path"] == "/graphql"))' "$ST/requests.jsonl"
}
# the Authorization values the API received with the last request to PATH, joined with '|'
auth_at() {
    "$PY" -c 'import json,sys
last = None
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["path"] == sys.argv[2]: last = d
print("<none>" if last is None else "|".join(last["auth"]))' "$ST/requests.jsonl" "$1"
}
mint_field() { # mint_field N EXPR (d: the Nth mint record)
    "$PY" -c 'import json,sys; d=json.loads(open(sys.argv[1]).readlines()[int(sys.argv[2])-1]); print(eval(sys.argv[3]))' \
        "$ST/mints.jsonl" "$1" "$2"
}
get() { # get URL [curl args]: "body status" (the newline ending airlock's JSON answers dropped)
    local u=$1 out; shift
    out=$(curl -s -m 40 --cacert "$CA" -w ' %{http_code}' "$@" "$u")
    printf '%s' "${out//$'}\n '/'} '}"
}

# ---- G1: a fresh mint ------------------------------------------------------------------------
out=$(get https://api.github.com/g1 -H "Authorization: Bearer $SURR")
t_contains "G1: the request goes through" "$out" " 200"
t_eq "G1: the API got the real token as Bearer" "Bearer $REAL" "$(auth_at /g1)"
t_logged "G1: logged refreshed, masked 1" \
    '^allowed GET https://api\.github\.com/g1 -> 200 \[github-app: refreshed\] \[masked: 1\]$'
t_eq "G1: one mint" 1 "$(mints)"
t_eq "the installation's repositories fetched after the mint: 2 pages of 100, with the token" \
    "[(1, 100, True), (2, 100, True)]" \
    "$("$PY" -c 'import json,sys; print([(d["page"], d["per_page"], d["auth_ok"]) for d in map(json.loads, open(sys.argv[1]))])' "$ST/repos.jsonl")"
# ---- G9: what the mint carried ---------------------------------------------------------------
t_eq "G9: the JWT verified with the app's public key (RS256, iss, 600 s)" True "$(mint_field 1 'd["jwt_ok"]')"
t_eq "G9: iss is the app id" 12345 "$(mint_field 1 'd["iss"]')"
t_eq "G9: the installation id in the path" 678 "$(mint_field 1 'd["installation"]')"
t_eq "G9: permissions and repositories in the body" \
    "{'permissions': {'contents': 'write'}, 'repositories': ['my-repo']}" "$(mint_field 1 'd["body"]')"
t_eq "G9: Accept: application/vnd.github+json" application/vnd.github+json "$(mint_field 1 'd["accept"]')"

# ---- G2: the cached token --------------------------------------------------------------------
out=$(get https://api.github.com/g2 -H "Authorization: Bearer $SURR")
t_contains "G2: the request goes through" "$out" " 200"
t_eq "G2: the cached token" "Bearer $REAL" "$(auth_at /g2)"
t_logged "G2: logged cached" '^allowed GET https://api\.github\.com/g2 -> 200 \[github-app: cached\] \[masked: 1\]$'
t_eq "G2: no new mint" 1 "$(mints)"

# ---- G7: Basic x-access-token:<surr> on github.com --------------------------------------------
out=$(get https://github.com/g7 -u "x-access-token:$SURR")
t_contains "G7: the request goes through" "$out" " 200"
t_eq "G7: the password replaced, Basic re-encoded" \
    "Basic $(printf 'x-access-token:%s' "$REAL" | base64 -w0)" "$(auth_at /g7)"

# ---- G8: duplicate Authorization [surr, attacker] ---------------------------------------------
out=$(get https://api.github.com/g8 --http1.1 -H "Authorization: Bearer $SURR" -H "Authorization: Bearer attacker")
t_contains "G8: the request goes through" "$out" " 200"
t_eq "G8: one Authorization with the real token" "Bearer $REAL" "$(auth_at /g8)"
t_logged "G8: COLLAPSED logged" "^COLLAPSED 2 duplicate 'authorization' headers in GET https://api\\.github\\.com/g8"

# ---- G5: out of scope -------------------------------------------------------------------------
out=$(get https://other-api.example.com/g5 -H "Authorization: Bearer $SURR")
t_contains "G5: the request goes through" "$out" " 200"
t_eq "G5: out of scope: the surrogate is forwarded" "Bearer $SURR" "$(auth_at /g5)"

# ---- G6: a foreign credential -----------------------------------------------------------------
out=$(get https://api.github.com/g6 -H "Authorization: Bearer foreign-token")
t_contains "G6: the request goes through" "$out" " 200"
t_eq "G6: a foreign Authorization is removed" "" "$(auth_at /g6)"
t_logged "G6: STRIPPED logged" \
    "^STRIPPED header 'authorization' from GET https://api\\.github\\.com/g6 (foreign credential blocked)$"
t_logged "G6: not counted as dropped" '^allowed GET https://api\.github\.com/g6 -> 200$'
out=$(get https://foreign-ok.example.com/g6b -H "Authorization: Bearer foreign-token")
t_eq "G6: kept with allow_foreign_credentials" "Bearer foreign-token" "$(auth_at /g6b)"

# ---- G10 (its query-parameter case): /graphql?x=1 with the surrogate ----------------------------
m0=$(mints)
out=$(get 'https://api.github.com/graphql?x=1' -H "Authorization: Bearer $SURR" --data-binary '{"query": "{ viewer { login } }"}')
t_contains "G10: POST /graphql?x=1 with an App token: 403" "$out" " 403"
t_contains "... graphql_repo_scope_blocked, detail query-params" "$out" '"error": "graphql_repo_scope_blocked"'
t_contains "... detail query-params" "$out" '"detail": "query-params"'
t_logged "... logged BLOCKED" '^BLOCKED POST https://api\.github\.com/graphql?x=1 -> 403 \[github-app: query-params\]$'
t_eq "... no mint, nothing sent" "$m0 <none>" "$(mints) $(auth_at '/graphql?x=1')"

# ---- GraphQL repository scoping -----------------------------------------------------------------
f0=$(fetches)
m0=$(mints)
out=$(gql '{ repository(owner: "octo", name: "repo3") { id } }')
t_contains "scope: repository(owner, name) of the installation: 200" "$out" " 200"
t_logged "... graphql-scoped" \
    '^allowed POST https://api\.github\.com/graphql -> 200 \[github-app: cached, graphql-scoped\] \[masked: 1\]$'
t_eq "... the token went out" "Bearer $REAL" "$(auth_at /graphql)"
out=$(gql '{ repository(owner: "OCTO", name: "Repo140") { id } }')
t_contains "scope: a repository from the second page (owner/name case-insensitive): 200" "$out" " 200"
n0=$(gql_sent)
out=$(gql '{ a: repository(owner: "octo", name: "repo1") { id } b: repository(owner: "octo", name: "nope") { id } }')
t_contains "scope: a repository outside the installation: 403" "$out" " 403"
t_contains "... graphql_repo_scope_blocked" "$out" '"error": "graphql_repo_scope_blocked"'
t_contains "... detail names it" "$out" '"detail": "repository:octo/nope"}'
t_logged "... logged BLOCKED with the detail" \
    '^BLOCKED POST https://api\.github\.com/graphql -> 403 \[github-app: graphql-scope-blocked: repository:octo/nope\]$'
t_eq "... nothing reached the API" "$n0" "$(gql_sent)"
q='query($o: String!, $n: String!) { repository(owner: $o, name: $n) { id } }'
out=$(gql "$q" '{"o": "octo", "n": "repo7"}')
t_contains "scope: owner and name from the variables: 200" "$out" " 200"
out=$(gql "$q" '{"o": "other", "n": "repo7"}')
t_contains "scope: ... outside the installation: 403" "$out" '"detail": "repository:other/repo7"} 403'
out=$(gql "{ node(id: \"$(nid R 0 1005)\") { id } }")
t_contains "scope: a repository node ID (R_, current format) of the installation: 200" "$out" " 200"
out=$(gql "{ node(id: \"$(nid R 0 5)\") { id } }")
t_contains "scope: ... of another repository: 403" "$out" "(repository outside the installation)\"} 403"
out=$(gql 'mutation($in: AddCommentInput!) { addComment(input: $in) { clientMutationId } }' \
      "{\"in\": {\"subjectId\": \"$(nid I 0 1149 7)\", \"body\": \"hi\"}}")
t_contains "scope: an issue node ID (I_) of an installation repository, in an input variable: 200" "$out" " 200"
out=$(gql 'mutation($in: AddCommentInput!) { addComment(input: $in) { clientMutationId } }' \
      "{\"in\": {\"subjectId\": \"$(nid I 0 99999 7)\", \"body\": \"hi\"}}")
t_contains "scope: ... of another repository: 403" "$out" " 403"
out=$(gql '{ node(id: "I_notanid!") { id } }')
t_contains "scope: an undecodable node ID: 403" "$out" '"detail": "node-id:I_notanid! (undecodable)"} 403'
out=$(gql '{ viewer { login } }')
t_contains "scope: a query without repository target (viewer) passes: 200" "$out" " 200"
out=$(get https://api.github.com/graphql -H "Authorization: Bearer $SURR" --data-binary '{"query": "{ viewer { login }"}')
t_contains "scope: an unparseable query: 403" "$out" '"detail": "<unparseable>"} 403'
t_logged "... with the loud line" '^GraphQL repo-scope check failed: unreadable: <unparseable>$'
q='query($x: ID!) { node(id: $x) { id } }'
out=$(get https://api.github.com/graphql -H "Authorization: Bearer $SURR" --data-binary \
    "{\"query\": \"$q\", \"variables\": {\"x\": \"$(nid R 0 5)\", \"x\": \"$(nid R 0 1005)\"}}")
t_contains "scope: a variable given twice (outside, then inside): 403 <duplicate-key>" "$out" \
    '"detail": "<duplicate-key>"} 403'
out=$(get https://api.github.com/graphql -H "Authorization: Bearer $SURR" --data-binary \
    "{\"query\": \"$q\", \"Variables\": {\"x\": \"$(nid R 0 5)\"}}")
t_contains "scope: the variables spelled Variables: 403 <ambiguous-key>" "$out" \
    '"detail": "<ambiguous-key>"} 403'
t_logged "... with the loud line" '^GraphQL repo-scope check failed: unreadable: <ambiguous-key>$'
out=$(gql '{ viewer { login } }' "{\"a\": $(printf '[%.0s' $(seq 40))1$(printf ']%.0s' $(seq 40))}")
t_contains "scope: variables nested 40 deep: 403 <too-deep>" "$out" '"detail": "<too-deep>"} 403'
"$PY" -c 'import json; print(json.dumps({"query": "{ viewer { login } }", "pad": "x" * (1 << 20)}))' > "$T_DIR/big.json"
out=$(get https://api.github.com/graphql -H "Authorization: Bearer $SURR" --data-binary @"$T_DIR/big.json")
t_contains "scope: a body over 1 MiB: 403 <too-large>" "$out" '"detail": "<too-large>"} 403'
t_eq "scope: no mint and no fetch for all these (the cached token, its repositories)" "$m0 $f0" \
    "$(mints) $(fetches)"
# a failed fetch: the token works, GraphQL requests with it are refused; the next one fetches again
t_reload
echo fail > "$ST/repos_mode"
m0=$(mints)
out=$(gql '{ viewer { login } }')
t_contains "scope: the repositories could not be fetched: 403" "$out" '"detail": "<repositories-unknown>"} 403'
t_logged "... the reference's loud line" \
    '^GitHub App repo node ID resolution failed: the repositories endpoint answered HTTP 500$'
t_eq "... one mint" $((m0 + 1)) "$(mints)"
out=$(get https://api.github.com/after-fetch -H "Authorization: Bearer $SURR")
t_contains "... the token still serves other requests: 200" "$out" " 200"
f0=$(fetches)
out=$(gql '{ repository(owner: "octo", name: "repo3") { id } }')
t_contains "... the next GraphQL request fetches again, fails again: 403" "$out" '"detail": "<repositories-unknown>"} 403'
t_eq "... one more fetch (a page), no mint" "$((f0 + 1)) $((m0 + 1))" "$(fetches) $(mints)"
rm -f "$ST/repos_mode"
out=$(gql '{ repository(owner: "octo", name: "repo3") { id } }')
t_contains "... once the API answers: 200" "$out" " 200"
t_eq "... two pages fetched, still no mint" "$((f0 + 3)) $((m0 + 1))" "$(fetches) $(mints)"
t_logged "... cached, graphql-scoped" \
    '^allowed POST https://api\.github\.com/graphql -> 200 \[github-app: cached, graphql-scoped\] \[masked: 1\]$'

out=$(curl -s -m 40 --cacert "$CA" --http2 -w ' %{http_version} %{http_code}' -H "Authorization: Bearer $SURR" \
      --data-binary '{"query": "{ repository(owner: \"octo\", name: \"repo9\") { id } }"}' https://api.github.com/graphql)
t_contains "scope over HTTP/2: in the installation: 200" "$out" " 2 200"
out=$(curl -s -m 40 --cacert "$CA" --http2 -w ' %{http_version} %{http_code}' -H "Authorization: Bearer $SURR" \
      --data-binary '{"query": "{ repository(owner: \"octo\", name: \"nope\") { id } }"}' https://api.github.com/graphql)
t_contains "scope over HTTP/2: outside: 403" "${out//$'}\n '/'} '}" '"detail": "repository:octo/nope"} 2 403'
# concurrent GraphQL requests on an empty cache share one mint and one fetch
t_reload
echo 1 > "$ST/delay"
m0=$(mints)
f0=$(fetches)
cpids=()
for i in $(seq 1 8); do
    r=$([ $((i % 2)) = 0 ] && echo "repo$((100 + i))" || echo "other$i")
    gql "{ repository(owner: \"octo\", name: \"$r\") { id } }" > "$T_DIR/s$i.out" &
    cpids+=($!)
done
wait "${cpids[@]}"
rm -f "$ST/delay"
n200=0 n403=0
for i in $(seq 1 8); do
    case "$(cat "$T_DIR/s$i.out")" in *" 200") n200=$((n200 + 1)) ;; *'"detail": "repository:octo/other'*" 403") n403=$((n403 + 1)) ;; esac
done
t_eq "8 concurrent GraphQL requests on an empty cache: 4 in scope 200, 4 outside 403" "4 4" "$n200 $n403"
t_eq "... one mint, one fetch (2 pages)" "$((m0 + 1)) $((f0 + 2))" "$(mints) $(fetches)"

# ---- with the GraphQL operation filter: the token only after the filter passed -----------------
t_reload
m0=$(mints)
out=$(get https://gql.github.com/graphql -H "Authorization: Bearer $SURR" \
      --data-binary '{"query": "mutation { deleteRepository(input: {}) { clientMutationId } }"}')
t_contains "a GraphQL operation the filter refuses: 403" "$out" " 403"
t_eq "... no token was minted for it" "$m0" "$(mints)"
out=$(get https://gql.github.com/graphql -H "Authorization: Bearer $SURR" \
      --data-binary '{"query": "{ viewer { login } }"}')
t_contains "an allowed GraphQL operation: 200" "$out" " 200"
t_eq "... with the token (minted after the filter)" "Bearer ${REAL}_$((m0 + 1))" "$(auth_at /graphql)"
t_logged "... both tags" \
    '^allowed POST https://gql\.github\.com/graphql -> 200 \[graphql-op: query/viewer\] \[github-app: refreshed, graphql-scoped\] \[masked: 1\]$'

# ---- plain http: never injected ---------------------------------------------------------------
out=$(curl -s -m 10 -w ' %{http_code}' -H "Authorization: Bearer $SURR" http://api.github.com/plain)
t_contains "plain http with the surrogate: 403" "$out" " 403"
t_contains "... credentials_require_https" "$out" '"error": "credentials_require_https"'

# ---- 20 concurrent requests: one mint --------------------------------------------------------
t_reload # a new snapshot: an empty cache
echo 1 > "$ST/delay"
m0=$(mints)
f0=$(fetches)
cpids=()
for i in $(seq 1 20); do
    get "https://api.github.com/c$i" -H "Authorization: Bearer $SURR" > "$T_DIR/c$i.out" &
    cpids+=($!)
done
wait "${cpids[@]}"
rm -f "$ST/delay"
n200=0
for i in $(seq 1 20); do case "$(cat "$T_DIR/c$i.out")" in *" 200") n200=$((n200 + 1)) ;; esac; done
t_eq "20 concurrent requests: all 200" 20 "$n200"
t_eq "... exactly one mint" $((m0 + 1)) "$(mints)"
t_eq "... and one fetch of the repositories (2 pages)" $((f0 + 2)) "$(fetches)"
good=0
for i in $(seq 1 20); do [ "$(auth_at "/c$i")" = "Bearer ${REAL}_$((m0 + 1))" ] && good=$((good + 1)); done
t_eq "... each carried the new token" 20 "$good"
t_eq "... 20 refreshed lines (they waited for the mint)" 20 \
    "$(grep -c '^allowed GET https://api\.github\.com/c[0-9]* -> 200 \[github-app: refreshed\]' "$T_DIR/net.log")"

# ---- a request body waits intact while the token is minted ------------------------------------
t_reload
echo 1 > "$ST/delay"
head -c 300000 /dev/urandom > "$T_DIR/body.bin"
m0=$(mints)
out=$(get https://api.github.com/upload --http1.1 -H "Authorization: Bearer $SURR" --data-binary @"$T_DIR/body.bin")
t_contains "HTTP/1.1 POST of 300 kB during a mint: 200" "$out" " 200"
t_eq "... the whole body arrived" 300000 \
    "$("$PY" -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["path"]=="/upload"][-1]["len"])' "$ST/requests.jsonl")"
t_reload
out=$(curl -s -m 40 --cacert "$CA" --http2 -w ' %{http_version} %{http_code}' \
      -H "Authorization: Bearer $SURR" --data-binary @"$T_DIR/body.bin" https://api.github.com/upload2)
rm -f "$ST/delay"
t_contains "HTTP/2 POST of 300 kB during a mint: 200" "$out" " 2 200"
t_eq "... the whole body arrived" 300000 \
    "$("$PY" -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["path"]=="/upload2"][-1]["len"])' "$ST/requests.jsonl")"
t_eq "... one mint each" $((m0 + 2)) "$(mints)"

# ---- a client that gives up while it waits; a token request that never answers ---------------
t_reload
echo 2 > "$ST/delay"
m0=$(mints)
curl -s -m 0.5 --cacert "$CA" -o /dev/null -H "Authorization: Bearer $SURR" https://api.github.com/gone
t_eq "a client gone while it waited: curl gave up" 28 "$?"
sleep 2.5
rm -f "$ST/delay"
out=$(get https://api.github.com/after -H "Authorization: Bearer $SURR")
t_contains "... the mint still filled the cache: the next request goes through" "$out" " 200"
t_logged "... cached" '^allowed GET https://api\.github\.com/after -> 200 \[github-app: cached\]'
t_eq "... one mint" $((m0 + 1)) "$(mints)"
t_eq "... the request that was given up never reached the API" "<none>" "$(auth_at /gone)"
# (the entry's "timeout": 2 s instead of the default 30, by a reload of the replacements)
cp "$T_DIR/repl.json" "$T_DIR/repl.keep"
sed -i 's/"permissions": {"contents": "write"}, /&"timeout": 2, /' "$T_DIR/repl.json"
t_reload
echo 4 > "$ST/delay"
start=$SECONDS
out=$(get https://api.github.com/slow -H "Authorization: Bearer $SURR")
took=$((SECONDS - start))
rm -f "$ST/delay"
t_contains "a token request unanswered for the entry's timeout (2 s): 502" "$out" " 502"
t_check "... after 2 s, not the default 30 (took $took s)" test "$took" -lt 4
t_logged "... logged as a timeout" \
    '^GitHub App token refresh failed for GET https://api\.github\.com/slow: the token request timed out after 2 s$'
cp "$T_DIR/repl.keep" "$T_DIR/repl.json"

# ---- G3: an expired token is minted anew -----------------------------------------------------
t_reload
echo 302 > "$ST/expires_in" # valid for 2 s, then inside the 300 s refresh margin
m0=$(mints)
get https://api.github.com/g3a -H "Authorization: Bearer $SURR" > /dev/null
t_eq "G3: a mint" $((m0 + 1)) "$(mints)"
get https://api.github.com/g3b -H "Authorization: Bearer $SURR" > /dev/null
t_eq "G3: within its life: cached, no mint" $((m0 + 1)) "$(mints)"
sleep 3
rm -f "$ST/expires_in"
get https://api.github.com/g3c -H "Authorization: Bearer $SURR" > /dev/null
t_eq "G3: 300 s before its expiry: a new mint" $((m0 + 2)) "$(mints)"
t_eq "G3: the new token went out" "Bearer ${REAL}_$((m0 + 2))" "$(auth_at /g3c)"
get https://api.github.com/g3d -H "Authorization: Bearer $SURR" > /dev/null
t_eq "G3: the cache was updated (the next one is cached)" "Bearer ${REAL}_$((m0 + 2)) $((m0 + 2))" \
    "$(auth_at /g3d) $(mints)"

# ---- G4: a failed mint ------------------------------------------------------------------------
t_reload
echo fail > "$ST/mode"
out=$(get https://api.github.com/g4 -H "Authorization: Bearer $SURR")
t_eq "G4: 502 with the reference's body" \
    '{"error": "github_app_token_refresh_failed", "message": "Failed to refresh GitHub App installation token"} 502' "$out"
t_logged "G4: the loud line" \
    '^GitHub App token refresh failed for GET https://api\.github\.com/g4: the token endpoint answered HTTP 500$'
t_logged "G4: allowed ... -> 502 [github-app: refresh-failed], masked 0" \
    '^allowed GET https://api\.github\.com/g4 -> 502 \[github-app: refresh-failed\]$'
t_eq "G4: nothing reached the API" "<none>" "$(auth_at /g4)"
echo garbage > "$ST/mode"
out=$(get https://api.github.com/g4b -H "Authorization: Bearer $SURR")
t_contains "G4: an answer without a token: 502" "$out" " 502"
t_logged "G4: ... and why" \
    '^GitHub App token refresh failed for GET https://api\.github\.com/g4b: the answer has no "token" string$'
rm -f "$ST/mode"
out=$(get https://wrongkey.example.com/g4c -H "Authorization: Bearer $SURR3")
t_contains "G4: a JWT signed with another key: the API refuses it, 502" "$out" " 502"
t_logged "G4: ... HTTP 401 logged" \
    '^GitHub App token refresh failed for GET https://wrongkey\.example\.com/g4c: the token endpoint answered HTTP 401$'
n=$(mints)
t_eq "G4: ... the fake API saw a JWT that does not verify" False "$(mint_field "$n" 'd["jwt_ok"]')"
out=$(get https://api.github.com/g4d -H "Authorization: Bearer $SURR")
t_contains "after the failures, a good mint again" "$out" " 200"

# ---- nothing secret in the log or on stderr ---------------------------------------------------
leak=0
for v in "$REAL" "$KEY_LINE" "PRIVATE KEY"; do
    grep -qF -- "$v" "$T_DIR/net.log" "$T_DIR/airlock.err" && { leak=1; echo "found: ${v:0:12}..."; }
done
while read -r jwt; do
    [ -n "$jwt" ] && grep -qF -- "${jwt##*.}" "$T_DIR/net.log" "$T_DIR/airlock.err" && leak=1
    [ -n "$jwt" ] && grep -qF -- "${jwt%.*}" "$T_DIR/net.log" "$T_DIR/airlock.err" && leak=1
done < <("$PY" -c 'import json,sys
for l in open(sys.argv[1]): print(json.loads(l)["jwt"] or "")' "$ST/mints.jsonl")
t_eq "no token, key or JWT in the network log or on stderr" 0 "$leak"

kill -0 "$AIRLOCK_PID" 2>/dev/null
t_check "airlock alive" test $? -eq 0
# SIGTERM while a request waits for a token: the wait ends with the client, airlock exits at once
t_reload
echo 20 > "$ST/delay"
m0=$(mints)
curl -s -m 30 --cacert "$CA" -o /dev/null -H "Authorization: Bearer $SURR" https://api.github.com/term &
cpid=$!
# shellcheck disable=SC2016 # expanded by until_ok's eval
until_ok '[ "$(mints)" -gt "$m0" ]'
t0=$SECONDS
t_stop_airlock
t_eq "SIGTERM while a request waits for its token: exit 0" "0" "$?"
t_check "... within 5 s (the token request does not hold the loop)" test $((SECONDS - t0)) -le 5
wait "$cpid" 2>/dev/null
rm -f "$ST/delay"
t_done
