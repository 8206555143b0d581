/* The Anthropic server-side tool-domain trim. Anthropic's server-side tools (web_fetch_*,
 * web_search_*, ...) fetch URLs from Anthropic's side, where airlock never sees them; so on
 * every request to api.anthropic.com /v1/messages* each such tool's allowed_domains is cut to
 * the hosts the allowlist opens for unrestricted GET, a missing list becomes [] (default deny),
 * and what cannot be reconciled with an allowlist (blocked_domains, wildcards, unreadable JSON)
 * is refused. The rules are the reference proxy's; the differences are in
 * docs/anthropic-tools.md. */
#include "addons/addon_tooldomains.h"

#include <ctype.h>
#include <stdarg.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "addons/addon_provider.h"
#include "base/px_err.h"
#include "base/px_grow.h"
#include "base/px_host.h"
#include "base/px_path.h"

static const char *const td_covered[] = {"web_fetch_", "web_search_",     "computer_",
                                         "bash_",      "code_execution_", NULL};

typedef struct td_ctx {
    const addon_policy_t *policy;
    char tag[ADDON_TOOLDOMAINS_TAG_MAX + 32];
    size_t taglen;
    int changed;
} td_ctx_t;

/* 1 for api.anthropic.com and a path any reading of which (base/px_path) is /v1/messages... */
static int td_applies(const addon_req_t *req)
{
    return addon_req_host_is(req, "api.anthropic.com") && addon_req_path_under(req, "/v1/messages");
}

static int td_prefix(const char *type, const char *const *list)
{
    for (size_t i = 0; list[i] != NULL; i++) {
        if (strncasecmp(type, list[i], strlen(list[i])) == 0)
            return 1;
    }
    return 0;
}

/* Empty, leading '.', '*', '?' or white space: not a bare host name. */
static int td_wildcard(const char *d, size_t len)
{
    if (len == 0 || d[0] == '.')
        return 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)d[i];
        if (c == '*' || c == '?' || isspace(c) || (c >= 0x1C && c <= 0x1F))
            return 1;
        /* Unicode white space in UTF-8 (U+1680, U+2000-U+200A, U+2028/9, U+202F, U+205F,
         * U+3000): refused as the reference refuses str.isspace() */
        if (c == 0xC2 && i + 1 < len &&
            ((unsigned char)d[i + 1] == 0x85 || (unsigned char)d[i + 1] == 0xA0))
            return 1;
        if ((c == 0xE1 || c == 0xE2 || c == 0xE3) && i + 2 < len) {
            unsigned b = ((unsigned char)d[i + 1] << 8) | (unsigned char)d[i + 2];
            if ((c == 0xE1 && b == 0x9A80) || (c == 0xE2 && b >= 0x8080 && b <= 0x808A) ||
                (c == 0xE2 && (b == 0x80A8 || b == 0x80A9 || b == 0x80AF || b == 0x819F)) ||
                (c == 0xE3 && b == 0x8080))
                return 1;
        }
    }
    return 0;
}

/* Appends "; " between annotations, then printf text, cut at the tag cap. */
__attribute__((format(printf, 2, 3))) static void td_note(td_ctx_t *c, const char *fmt, ...)
{
    size_t cap = ADDON_TOOLDOMAINS_TAG_MAX;
    if (c->taglen > 0 && c->taglen < cap)
        c->taglen += (size_t)snprintf(c->tag + c->taglen, cap - c->taglen + 1, "; ");
    if (c->taglen < cap) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(c->tag + c->taglen, cap - c->taglen + 1, fmt, ap);
        va_end(ap);
        c->taglen += n > 0 ? (size_t)n : 0;
    }
    if (c->taglen > cap)
        c->taglen = cap;
}

/* s[0..len) for the log line into out (NUL-ended, cut to cap): printable ASCII as is except
 * '[', ']' and '\\', everything else as \xHH, so that a request cannot break the line or its
 * bracketed annotations. */
static const char *td_esc(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '[' && ch != ']' && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
    }
    out[o] = '\0';
    return out;
}

