/* Provider fetches: the walk over a request body (addon_provider.h). Every object with a string
 * "type" is a block: a type whose URL the provider fetches has that URL checked
 * (addon_provider_url.c); a known type is walked on; a type airlock does not know is scanned
 * once for anything URL-shaped (a key ending in "url" or "uri", or a string starting "scheme://")
 * and refused when it has one. The body's top-level fields are treated alike: a field airlock does
 * not know that carries a URL is refused. The walk uses an explicit stack as deep as the body
 * (jansson caps nesting at 2048) and visits each value at most twice (walk, and one scan). */
#include "addons/addon_provider_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "base/px_err.h"
#include "base/px_grow.h"
#include "base/px_host.h"

typedef enum pv_rule {
    PV_UNKNOWN = 0,
    PV_KNOWN,      /* understood; nothing in it is fetched by the provider */
    PV_SOURCE,     /* {"type": "url", "url": U}: Anthropic's url source and mcp_servers entries */
    PV_IMAGE,      /* OpenAI input_image / computer_screenshot: image_url (https or data:) */
    PV_FILE,       /* OpenAI input_file: file_url (https or data:) */
    PV_CHAT_IMAGE, /* Chat Completions image_url part: image_url.url (https or data:) */
    PV_MCP,        /* OpenAI Responses remote MCP tool: server_url */
} pv_rule_t;

static const struct {
    const char *type;
    pv_rule_t rule;
} pv_types[] = {
    {"url", PV_SOURCE},
    {"input_image", PV_IMAGE},
    {"computer_screenshot", PV_IMAGE},
    {"input_file", PV_FILE},
    {"image_url", PV_CHAT_IMAGE},
    {"mcp", PV_MCP},
    /* Anthropic Messages: content blocks, sources, citations. URLs in search results, citations
     * and the server tools' records are what the provider already fetched, not asks to fetch */
    {"text", PV_KNOWN},
    {"image", PV_KNOWN},
    {"document", PV_KNOWN},
    {"base64", PV_KNOWN},
    {"content", PV_KNOWN},
    {"file", PV_KNOWN},
    {"thinking", PV_KNOWN},
    {"redacted_thinking", PV_KNOWN},
    {"tool_use", PV_KNOWN},
    {"tool_result", PV_KNOWN},
    {"server_tool_use", PV_KNOWN},
    {"mcp_tool_use", PV_KNOWN},
    {"mcp_tool_result", PV_KNOWN},
    {"web_search_tool_result", PV_KNOWN},
    {"web_search_tool_result_error", PV_KNOWN},
    {"web_search_result", PV_KNOWN},
    {"web_fetch_tool_result", PV_KNOWN},
    {"web_fetch_tool_result_error", PV_KNOWN},
    {"web_fetch_result", PV_KNOWN},
    {"search_result", PV_KNOWN},
    {"char_location", PV_KNOWN},
    {"page_location", PV_KNOWN},
    {"content_block_location", PV_KNOWN},
    {"web_search_result_location", PV_KNOWN},
    {"search_result_location", PV_KNOWN},
    {"container_upload", PV_KNOWN},
    {"code_execution_tool_result", PV_KNOWN},
    {"bash_code_execution_tool_result", PV_KNOWN},
    {"text_editor_code_execution_tool_result", PV_KNOWN},
    /* OpenAI Responses and Chat Completions: items, parts, annotations */
    {"message", PV_KNOWN},
    {"input_text", PV_KNOWN},
    {"output_text", PV_KNOWN},
    {"input_audio", PV_KNOWN},
    {"refusal", PV_KNOWN},
    {"function_call", PV_KNOWN},
    {"function_call_output", PV_KNOWN},
    {"reasoning", PV_KNOWN},
    {"summary_text", PV_KNOWN},
    {"reasoning_text", PV_KNOWN},
    {"web_search_call", PV_KNOWN},
    {"search", PV_KNOWN},
    {"open_page", PV_KNOWN},
    {"find", PV_KNOWN},
    {"url_citation", PV_KNOWN},
    {"file_citation", PV_KNOWN},
    {"container_file_citation", PV_KNOWN},
    {"file_path", PV_KNOWN},
    {"file_search_call", PV_KNOWN},
    {"computer_call", PV_KNOWN},
    {"computer_call_output", PV_KNOWN},
    {"code_interpreter_call", PV_KNOWN},
    {"logs", PV_KNOWN},
    {"image_generation_call", PV_KNOWN},
    {"mcp_call", PV_KNOWN},
    {"mcp_list_tools", PV_KNOWN},
    {"mcp_approval_request", PV_KNOWN},
    {"mcp_approval_response", PV_KNOWN},
    {"custom_tool_call", PV_KNOWN},
    {"custom_tool_call_output", PV_KNOWN},
    {"item_reference", PV_KNOWN},
    {"function", PV_KNOWN},
    {"custom", PV_KNOWN},
    {"json_schema", PV_KNOWN},
};

