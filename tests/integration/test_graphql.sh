#!/bin/bash
# Request-body filters (docs/graphql.md, docs/anthropic-tools.md): the GraphQL operation
# allowlist of a url_prefixes entry lets listed operations through to the upstream and refuses
# the others 403 before any byte goes upstream; the Anthropic tool-domain trim rewrites a
# Messages body (allowed_domains cut to the hosts the allowlist opens for GET) and the upstream
# receives the rewritten body with its new Content-Length. Upstream: a recorder of every byte.
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

cat > "$T_DIR/allow.yaml" <<'YAML'
domains: [pypi.org]
url_prefixes:
  - host: api.github.com
    path: /graphql
    methods: [POST]
    graphql:
      queries: [viewer, "repository*"]
      mutations: [addComment]
  - host: api.github.com
    path: /api/graphql*
    methods: [POST]
    graphql:
      queries: [viewer]
  - host: api.anthropic.com
    path: /v1/messages*
    methods: [POST]
YAML
SURR=ghp_SurrogateSurrogateSurrogate000001
REAL=ghp_REALVALUE0123456789abcdefREALVALUE
cat > "$T_DIR/repl.json" <<JSON
{"$SURR": {"value": "$REAL", "scopes": ["api.github.com"], "headers": ["Authorization"],
           "allow_plain_http": true}}
JSON
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_resolver --address=/api.github.com/127.0.0.3 --address=/api.anthropic.com/127.0.0.3
t_start_airlock "$T_DIR/allow.yaml" --replacements "$T_DIR/repl.json" \
    --allow-upstream-cidr 127.0.0.3/32 || exit 1