/* "a,b,c" (at most ADDON_TOOLDOMAINS_LOGGED, then ",+N more") of the strings in list. */
static void td_domains(const json_t *list, char *buf, size_t cap)
{
    size_t pos = 0, n = json_array_size(list);
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < ADDON_TOOLDOMAINS_LOGGED && pos < cap; i++) {
        const json_t *d = json_array_get(list, i);
        char e[256];
        int w = snprintf(buf + pos, cap - pos, "%s%s", i ? "," : "",
                         td_esc(json_string_value(d), json_string_length(d), e, sizeof(e)));
        pos += w > 0 ? (size_t)w : 0;
    }
    if (n > ADDON_TOOLDOMAINS_LOGGED && pos < cap)
        snprintf(buf + pos, cap - pos, ",+%zu more", n - ADDON_TOOLDOMAINS_LOGGED);
}

static int td_block(addon_answer_t *ans, const char *error, const char *detail, const char *msg)
{
    ans->status = 403;
    ans->error = error;
    ans->verdict = "BLOCKED";
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "%s", detail);
    snprintf(ans->message, sizeof(ans->message), "%s", msg);
    return ADDON_ANSWER;
}

static const char td_msg_blocklist[] =
    "Server-side tool 'blocked_domains' is not supported by airlock: a block list cannot be "
    "reconciled with the network allowlist. Use 'allowed_domains' instead; airlock cuts it down "
    "to the hosts the network allowlist opens.";
static const char td_msg_wildcard[] =
    "Server-side tool 'allowed_domains' entries must be bare host names. Wildcards ('*', '?'), "
    "white space, a leading '.' and empty names are not supported by airlock.";
static const char td_msg_invalid[] =
    "The request body is not valid JSON (or is nested too deeply, or uses a Content-Encoding). "
    "airlock reads Anthropic Messages request bodies to trim server-side tool "
    "'allowed_domains'.";
static const char td_msg_too_large[] =
    "The request body exceeds the 32 MiB limit for Anthropic Messages tool-config parsing.";

/* allowed_domains of one covered tool entry: checked, then cut to the open hosts. */
static int td_trim(td_ctx_t *c, json_t *entry, const char *type, const char *tag, json_t *allowed,
                   addon_answer_t *ans)
{
    int search = td_prefix(type, (const char *const[]){"web_search_", NULL});
    size_t n = json_array_size(allowed);
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(allowed, i);
        if (!json_is_string(d) || td_wildcard(json_string_value(d), json_string_length(d))) {
            td_note(c, "%s: wildcard", tag);
            return td_block(ans, "wildcard_tool_domain_unsupported", type, td_msg_wildcard);
        }
    }
    json_t *kept = json_array();
    json_t *dropped = json_array();
    if (kept == NULL || dropped == NULL) {
        json_decref(kept);
        json_decref(dropped);
        return PX_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(allowed, i);
        addon_str_t h = {json_string_value(d), json_string_length(d)};
        json_array_append(addon_policy_host_get_open(c->policy, h) ? kept : dropped, d);
    }
    char list[ADDON_TOOLDOMAINS_TAG_MAX];
    int rc = 0;
    if (json_array_size(kept) == 0 && search) {
        /* web_search_* refuses [] upstream: an empty list is said by removing the key */
        td_domains(allowed, list, sizeof(list));
        if (n > 0)
            td_note(c, "%s: cleared allowed_domains (%zu outside allowlist: %s)", tag, n, list);
        else
            td_note(c, "%s: removed empty allowed_domains", tag);
        rc = json_object_del(entry, "allowed_domains");
        c->changed = 1;
    } else if (json_array_size(dropped) > 0) {
        td_domains(dropped, list, sizeof(list));
        td_note(c, "%s: dropped %zu of %zu domains: %s", tag, json_array_size(dropped), n, list);
        rc = json_object_set(entry, "allowed_domains", kept);
        c->changed = 1;
    }
    json_decref(kept);
    json_decref(dropped);
    return rc == 0 ? ADDON_NEXT : PX_ENOMEM;
}

