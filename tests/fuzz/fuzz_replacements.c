/* Fuzzes the replacement-map loader (libyaml, the tree builder, schema checks, the redaction of
 * messages) with arbitrary bytes. Whatever loads is described and run through the masked-secret
 * pass with its own surrogates placed in headers; whatever does not load is used as header
 * values (raw and behind "Basic ") under a fixed map, so that the base64 decoder, the
 * substitution and the duplicate handling meet fuzzed bytes too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit_note.h"
#include "addons/addon.h"
#include "addons/addon_replacements.h"
#include "addons/addon_secrets.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

#define FUZZ_ENTRIES_USED 8        /* entries whose surrogates go into the request */
#define FUZZ_VALUE_MAX (20 * 1024) /* fuzzed header value bytes (over ADDON_SECRETS_VALUE_MAX) */

static const char fuzz_fixed_map[] =
    "{\"surr\": {\"value\": \"real\", \"scopes\": [\"example.com\"], "
    "\"headers\": [\"Authorization\", \"X-*\"]},"
    " \"su\": {\"value\": \"r\", \"scopes\": [\"*\"], \"headers\": [\"X-Key\"]},"
    " \"AKIAFUZZ\": {\"type\": \"aws-sigv4\", \"access_key_id\": \"A\", "
    "\"secret_access_key\": \"S\", \"scopes\": [\"*\"]}}";

/* data: NULL, or a real value that must never appear in a log line. */
static void on_fuzz_log(void *data, const addon_note_t *note)
{
    /* the line as the proxy writes it: the note as its audit event, rendered */
    audit_event_t ev = audit_event_from_note(note);
    char line[AUDIT_EVENT_LINE_CAP];
    int rendered = audit_event_render(&ev, line, sizeof(line));
    size_t len = rendered > 0 ? (size_t)rendered : 0;
    const char *secret = data;
    if (strlen(line) != len)
        __builtin_trap();
    if (secret != NULL && memmem(line, len, secret, strlen(secret)) != NULL)
        __builtin_trap();
}

static void fuzz_req_init(addon_req_t *req, const char *host, size_t hlen)
{
    memset(req, 0, sizeof(*req));
    req->log_cb = on_fuzz_log;
    req->method.base = "GET";
    req->method.len = 3;
    req->target.base = "/";
    req->target.len = 1;
    req->path = req->target;
    req->host.base = host;
    req->host.len = hlen;
    req->port = 443;
    req->tls = 1;
}

static void fuzz_add(addon_req_t *req, const char *name, const char *value, size_t vlen)
{
    size_t cap = sizeof(req->headers) / sizeof(req->headers[0]);
    if (req->nheaders >= cap)
        return;
    addon_header_t *h = &req->headers[req->nheaders++];
    h->name.base = name;
    h->name.len = strlen(name);
    h->value.base = value;
    h->value.len = vlen;
}

static void fuzz_apply(addon_req_t *req, const addon_replacements_t *r)
{
    size_t before = 0;
    for (size_t i = 0; i < req->nheaders; i++)
        before += !req->headers[i].removed;
    addon_secrets_result_t res;
    int rc = addon_secrets_apply(req, r, "https://fuzz/", &res);
    if (rc != 0 && rc != PX_ENOMEM && rc != PX_ETOOBIG)
        __builtin_trap();
    size_t after = 0;
    for (size_t i = 0; i < req->nheaders; i++)
        after += !req->headers[i].removed;
    if (after > before || res.dropped > before || res.collapsed > res.masked)
        __builtin_trap();
    if (rc == 0 && (res.masked > 0) != (strstr(req->annot, "[masked: ") != NULL))
        __builtin_trap();
    addon_req_reset(req);
}

/* The loaded map's own surrogates in headers, toward each entry's first scope. */
static void fuzz_loaded(const addon_replacements_t *r, addon_req_t *req)
{
    size_t need = addon_replacements_describe(r, NULL, 0);
    char small[64];
    if (addon_replacements_describe(r, small, sizeof(small)) != need)
        __builtin_trap();
    if (strlen(small) != (need < sizeof(small) ? need : sizeof(small) - 1))
        __builtin_trap();
    size_t n = addon_replacements_count(r);
    for (size_t e = 0; e < n && e < FUZZ_ENTRIES_USED; e++) {
        addon_replacements_aws_t aws;
        int is_aws = addon_replacements_kind(r, e) == ADDON_REPLACEMENTS_AWS_SIGV4;
        if ((addon_replacements_aws(r, e, &aws) == 0) != is_aws)
            __builtin_trap();
        addon_str_t sur = addon_replacements_surrogate(r, e);
        if (is_aws && addon_replacements_find_aws(r, sur) < 0)
            __builtin_trap();
        addon_str_t host = addon_replacements_scope(r, e, 0);
        if (host.base == NULL) {
            host.base = "example.com";
            host.len = strlen("example.com");
        }
        fuzz_req_init(req, host.base, host.len);
        for (size_t k = 0; k < n && k < FUZZ_ENTRIES_USED; k++) {
            addon_str_t s = addon_replacements_surrogate(r, k);
            fuzz_add(req, k % 2 ? "authorization" : "Authorization", s.base, s.len);
            fuzz_add(req, "X-Api-Key", s.base, s.len);
            addon_str_t h = addon_replacements_header(r, k, 0, NULL);
            if (h.base != NULL && h.len < 64)
                fuzz_add(req, h.base, s.base, s.len);
        }
        fuzz_apply(req, r);
    }
}

/* The input as header values under the fixed map. */
static void fuzz_values(const char *text, size_t size, addon_req_t *req)
{
    addon_replacements_t *fixed = NULL;
    if (addon_replacements_load_buffer("fixed.json", fuzz_fixed_map, strlen(fuzz_fixed_map), &fixed,
                                       NULL, 0) != 0)
        __builtin_trap();
    size_t vlen = size < FUZZ_VALUE_MAX ? size : FUZZ_VALUE_MAX;
    char *basic = malloc(vlen + 6);
    if (basic == NULL) {
        addon_replacements_unref(fixed);
        return;
    }
    memcpy(basic, "Basic ", 6);
    memcpy(basic + 6, text, vlen);
    fuzz_req_init(req, "example.com", strlen("example.com"));
    req->log_data = (void *)"real";
    fuzz_add(req, "Authorization", basic, vlen + 6);
    fuzz_add(req, "X-Key", text, vlen);
    fuzz_add(req, "authorization", text, vlen);
    fuzz_add(req, "X-Key", "su", 2);
    fuzz_apply(req, fixed);
    /* the input as the host too */
    fuzz_req_init(req, text, vlen < 256 ? vlen : 256);
    req->log_data = (void *)"real";
    fuzz_add(req, "X-Key", basic, vlen + 6);
    fuzz_apply(req, fixed);
    free(basic);
    addon_replacements_unref(fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    addon_req_t *req = malloc(sizeof(*req));
    if (req == NULL)
        return 0;
    addon_replacements_t *r = NULL;
    char err[ADDON_YAML_ERR_MAX];
    int rc = addon_replacements_load_buffer("fuzz.json", text, size, &r, err, sizeof(err));
    if (rc != 0) {
        if (r != NULL || strlen(err) >= sizeof(err) || err[0] == '\0')
            __builtin_trap();
        fuzz_values(text, size, req);
    } else {
        fuzz_loaded(r, req);
        addon_replacements_unref(r);
    }
    free(req);
    return 0;
}
