/* Provider fetches (docs/anthropic-tools.md, "URLs the provider fetches"): a model provider
 * fetches some URLs named in a request body from its own side (image and document blocks with a
 * url source, remote MCP servers, OpenAI's image_url/file_url parts), where airlock never sees
 * the fetch. This module walks a parsed request body and refuses every such URL that is not
 * https on a host the allowlist opens to unrestricted GET, and every block type or top-level
 * field it does not know that carries a URL, unless the allowlist's provider_fetch_pass names
 * it. The Anthropic Messages filter (addon_tooldomains.c) calls it; the OpenAI endpoints have
 * their own request-body filter here. */
#ifndef ADDON_PROVIDER_H
#define ADDON_PROVIDER_H

#include <jansson.h>

#include "addons/addon.h"

struct addon_policy;

#define ADDON_PROVIDER_BODY_CAP (32 * 1024 * 1024) /* a larger OpenAI body is refused */
#define ADDON_PROVIDER_DEPTH_MAX 2048 /* nesting walked; jansson refuses deeper anyway */
#define ADDON_PROVIDER_PASS_MAX 256   /* names in provider_fetch_pass */
#define ADDON_PROVIDER_NAME_MAX 64    /* bytes of one name in provider_fetch_pass */

/* Which provider's rules apply: they differ only for the web_search tools (Anthropic's are
 * trimmed by addon_tooldomains.c; OpenAI's need filters.allowed_domains). */
#define ADDON_PROVIDER_ANTHROPIC 0
#define ADDON_PROVIDER_OPENAI 1

/* Checks the parsed body (borrowed) against policy p (borrowed; NULL blocks every fetch) under
 * dialect's rules. ADDON_NEXT when every provider-fetched URL is allowed; ADDON_ANSWER with ans
 * filled (403, detail: the JSON path, e.g. messages[2].content[0].source.url) and a
 * "provider-fetch: ..." annotation on req; PX_ENOMEM. */
int addon_provider_check(const struct addon_policy *p, const json_t *body, int dialect,
                         addon_req_t *req, addon_answer_t *ans);

/* Parses a request body for a filter: duplicate keys anywhere are refused. 0 with *out (one
 * reference); or ADDON_ANSWER with ans filled (403 request_json_duplicate_key, detail
 * <duplicate-key: "name">) when the only fault is a duplicate key; or PX_EPARSE for any other
 * invalid JSON (the caller answers). flags are added to jansson's. */
int addon_provider_parse(const char *data, size_t len, size_t flags, json_t **out, addon_req_t *req,
                         addon_answer_t *ans);

/* The OpenAI request-body filter (POST api.openai.com /v1/responses, /v1/chat/completions):
 * refuses, never rewrites. Static storage; comes after the allowlist in the addon list. */
const addon_t *addon_provider(void);

#endif