/* Top-level fields of the Messages, Batches, Responses and Chat Completions bodies. An unknown
 * one (a new beta feature) is refused when it carries a URL. */
static const char *const pv_fields[] = {"model",
                                        "messages",
                                        "system",
                                        "max_tokens",
                                        "metadata",
                                        "stop_sequences",
                                        "stream",
                                        "temperature",
                                        "top_k",
                                        "top_p",
                                        "tools",
                                        "tool_choice",
                                        "thinking",
                                        "service_tier",
                                        "mcp_servers",
                                        "container",
                                        "context_management",
                                        "output_format",
                                        "output_config",
                                        "requests",
                                        "custom_id",
                                        "params",
                                        "input",
                                        "instructions",
                                        "max_output_tokens",
                                        "max_tool_calls",
                                        "parallel_tool_calls",
                                        "previous_response_id",
                                        "conversation",
                                        "reasoning",
                                        "store",
                                        "stream_options",
                                        "text",
                                        "truncation",
                                        "user",
                                        "include",
                                        "background",
                                        "prompt",
                                        "prompt_cache_key",
                                        "prompt_cache_retention",
                                        "safety_identifier",
                                        "top_logprobs",
                                        "frequency_penalty",
                                        "logit_bias",
                                        "logprobs",
                                        "max_completion_tokens",
                                        "n",
                                        "presence_penalty",
                                        "response_format",
                                        "seed",
                                        "stop",
                                        "functions",
                                        "function_call",
                                        "modalities",
                                        "audio",
                                        "prediction",
                                        "reasoning_effort",
                                        "verbosity",
                                        "web_search_options",
                                        NULL};

/* Keys whose values the provider reads as data, never as blocks: JSON Schemas (whose "type"
 * and "default" would look like blocks and URLs) and free-form metadata. */
static const char *const pv_opaque[] = {"input_schema", "parameters", "schema", "metadata", NULL};

#define PV_F_ROOT 1u  /* a request body (the root, or a Batches requests[i].params) */
#define PV_F_CLEAN 2u /* inside a value already scanned and found without URLs */

typedef struct pv_frame {
    const json_t *v;
    const char *key; /* key in the parent object; NULL for an array element or the root */
    size_t idx;      /* index in the parent array */
    void *iter;      /* the next member (objects) */
    size_t next;     /* the next element (arrays) */
    const char *type;
    unsigned flags;
} pv_frame_t;

typedef struct pv_stack {
    pv_frame_t *f;
    size_t n, cap;
} pv_stack_t;

typedef struct pv_ctx {
    const addon_policy_t *policy;
    addon_req_t *req;
    addon_answer_t *ans;
    pv_stack_t walk;
    pv_stack_t scan; /* reused by every scan */
    int openai;
} pv_ctx_t;

static int pv_in(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i] != NULL; i++) {
        if (s[0] == list[i][0] && strcmp(s, list[i]) == 0)
            return 1;
    }
    return 0;
}