/* One tools array: every covered entry checked and trimmed in place. */
static int td_tools(td_ctx_t *c, json_t *tools, addon_answer_t *ans)
{
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *entry = json_array_get(tools, i);
        const json_t *t = json_object_get(entry, "type");
        if (!json_is_object(entry) || !json_is_string(t) ||
            !td_prefix(json_string_value(t), td_covered))
            continue;
        /* the type as sent (cut at 100 bytes on a character boundary) for the answer's detail,
         * escaped for the log line */
        size_t tl = json_string_length(t) < 100 ? json_string_length(t) : 100;
        while (tl > 0 && tl < json_string_length(t) &&
               ((unsigned char)json_string_value(t)[tl] & 0xC0) == 0x80)
            tl--;
        char type[128], tag[512];
        snprintf(type, sizeof(type), "%.*s", (int)tl, json_string_value(t));
        td_esc(json_string_value(t), tl, tag, sizeof(tag));
        const json_t *blocked = json_object_get(entry, "blocked_domains");
        if (blocked != NULL && (!json_is_array(blocked) || json_array_size(blocked) > 0)) {
            td_note(c, "%s: blocked-domains", tag);
            return td_block(ans, "blocklist_tool_config_unsupported", type, td_msg_blocklist);
        }
        json_t *allowed = json_object_get(entry, "allowed_domains");
        if (!json_is_array(allowed)) {
            if (td_prefix(type, (const char *const[]){"web_search_", NULL}))
                continue; /* absent stays absent: web_search refuses [] */
            if (json_object_set_new(entry, "allowed_domains", json_array()) != 0)
                return PX_ENOMEM;
            td_note(c, "%s: forced allowed_domains: []", tag);
            c->changed = 1;
            continue;
        }
        int rc = td_trim(c, entry, type, tag, allowed, ans);
        if (rc != ADDON_NEXT)
            return rc;
    }
    return ADDON_NEXT;
}

/* Every "tools" array anywhere in the body (Messages, Batches requests[i].params.tools), in
 * the reference's order: an explicit stack, so that nesting cannot exhaust the C stack. */
static int td_walk(td_ctx_t *c, json_t *root, addon_answer_t *ans)
{
    size_t cap = 64, n = 0;
    json_t **stack = malloc(cap * sizeof(*stack));
    if (stack == NULL)
        return PX_ENOMEM;
    stack[n++] = root;
    int rc = ADDON_NEXT;
    while (n > 0 && rc == ADDON_NEXT) {
        json_t *obj = stack[--n];
        size_t more = json_is_object(obj) ? json_object_size(obj) : json_array_size(obj);
        if (px_grow(&stack, &cap, n + more, sizeof(*stack), 64, SIZE_MAX) != 0) {
            rc = PX_ENOMEM;
            break;
        }
        if (json_is_object(obj)) {
            const char *key;
            json_t *value;
            json_object_foreach(obj, key, value)
            {
                if (strcmp(key, "tools") == 0 && json_is_array(value))
                    rc = td_tools(c, value, ans);
                else
                    stack[n++] = value;
                if (rc != ADDON_NEXT)
                    break;
            }
        } else if (json_is_array(obj)) {
            for (size_t i = 0; i < json_array_size(obj); i++)
                stack[n++] = json_array_get(obj, i);
        }
    }
    free(stack);
    return rc;
}

/* The fewest significant digits (up to 17) that print every real of the tree back to the same
 * double, so that 0.7 stays "0.7" and every number keeps its value. */
static int td_precision(const json_t *root)
{
    int best = 1;
    size_t cap = 64, n = 0;
    const json_t **stack = malloc(cap * sizeof(*stack));
    if (stack == NULL)
        return 17;
    stack[n++] = root;
    while (n > 0 && best < 17) {
        const json_t *v = stack[--n];
        size_t more = json_is_object(v) ? json_object_size(v) : json_array_size(v);
        if (px_grow(&stack, &cap, n + more, sizeof(*stack), 64, SIZE_MAX) != 0) {
            best = 17;
            break;
        }
        if (json_is_real(v)) {
            double d = json_real_value(v);
            char buf[40];
            int p = best;
            for (; p < 17; p++) {
                snprintf(buf, sizeof(buf), "%.*g", p, d);
                if (strtod(buf, NULL) == d)
                    break;
            }
            best = p;
        } else if (json_is_object(v)) {
            const char *key;
            json_t *value;
            json_object_foreach((json_t *)v, key, value) stack[n++] = value;
        } else if (json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v); i++)
                stack[n++] = json_array_get(v, i);
        }
    }
    free(stack);
    return best;
}

