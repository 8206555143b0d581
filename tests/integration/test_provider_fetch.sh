#!/bin/bash
# URLs the model provider fetches (docs/anthropic-tools.md, "URLs the provider fetches"): an
# image or document block with a url source, an mcp_servers entry, an OpenAI input_image, a
# block type or top-level field airlock does not know that carries a URL, and a body with a
# duplicate key are refused 403 before any byte goes upstream, naming the JSON path; an https
# URL on a host the allowlist opens to unrestricted GET goes through unchanged; the allowlist's
# provider_fetch_pass (read again on SIGHUP) lets a named unknown block type through.
# Upstream: a recorder of every byte (the setup of test_graphql.sh's tool-trim part).
. "$(dirname "$0")/lib.sh"
t_enter_netns "$@"
HERE=$(cd "$(dirname "$0")" && pwd)

write_allow() { # write_allow [provider_fetch_pass line]
    cat > "$T_DIR/allow.yaml" <<YAML
domains: [img.example]
url_prefixes:
  - host: api.anthropic.com
    path: /v1/messages*
    methods: [POST]
  - host: api.openai.com
    path: /v1/*
    methods: [POST]
  - host: docs.example
    path: /public/*
  - host: mcp.example
$1
YAML
}
write_allow ""
ip addr add 127.0.0.3/8 dev lo 2>/dev/null || true
mkdir -p "$T_DIR/rec"
"$PY" "$HERE/leak_peers.py" recorder 127.0.0.3 80 "$T_DIR/rec" > /dev/null 2>&1 &
T_PIDS+=($!)
t_wait_port 127.0.0.3 80 || exit 1
t_start_resolver --address=/api.anthropic.com/127.0.0.3 --address=/api.openai.com/127.0.0.3
t_start_airlock "$T_DIR/allow.yaml" --allow-upstream-cidr 127.0.0.3/32 || exit 1

nrec() { ls "$T_DIR"/rec | wc -l; }
last_rec() { cat "$(ls -t "$T_DIR"/rec/conn-*.bin | head -1)"; }
post() { curl -sS -m 10 -w ' %{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$2" "http://$1"; }
img() { printf '{"type":"image","source":{"type":"url","url":"%s"}}' "$1"; }

body='{"model":"m","max_tokens":5,"messages":[{"role":"user","content":['$(img https://img.example/cat.png)',{"type":"text","text":"what is it?"}]}]}'
out=$(post api.anthropic.com/v1/messages "$body")
t_contains "an image url on a host open to GET: allowed" "$out" " 200"
t_contains "... the upstream got the body unchanged" "$(last_rec)" $'\r\n\r\n'"$body"

n0=$(nrec)
body='{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"?"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":['$(img https://evil.test/x.png)']}]}]}'
out=$(post api.anthropic.com/v1/messages "$body")
t_contains "an image url in a tool_result on a host not allowed: 403" "$out" " 403"
t_contains "... provider_fetch_blocked" "$out" '"error": "provider_fetch_blocked"'
t_contains "... the detail is the JSON path" "$out" \
    '"detail": "messages[2].content[0].content[0].source.url"}'
t_logged "... logged BLOCKED with the path and the reason" \
    '^BLOCKED POST http://api\.anthropic\.com/v1/messages -> 403 \[provider-fetch: messages\[2\]\.content\[0\]\.content\[0\]\.source\.url: its host is not open to unrestricted GET in the network allowlist\]$'

out=$(post api.anthropic.com/v1/messages '{"model":"m","system":[{"type":"document","source":{"type":"url","url":"https://docs.example/public/a.pdf"}}]}')
t_contains "a document url on a path-restricted host (not open to all GET): 403" "$out" \
    '"detail": "system[0].source.url"}'
out=$(post api.anthropic.com/v1/messages '{"model":"m","messages":[{"role":"user","content":['$(img https://img.example@evil.test/x)']}]}')
t_contains "user info in the url: 403" "$out" 'user info'
out=$(post api.anthropic.com/v1/messages '{"model":"m","messages":[{"role":"user","content":['$(img http://img.example/x)']}]}')
t_contains "plain http: 403" "$out" 'not https'

out=$(post api.anthropic.com/v1/messages '{"model":"m","mcp_servers":[{"type":"url","url":"https://evil.test/mcp","name":"e","authorization_token":"t"}]}')
t_contains "an mcp_servers url on a host not allowed: 403" "$out" '"detail": "mcp_servers[0].url"}'
out=$(post api.anthropic.com/v1/messages '{"model":"m","mcp_servers":[{"type":"url","url":"https://mcp.example/mcp","name":"ok"}]}')
t_contains "an mcp_servers url on a host open to GET and POST: allowed" "$out" " 200"

out=$(post api.anthropic.com/v1/messages/batches '{"requests":[{"custom_id":"a","params":{"model":"m","messages":[{"role":"user","content":[{"type":"video","source":{"href":"https://evil.test/v.mp4"}}]}]}}]}')
t_contains "a block type airlock does not know that carries a URL: 403 provider_fetch_unknown" \
    "$out" '"error": "provider_fetch_unknown"'
t_contains "... naming where the URL is" "$out" \
    '"detail": "requests[0].params.messages[0].content[0].source.href"}'
out=$(post api.anthropic.com/v1/messages '{"model":"m","callback_url":"https://evil.test/"}')
t_contains "a top-level field airlock does not know that carries a URL: 403" "$out" \
    '"detail": "callback_url"}'

out=$(post api.anthropic.com/v1/messages '{"model":"m","messages":[{"role":"user","content":"a","content":"b"}]}')
t_contains "a duplicate key: 403 request_json_duplicate_key" "$out" \
    '"error": "request_json_duplicate_key"'
t_contains "... naming the key" "$out" '"detail": "<duplicate-key \"content\">"}'

out=$(post api.openai.com/v1/responses '{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://evil.test/a.png"}]}]}')
t_contains "OpenAI Responses input_image on a host not allowed: 403" "$out" \
    '"detail": "input[0].content[0].image_url"}'
out=$(post api.openai.com/v1/chat/completions '{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://evil.test/a.png"}}]}]}')
t_contains "OpenAI Chat Completions image_url on a host not allowed: 403" "$out" \
    '"detail": "messages[0].content[0].image_url.url"}'
t_eq "none of the refused requests reached the upstream (one allowed mcp_servers did)" \
    "$((n0 + 1))" "$(nrec)"
body='{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}'
out=$(post api.openai.com/v1/responses "$body")
t_contains "OpenAI input_image with a data: URL: allowed" "$out" " 200"
t_contains "... unchanged" "$(last_rec)" $'\r\n\r\n'"$body"

# the operator's opt-in, read on SIGHUP
write_allow "provider_fetch_pass: [video]"
t_reload || exit 1
body='{"model":"m","messages":[{"role":"user","content":[{"type":"video","source":{"href":"https://evil.test/v.mp4"}}]}]}'
out=$(post api.anthropic.com/v1/messages "$body")
t_contains "after provider_fetch_pass: [video] and SIGHUP: the video block goes through" "$out" " 200"
t_contains "... unchanged" "$(last_rec)" $'\r\n\r\n'"$body"
out=$(post api.anthropic.com/v1/messages '{"model":"m","messages":[{"role":"user","content":[{"type":"video","poster":'$(img https://evil.test/p.png)'}]}]}')
t_contains "... a url source inside it is still checked" "$out" \
    '"detail": "messages[0].content[0].poster.source.url"}'

t_done