static pv_rule_t pv_rule(const char *type)
{
    for (size_t i = 0; i < sizeof(pv_types) / sizeof(pv_types[0]); i++) {
        if (type[0] == pv_types[i].type[0] && strcmp(type, pv_types[i].type) == 0)
            return pv_types[i].rule;
    }
    return PV_UNKNOWN;
}

static int pv_push(pv_stack_t *s, const json_t *v, const char *key, size_t idx, unsigned flags)
{
    if (s->n >= ADDON_PROVIDER_DEPTH_MAX + 2)
        return PX_ETOOBIG; /* jansson never builds deeper; a tree made otherwise could */
    int rc = px_grow(&s->f, &s->cap, s->n + 1, sizeof(*s->f), 32, ADDON_PROVIDER_DEPTH_MAX + 2);
    if (rc != 0)
        return rc;
    const json_t *t = json_object_get(v, "type");
    s->f[s->n++] = (pv_frame_t){
        .v = v,
        .key = key,
        .idx = idx,
        .iter = json_is_object(v) ? json_object_iter((json_t *)v) : NULL,
        .type = json_is_string(t) ? json_string_value(t) : NULL,
        .flags = flags,
    };
    return 0;
}

/* The next child of the top frame into *v, *key, *idx; 0 when there is none. */
static int pv_child(pv_frame_t *f, const json_t **v, const char **key, size_t *idx)
{
    if (json_is_object(f->v) && f->iter != NULL) {
        *key = json_object_iter_key(f->iter);
        *v = json_object_iter_value(f->iter);
        *idx = 0;
        f->iter = json_object_iter_next((json_t *)f->v, f->iter);
        return 1;
    }
    if (json_is_array(f->v) && f->next < json_array_size(f->v)) {
        *key = NULL;
        *idx = f->next;
        *v = json_array_get(f->v, f->next++);
        return 1;
    }
    return 0;
}

/* Appends the path of frames [from, s->n) to buf: "messages[2].content[0]". */
static void pv_path(const pv_stack_t *s, size_t from, char *buf, size_t cap, size_t *pos)
{
    for (size_t i = from; i < s->n && *pos + 1 < cap; i++) {
        const pv_frame_t *f = &s->f[i];
        if (f->key == NULL) {
            *pos += (size_t)snprintf(buf + *pos, cap - *pos, "[%zu]", f->idx);
        } else {
            if (*pos > 0 && *pos + 1 < cap)
                buf[(*pos)++] = '.';
            for (const unsigned char *c = (const unsigned char *)f->key; *c && *pos + 5 < cap;
                 c++) {
                if (*c > 0x20 && *c < 0x7f && *c != '[' && *c != ']' && *c != '\\' && *c != '"')
                    buf[(*pos)++] = (char)*c;
                else
                    *pos += (size_t)snprintf(buf + *pos, cap - *pos, "\\x%02x", *c);
            }
        }
        if (*pos >= cap)
            *pos = cap - 1;
    }
    buf[*pos < cap ? *pos : cap - 1] = '\0';
}

static int pv_answer(pv_ctx_t *c, const char *error, const char *path, const char *tag,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int pv_answer(pv_ctx_t *c, const char *error, const char *path, const char *tag,
                     const char *fmt, ...)
{
    addon_answer_t *ans = c->ans;
    ans->status = 403;
    ans->error = error;
    ans->verdict = "BLOCKED";
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "%s", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ans->message, sizeof(ans->message), fmt, ap);
    va_end(ap);
    if (c->req != NULL)
        addon_req_annotate(c->req, "provider-fetch: %.200s: %s", path, tag);
    return ADDON_ANSWER;
}