/* ---- lone surrogates ----------------------------------------------------------------------
 * A JavaScript client that cuts a string inside a surrogate pair sends "\ud83d" alone, which
 * Python's json (the reference) accepts and jansson refuses. So that such a conversation is not
 * refused on every later turn, each lone surrogate escape is swapped for a private-use
 * character (U+E000 + v - 0xD800, same escape length) before parsing, and swapped back in the
 * re-serialised text. A body already holding U+E000-U+E7FF cannot be mapped: refused. */

#define TD_PUA_BASE 0xE000

static long td_hex4(const char *s, size_t len, size_t i)
{
    if (i + 4 > len)
        return -1;
    char buf[5] = {s[i], s[i + 1], s[i + 2], s[i + 3], '\0'};
    char *end;
    long v = strtol(buf, &end, 16);
    return end == buf + 4 && buf[0] != '-' && buf[0] != '+' && buf[0] != ' ' ? v : -1;
}

/* *out: a copy with the lone surrogates mapped, or NULL when there are none. 0, PX_ENOMEM, or
 * PX_EPARSE when the body already holds the private-use range. */
static int td_unpair(const char *data, size_t len, char **out)
{
    *out = NULL;
    for (size_t i = 0; i + 2 < len; i++) {
        const unsigned char *u = (const unsigned char *)data + i;
        if (u[0] == 0xEE && u[1] >= 0x80 && u[1] <= 0x9F)
            return PX_EPARSE; /* U+E000-U+E7FF as UTF-8 */
    }
    for (size_t i = 0; i + 1 < len; i++) {
        if (data[i] != '\\')
            continue;
        if (data[i + 1] != 'u') {
            i++; /* an escaped character, "\\\\" included */
            continue;
        }
        long v = td_hex4(data, len, i + 2);
        if (v >= TD_PUA_BASE && v < TD_PUA_BASE + 0x800)
            return PX_EPARSE;
        long next = i + 7 < len && data[i + 6] == '\\' && data[i + 7] == 'u'
                        ? td_hex4(data, len, i + 8)
                        : -1;
        if (v >= 0xD800 && v <= 0xDBFF && next >= 0xDC00 && next <= 0xDFFF) {
            i += 11; /* a pair */
            continue;
        }
        if (v >= 0xD800 && v <= 0xDFFF) {
            if (*out == NULL) {
                *out = malloc(len);
                if (*out == NULL)
                    return PX_ENOMEM;
                memcpy(*out, data, len);
            }
            char hex[8];
            snprintf(hex, sizeof(hex), "%04lx", (unsigned long)(TD_PUA_BASE + v - 0xD800));
            memcpy(*out + i + 2, hex, 4);
        }
        i += 5;
    }
    return 0;
}

/* Writes text to out with every U+E000-U+E7FF (UTF-8 EE 80..9F xx) back as "\udXXX". */
static int td_repair(const char *text, size_t len, const addon_sink_t *out)
{
    size_t from = 0;
    for (size_t i = 0; i + 2 < len; i++) {
        const unsigned char *u = (const unsigned char *)text + i;
        if (u[0] != 0xEE || u[1] < 0x80 || u[1] > 0x9F)
            continue;
        unsigned cp = ((u[0] & 0x0Fu) << 12) | ((u[1] & 0x3Fu) << 6) | (u[2] & 0x3Fu);
        char esc[8];
        snprintf(esc, sizeof(esc), "\\u%04x", cp - TD_PUA_BASE + 0xD800);
        if (out->write(out->data, text + from, i - from) != 0 || out->write(out->data, esc, 6) != 0)
            return PX_ENOMEM;
        i += 2;
        from = i + 1;
    }
    return out->write(out->data, text + from, len - from) == 0 ? 0 : PX_ENOMEM;
}

static int td_dump_cb(const char *buf, size_t size, void *data)
{
    const addon_sink_t *out = data;
    return out->write(out->data, buf, size) == 0 ? 0 : -1;
}