nrec() { ls "$T_DIR"/rec | wc -l; }
last_rec() { cat "$(ls -t "$T_DIR"/rec/conn-*.bin | head -1)"; }
gql() { curl -sS -m 10 -w ' %{http_code}' -H 'Content-Type: application/json' --data-binary "$1" \
    http://api.github.com/graphql; }

out=$(gql '{"query": "{ viewer { login } }"}')
t_eq "L12: an allowed query reaches the upstream" "ok 33 200" "$out"
t_logged "... tagged even when allowed" \
    '^allowed POST http://api\.github\.com/graphql -> 200 \[graphql-op: query/viewer\]$'

out=$(gql '{"query": "mutation($id: ID!) { addComment(input: {subjectId: $id, body: \"hi\"}) { clientMutationId } }", "variables": {"id": "I_1"}}')
t_contains "an allowed mutation reaches the upstream" "$out" " 200"

# the credential stage runs after the filter: real values only in requests it let through
out=$(curl -sS -m 10 -w ' %{http_code}' -H "Authorization: Bearer $SURR" \
    --data-binary '{"query": "{ viewer { login } }"}' http://api.github.com/graphql)
t_contains "an allowed query with a surrogate credential: 200" "$out" " 200"
t_contains "... the upstream got the real value" "$(last_rec)" "Authorization: Bearer $REAL"
t_logged "... logged with the operation, then the masking" \
    '^allowed POST http://api\.github\.com/graphql -> 200 \[graphql-op: query/viewer\] \[masked: 1\]$'
n0=$(nrec)
out=$(curl -sS -m 10 -w ' %{http_code}' -H "Authorization: Bearer $SURR" \
    --data-binary '{"query": "mutation { deleteRepository(input: {}) { clientMutationId } }"}' \
    http://api.github.com/graphql)
t_contains "a refused mutation with a surrogate credential: 403" "$out" " 403"
t_logged "... the log line has no masking: no real value was put in" \
    '^BLOCKED POST http://api\.github\.com/graphql -> 403 \[graphql-op: mutation/deleteRepository\]$'
t_eq "... and nothing reached the upstream" "$n0" "$(nrec)"

out=$(gql '{"query": "mutation { deleteRepository(input: {repositoryId: \"R_1\"}) { clientMutationId } }"}')
t_contains "L13: a mutation not in the list: 403" "$out" " 403"
t_contains "... graphql_operation_blocked" "$out" '"error": "graphql_operation_blocked"'
t_contains "... with the field as detail" "$out" '"detail": "deleteRepository"}'
t_logged "... logged BLOCKED with its tag" \
    '^BLOCKED POST http://api\.github\.com/graphql -> 403 \[graphql-op: mutation/deleteRepository\]$'
t_eq "... and nothing reached the upstream" "$n0" "$(nrec)"

out=$(gql '[{"query": "{ viewer { login } }"}]')
t_contains "a batched body (JSON array): 403 <batched>" "$out" '"detail": "<batched>"}'
out=$(gql '{"query": "{ viewer { login }"}')
t_contains "an unparseable document: 403 <unparseable>" "$out" '"detail": "<unparseable>"}'
out=$(gql '{"query": "{ ...F } fragment F on Query { viewer { login } }"}')
t_contains "a fragment spread at the root: 403 <fragment-spread>" "$out" '"detail": "<fragment-spread>"}'
out=$(gql '{"query": "subscription { issueEvents { id } }"}')
t_contains "a subscription with no subscriptions list: 403 subscription:<blocked>" "$out" \
    '"detail": "subscription:<blocked>"}'
head -c 1100000 /dev/zero | tr '\0' ' ' > "$T_DIR/big.json"
printf '{"query": "{ viewer { login } }"}' >> "$T_DIR/big.json"
out=$(curl -sS -m 20 -w ' %{http_code}' --data-binary @"$T_DIR/big.json" http://api.github.com/graphql)
t_contains "a body over 1 MiB: 403 <too-large>" "$out" '"detail": "<too-large>"}'
t_eq "... none of the refused requests reached the upstream" "$n0" "$(nrec)"

out=$(gql '{"query": "mutation { deleteRepository(input: {}) { clientMutationId } }", "query": "{ viewer { login } }"}')
t_contains "the key query twice (the last one allowed): 403 <duplicate-key>" "$out" \
    '"detail": "<duplicate-key>"}'
out=$(gql '{"query": "{ viewer { login } }", "variables": {"a": {"id": "R_1", "id": "R_2"}}}')
t_contains "a key twice deeper, in the variables: 403 <duplicate-key>" "$out" \
    '"detail": "<duplicate-key>"}'
out=$(gql '{"query": "{ viewer { login } }", "Query": "mutation { deleteRepository(input: {}) { clientMutationId } }"}')
t_contains "a second spelling of query: 403 <ambiguous-key>" "$out" '"detail": "<ambiguous-key>"}'
t_eq "... none of them reached the upstream" "$n0" "$(nrec)"

# the URL's GraphQL parameters (express-graphql and Rails run ?query= ahead of the body's)
gqlu() { curl -sS -m 10 -w ' %{http_code}' -H 'Content-Type: application/json' \
    --data-binary '{"query": "{ viewer { login } }"}' "http://api.github.com/api/graphql$1"; }
out=$(gqlu '?query=mutation%7BdeleteRepository(input:%7B%7D)%7BclientMutationId%7D%7D')
t_contains "?query= on an entry with a graphql block: 403 <query-params>" "$out" \
    '"detail": "<query-params>"}'
t_contains "... graphql_operation_blocked" "$out" '"error": "graphql_operation_blocked"'
t_logged "... logged BLOCKED with the tag" \
    '^BLOCKED POST http://api\.github\.com/api/graphql?query=mutation%7BdeleteRepository(input:%7B%7D)%7BclientMutationId%7D%7D -> 403 \[graphql-op: query-params\]$'
for q in '?x=1&Q%55ERY%5B%5D=m' '?x=1;operationName=B' '?variables=%7B%7D' '?+extensions+=1' \
    '?%u0071uery=m'; do
    out=$(gqlu "$q")
    t_contains "$q: 403 <query-params>" "$out" '"detail": "<query-params>"}'
done
t_eq "... none of them reached the upstream" "$n0" "$(nrec)"
out=$(gqlu '?x=query')
t_contains "other URL parameters pass, the body is checked: 200" "$out" " 200"
t_logged "... tagged with the body's operation" \
    '^allowed POST http://api\.github\.com/api/graphql?x=query -> 200 \[graphql-op: query/viewer\]$'
n0=$(nrec)

out=$(gql '{"query": "{ viewer { login } }"}')
t_contains "the connection pool still serves after the refusals" "$out" " 200"

# H12 and L14: the trim, through an encoded path
body='{"tools":[{"type":"web_fetch_20250910","allowed_domains":["pypi.org","airut.org"]}],"model":"m","temperature":0.7}'
out=$(curl -sS -m 10 -w ' %{http_code}' -H 'Content-Type: application/json' --data-binary "$body" \
    http://api.anthropic.com/v1/messag%65s)
t_contains "H12: POST /v1/messag%65s with a web_fetch tool: allowed" "$out" " 200"
want='{"tools":[{"type":"web_fetch_20250910","allowed_domains":["pypi.org"]}],"model":"m","temperature":0.7}'
t_contains "... the upstream got the rewritten body" "$(last_rec)" "$want"
t_contains "... with its new Content-Length" "$(last_rec)" "Content-Length: ${#want}"
t_logged "L14: the trim is tagged" \
    '^allowed POST http://api\.anthropic\.com/v1/messag%65s -> 200 \[tool-domains: web_fetch_20250910: dropped 1 of 2 domains: airut\.org\]$'

out=$(curl -sS -m 10 -w ' %{http_code}' -H 'Transfer-Encoding: chunked' --data-binary \
    '{"requests":[{"custom_id":"a","params":{"tools":[{"type":"web_search_20250305","allowed_domains":["evil.test"]}]}}]}' \
    http://api.anthropic.com/v1/messages/batches)
t_contains "a chunked Batches body: allowed" "$out" " 200"
want='{"requests":[{"custom_id":"a","params":{"tools":[{"type":"web_search_20250305"}]}}]}'
t_contains "... web_search with nothing left: the key is removed, sent with a Content-Length" \
    "$(last_rec)" "Content-Length: ${#want}"$'\r\n\r\n'"$want"

out=$(curl -sS -m 10 -w ' %{http_code}' --data-binary \
    '{"tools":[{"type":"web_fetch_20250910","blocked_domains":["evil.test"]}]}' \
    http://api.anthropic.com/v1/messages)
t_contains "blocked_domains: 403 blocklist_tool_config_unsupported" "$out" \
    '"error": "blocklist_tool_config_unsupported"'
out=$(curl -sS -m 10 -w ' %{http_code}' --data-binary \
    '{"tools":[{"type":"web_fetch_20250910","allowed_domains":["*.pypi.org"]}]}' \
    http://api.anthropic.com/v1/messages)
t_contains "a wildcard: 403 wildcard_tool_domain_unsupported" "$out" \
    '"error": "wildcard_tool_domain_unsupported"'
out=$(curl -sS -m 10 -w ' %{http_code}' --data-binary '{"tools": [' http://api.anthropic.com/v1/messages)
t_contains "invalid JSON: 403 tool_config_invalid" "$out" '"error": "tool_config_invalid"'
out=$(curl -sS -m 10 -w ' %{http_code}' --data-binary '{"model":"m","messages":[]}' \
    http://api.anthropic.com/v1/messages)
t_contains "a body without server-side tools goes through" "$out" " 200"
t_contains "... unchanged" "$(last_rec)" $'\r\n\r\n{"model":"m","messages":[]}'

t_done