/* The refusal of the URL at the current walk position plus key (may be NULL). */
static int pv_refuse_url(pv_ctx_t *c, const char *key, int why, const char *host)
{
    char path[ADDON_ANNOT_MAX];
    size_t pos = 0;
    pv_path(&c->walk, 1, path, sizeof(path), &pos);
    if (key != NULL)
        snprintf(path + pos, sizeof(path) - pos, "%s%s", pos > 0 ? "." : "", key);
    char host_note[PV_HOST_MAX + 8] = "";
    if (why == PV_URL_CLOSED || why == PV_URL_NO_POST)
        snprintf(host_note, sizeof(host_note), " (%s)", host);
    return pv_answer(c, "provider_fetch_blocked", path, addon__provider_url_reason(why),
                     "The model provider would fetch the URL at %s from its own side, outside "
                     "the network allowlist, and it is refused: %s%s. airlock lets the provider "
                     "fetch only https URLs on hosts the allowlist opens to unrestricted GET. "
                     "Send the content inline (base64) instead, or ask the user to open the host "
                     "in the network allowlist.",
                     path, addon__provider_url_reason(why), host_note);
}

/* Checks the URL string value v under key of the top frame. */
static int pv_url(pv_ctx_t *c, const char *key, const json_t *v, unsigned how)
{
    char host[PV_HOST_MAX + 1];
    int r = json_is_string(v)
                ? addon__provider_url_check(c->policy, json_string_value(v), json_string_length(v),
                                            how, host, sizeof(host))
                : PV_URL_NOT_STRING;
    return r == PV_URL_OK ? ADDON_NEXT : pv_refuse_url(c, key, r, host);
}

static int pv_opaque_input(const pv_frame_t *f, const char *key)
{
    static const char *const tools[] = {"tool_use", "server_tool_use", "mcp_tool_use", NULL};
    return f->type != NULL && strcmp(key, "input") == 0 && pv_in(f->type, tools);
}

static int pv_urlish_key(const char *k)
{
    size_t n = strlen(k);
    return n >= 3 && (strcasecmp(k + n - 3, "url") == 0 || strcasecmp(k + n - 3, "uri") == 0);
}

/* 1 when s[0..len) starts with "scheme://" (an absolute URL with an authority). */
static int pv_urlish_value(const char *s, size_t len)
{
    size_t i = 0;
    if (len == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    while (i < len && i < 33 && s[i] != ':') {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '+' || ch == '.' || ch == '-'))
            return 0;
        i++;
    }
    return i + 2 < len && s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/';
}

static int pv_urlish(const char *key, const json_t *v)
{
    return (key != NULL && pv_urlish_key(key)) ||
           (json_is_string(v) && pv_urlish_value(json_string_value(v), json_string_length(v)));
}

/* Scans v (under key, a top-level field's name; NULL for a block, whose own "type" is then not
 * looked at) for a URL: 1 with the path inside v appended to buf at *pos, 0 when there is none,
 * or a negative error. */
static int pv_scan(pv_stack_t *s, const json_t *v, const char *key, char *buf, size_t cap,
                   size_t *pos)
{
    if (pv_urlish(key, v))
        return 1;
    s->n = 0;
    int rc = pv_push(s, v, key, 0, 0), hit = 0;
    while (rc == 0 && !hit && s->n > 0) {
        pv_frame_t *f = &s->f[s->n - 1];
        const json_t *cv;
        const char *ck;
        size_t ci;
        if (!pv_child(f, &cv, &ck, &ci)) {
            s->n--;
            continue;
        }
        if (ck != NULL && ((s->n == 1 && key == NULL && strcmp(ck, "type") == 0) ||
                           pv_in(ck, pv_opaque) || pv_opaque_input(f, ck)))
            continue; /* the block's own name; data the provider never fetches from */
        hit = pv_urlish(ck, cv);
        if (hit || json_is_object(cv) || json_is_array(cv))
            rc = pv_push(s, cv, ck, ci, 0);
    }
    if (hit && rc == 0)
        pv_path(s, 1, buf, cap, pos);
    return rc < 0 ? rc : hit;
}

/* The top frame is a block of a type airlock does not know (or a top-level field it does not
 * know: field 1, the value v under key): refused when it carries a URL. */