/* [tool-domains: ...] cut to what the access line has room for, never inside the "[]" of
 * "forced allowed_domains: []" (readers of the log match brackets). */
static void td_annotate(addon_req_t *req, const td_ctx_t *c)
{
    static const char more[] = "... (truncated)";
    size_t used = req->annot_len + sizeof(" [tool-domains: ]");
    size_t room = used < ADDON_ANNOT_MAX ? ADDON_ANNOT_MAX - used : 0;
    size_t n = c->taglen;
    int cut = n >= ADDON_TOOLDOMAINS_TAG_MAX || n > room;
    if (n > room)
        n = room > sizeof(more) ? room - sizeof(more) : 0;
    if (n > 0 && c->tag[n - 1] == '[')
        n--;
    addon_req_annotate(req, "tool-domains: %.*s%s", (int)n, c->tag, cut ? more : "");
}

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    (void)self;
    (void)ans;
    if (td_applies(req) && req->filter_cap < ADDON_TOOLDOMAINS_BODY_CAP)
        req->filter_cap = ADDON_TOOLDOMAINS_BODY_CAP;
    return ADDON_NEXT;
}

static int on_request_body_filter(const addon_t *self, addon_req_t *req, const char *data,
                                  size_t len, const addon_sink_t *out, addon_answer_t *ans)
{
    (void)self;
    if (!td_applies(req) || req->config == NULL)
        return ADDON_NEXT;
    if (data == NULL || len > ADDON_TOOLDOMAINS_BODY_CAP) {
        addon_req_annotate(req, "tool-domains: <too-large>");
        return td_block(ans, "tool_config_too_large", "<too-large>", td_msg_too_large);
    }
    if (len == 0)
        return ADDON_NEXT; /* no body, no tools (GET of a batch, DELETE, ...) */
    int ce = addon_req_find(req, "content-encoding", 0);
    const addon_str_t *cev = ce >= 0 ? &req->headers[ce].value : NULL;
    json_t *body = NULL;
    char *mapped = NULL;
    int urc = td_unpair(data, len, &mapped);
    if (urc == PX_ENOMEM)
        return urc;
    int plain = cev == NULL || cev->len == 0 ||
                (cev->len == 8 && strncasecmp(cev->base, "identity", 8) == 0);
    int prc = PX_EPARSE;
    if (plain && urc == 0) /* duplicate keys are refused: upstream might read the other copy */
        prc = addon_provider_parse(mapped != NULL ? mapped : data, len,
                                   JSON_DECODE_ANY | JSON_ALLOW_NUL, &body, req, ans);
    int was_mapped = mapped != NULL;
    free(mapped);
    if (prc == ADDON_ANSWER)
        return prc;
    if (body == NULL) {
        addon_req_annotate(req, "tool-domains: <invalid-json>");
        return td_block(ans, "tool_config_invalid", "<invalid-json>", td_msg_invalid);
    }
    td_ctx_t c = {.policy = req->config->policy};
    int rc = td_walk(&c, body, ans);
    if (rc == ADDON_NEXT) /* URLs the provider would fetch: addon_provider.c */
        rc = addon_provider_check(c.policy, body, ADDON_PROVIDER_ANTHROPIC, req, ans);
    if (rc == ADDON_NEXT && c.changed) {
        size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(td_precision(body));
        if (!was_mapped) {
            rc = json_dump_callback(body, td_dump_cb, (void *)out, flags) == 0 ? ADDON_REWRITTEN
                                                                               : PX_ENOMEM;
        } else {
            char *text = json_dumps(body, flags);
            rc = text != NULL && td_repair(text, strlen(text), out) == 0 ? ADDON_REWRITTEN
                                                                         : PX_ENOMEM;
            free(text);
        }
    }
    if (c.taglen > 0)
        td_annotate(req, &c);
    json_decref(body);
    return rc;
}

static const addon_t addon__tooldomains = {
    .name = "tool-domains",
    .on_request_head = on_request_head,
    .on_request_body_filter = on_request_body_filter,
};

const addon_t *addon_tooldomains(void)
{
    return &addon__tooldomains;
}