static int pv_unknown(pv_ctx_t *c, const json_t *v, const char *key, const char *name, int field)
{
    if (addon__provider_pass(c->policy, name, strlen(name)))
        return ADDON_NEXT;
    char inner[ADDON_ANNOT_MAX], path[ADDON_ANNOT_MAX];
    size_t ipos = 0, pos = 0;
    inner[0] = '\0';
    int hit = pv_scan(&c->scan, v, key, inner, sizeof(inner), &ipos);
    if (hit <= 0)
        return hit;
    /* the path is only written for a refusal: the walk of a clean body never prints */
    pv_path(&c->walk, 1, path, sizeof(path), &pos);
    if (key != NULL)
        pos += (size_t)snprintf(path + pos, sizeof(path) - pos, "%s%s", pos > 0 ? "." : "", key);
    if (ipos > 0 && pos + 1 < sizeof(path))
        snprintf(path + pos, sizeof(path) - pos, "%s%s", inner[0] == '[' ? "" : ".", inner);
    char tag[ADDON_PROVIDER_NAME_MAX * 4 + 32];
    snprintf(tag, sizeof(tag), "unknown %s '%.64s' carries a URL", field ? "field" : "type", name);
    return pv_answer(c, "provider_fetch_unknown", path, tag,
                     "The request carries a URL (at %s) in %s '%.64s' that airlock does not "
                     "know, so it cannot tell whether the model provider would fetch it from its "
                     "own side, outside the network allowlist. If it may, ask the user to add "
                     "'%.64s' to provider_fetch_pass in the network allowlist.",
                     path, field ? "the top-level field" : "a block of type", name, name);
}

/* An OpenAI web_search tool: the provider opens pages of its choosing unless
 * filters.allowed_domains limits it, so the list must be there and name only open hosts. */
static int pv_search(pv_ctx_t *c, pv_frame_t *f)
{
    const json_t *list = json_object_get(json_object_get(f->v, "filters"), "allowed_domains");
    char path[ADDON_ANNOT_MAX];
    size_t pos = 0;
    pv_path(&c->walk, 1, path, sizeof(path), &pos);
    if (!json_is_array(list) || json_array_size(list) == 0)
        return pv_answer(
            c, "provider_fetch_blocked", path, "web search without allowed_domains",
            "The web search tool at %s has no filters.allowed_domains, so the model "
            "provider could open any page from its own side, outside the network "
            "allowlist. Name the hosts in filters.allowed_domains; airlock lets through "
            "only hosts the network allowlist opens to unrestricted GET.",
            path);
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *d = json_array_get(list, i);
        char host[PV_HOST_MAX + 1];
        int ok =
            json_is_string(d) &&
            addon__provider_host_ok(json_string_value(d), json_string_length(d)) &&
            px_host_norm(host, sizeof(host), json_string_value(d), json_string_length(d)) >= 0 &&
            addon_policy_host_get_open(c->policy, (addon_str_t){host, strlen(host)});
        if (!ok) {
            snprintf(path + pos, sizeof(path) - pos, ".filters.allowed_domains[%zu]", i);
            return pv_answer(c, "provider_fetch_blocked", path, "domain not open",
                             "The web search tool's domain at %s is not a host the network "
                             "allowlist opens to unrestricted GET, so airlock does not let the "
                             "model provider open its pages on the agent's behalf. Remove it, or "
                             "ask the user to open the host in the network allowlist.",
                             path);
        }
    }
    return ADDON_NEXT;
}

/* The checks of a block whose frame is on top of the walk. */
static int pv_block(pv_ctx_t *c, pv_frame_t *f)
{
    const json_t *v = f->v;
    switch (pv_rule(f->type)) {
    case PV_SOURCE: {
        /* an mcp_servers entry: the provider also POSTs to it */
        size_t n = c->walk.n;
        int mcp = n >= 3 && c->walk.f[n - 2].key != NULL &&
                  strcmp(c->walk.f[n - 2].key, "mcp_servers") == 0 &&
                  (c->walk.f[n - 3].flags & PV_F_ROOT);
        return pv_url(c, "url", json_object_get(v, "url"), mcp ? PV_URL_POST : 0);
    }
    case PV_IMAGE:
    case PV_FILE: {
        const char *key = pv_rule(f->type) == PV_IMAGE ? "image_url" : "file_url";
        const json_t *u = json_object_get(v, key);
        return u == NULL || json_is_null(u) ? ADDON_NEXT : pv_url(c, key, u, PV_URL_DATA);
    }
    case PV_CHAT_IMAGE: {
        const json_t *u = json_object_get(v, "image_url");
        if (json_is_object(u)) {
            int rc = pv_push(&c->walk, u, "image_url", 0, f->flags);
            if (rc != 0)
                return rc;
            rc = pv_url(c, "url", json_object_get(u, "url"), PV_URL_DATA);
            c->walk.n--;
            return rc;
        }
        return pv_url(c, "image_url", u, PV_URL_DATA);
    }
    case PV_MCP: {
        const json_t *u = json_object_get(v, "server_url");
        return u == NULL ? ADDON_NEXT : pv_url(c, "server_url", u, PV_URL_POST);
    }
    case PV_KNOWN:
        return ADDON_NEXT;
    case PV_UNKNOWN:
        break;
    }
    if (c->openai && strncmp(f->type, "web_search", 10) == 0)
        return pv_search(c, f);
    if (f->flags & PV_F_CLEAN)
        return ADDON_NEXT;
    int rc = pv_unknown(c, v, NULL, f->type, 0);
    if (rc == ADDON_NEXT)
        f->flags |= PV_F_CLEAN;
    return rc;
}

/* A Batches requests[i].params: a Messages body of its own (the top frame is requests[i]). */
static int pv_batch_params(const pv_stack_t *s, const char *key)
{
    size_t n = s->n;
    return n >= 3 && strcmp(key, "params") == 0 && s->f[n - 1].key == NULL &&
           s->f[n - 2].key != NULL && strcmp(s->f[n - 2].key, "requests") == 0 &&
           (s->f[n - 3].flags & PV_F_ROOT);
}

#define PV_F_SEEN 4u /* the frame's own checks ran */

static int pv_walk(pv_ctx_t *c, const json_t *root)
{
    int rc = pv_push(&c->walk, root, NULL, 0, PV_F_ROOT);
    while (rc == ADDON_NEXT && c->walk.n > 0) {
        pv_frame_t *f = &c->walk.f[c->walk.n - 1];
        if (!(f->flags & PV_F_SEEN)) {
            f->flags |= PV_F_SEEN;
            if (f->type != NULL)
                rc = pv_block(c, f);
            continue;
        }
        const json_t *cv;
        const char *ck;
        size_t ci;
        if (!pv_child(f, &cv, &ck, &ci)) {
            c->walk.n--;
            continue;
        }
        if (ck != NULL && (pv_in(ck, pv_opaque) || pv_opaque_input(f, ck)))
            continue;
        unsigned fl = f->flags & PV_F_CLEAN;
        if ((f->flags & PV_F_ROOT) && ck != NULL && !pv_in(ck, pv_fields)) {
            rc = pv_unknown(c, cv, ck, ck, 1);
            fl |= PV_F_CLEAN;
        }
        if (rc != ADDON_NEXT || !(json_is_object(cv) || json_is_array(cv)))
            continue;
        if (ck != NULL && pv_batch_params(&c->walk, ck))
            fl |= PV_F_ROOT;
        rc = pv_push(&c->walk, cv, ck, ci, fl);
    }
    return rc;
}

int addon_provider_check(const addon_policy_t *p, const json_t *body, int dialect, addon_req_t *req,
                         addon_answer_t *ans)
{
    pv_ctx_t c = {
        .policy = p,
        .req = req,
        .ans = ans,
        .openai = dialect == ADDON_PROVIDER_OPENAI,
    };
    int rc = pv_walk(&c, body);
    free(c.walk.f);
    free(c.scan.f);
    return rc;
}

int addon__provider_known(const char *name, size_t len)
{
    char buf[ADDON_PROVIDER_NAME_MAX + 1];
    if (len > ADDON_PROVIDER_NAME_MAX || memchr(name, '\0', len) != NULL)
        return 0;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return pv_rule(buf) != PV_UNKNOWN || pv_in(buf, pv_fields);
}
