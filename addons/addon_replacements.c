/* The replacement map (docs/replacements.md): loads and checks the replacements file into an
 * immutable, reference-counted map; the accessors and describe text are in
 * addon_replacements_get.c, the canary list in addon_replacements_canary.c. */
#include "addons/addon_replacements.h"
#include "addons/addon_replacements_int.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "addons/addon_ghapp.h"
#include "addons/addon_glob.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

#define ADDON__REPL_WHAT_MAX 64 /* "entry[1023].surrogate_session_token" */

static const char *const repl_masked_keys[] = {
    "value", "value_from", "scopes", "headers", "allow_foreign_credentials", "allow_plain_http",
    NULL};
static const char *const repl_aws_keys[] = {"type",
                                            "access_key_id",
                                            "secret_access_key",
                                            "session_token",
                                            "surrogate_session_token",
                                            "scopes",
                                            "allow_plain_http",
                                            NULL};
static const char *const repl_ghapp_keys[] = {
    "type",   "app_id",      "private_key",  "installation_id",           "base_url",
    "scopes", "permissions", "repositories", "allow_foreign_credentials", "timeout",
    NULL};

/* ---- memory ----------------------------------------------------------------------------- */

/* Wipes and frees one string; every string of an entry goes this way, real or not. */
static void repl_str_free(addon_str_t *s)
{
    if (s->base != NULL) {
        OPENSSL_cleanse((char *)s->base, s->len);
        free((char *)s->base);
    }
    s->base = NULL;
    s->len = 0;
}

static void repl_entry_free(addon__repl_entry_t *e)
{
    repl_str_free(&e->surrogate);
    repl_str_free(&e->value);
    repl_str_free(&e->from);
    for (size_t i = 0; i < e->nscopes; i++)
        repl_str_free(&e->scopes[i]);
    free(e->scopes);
    for (size_t i = 0; i < e->nheaders; i++)
        repl_str_free(&e->headers[i]);
    free(e->headers);
    free(e->exact);
    repl_str_free(&e->akid);
    repl_str_free(&e->secret);
    repl_str_free(&e->token);
    repl_str_free(&e->surrogate_token);
    addon_ghapp_free(e->ghapp);
    OPENSSL_cleanse(e, sizeof(*e));
}

static void repl_free(addon_replacements_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        repl_entry_free(&r->entries[i]);
    free(r->entries);
    addon__repl_canaries_free(&r->canaries);
    free(r->name);
    free(r);
}

static addon_replacements_t *repl_new(const char *name)
{
    addon_replacements_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->name = strdup(name != NULL ? name : "<replacements>");
    if (r->name == NULL) {
        free(r);
        return NULL;
    }
    atomic_init(&r->refs, 1);
    return r;
}

static int repl_nomem(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return PX_ENOMEM;
}

/* ---- validation ------------------------------------------------------------------------- */

/* A string field that may hold a real value: the message names the field, never the text. */
static int repl_string(const addon_yaml_node_t *n, const char *what, int allow_empty,
                       addon_str_t *out, char *err, size_t errlen)
{
    const char *s;
    size_t len;
    int rc = addon_yaml_get_string(n, what, &s, &len, err, errlen);
    if (rc != 0)
        return rc;
    if (len == 0 && !allow_empty)
        return addon_yaml_errorf(n, err, errlen, "%s: empty string", what);
    if (len > ADDON_REPLACEMENTS_MAX_STRING) {
        addon_yaml_errorf(n, err, errlen, "%s: longer than %d bytes", what,
                          ADDON_REPLACEMENTS_MAX_STRING);
        return PX_ETOOBIG;
    }
    if (addon__repl_has_ctl(s, len))
        return addon_yaml_errorf(n, err, errlen,
                                 "%s: contains a control character (a header value cannot "
                                 "carry CR, LF or NUL)",
                                 what);
    if (addon__repl_dup(s, len, 0, out) != 0)
        return repl_nomem(err, errlen);
    return 0;
}

static int repl_seq(const addon_yaml_node_t *n, const char *what, size_t *count, char *err,
                    size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, what, err, errlen);
    if (rc != 0)
        return rc;
    *count = addon_yaml_count(n);
    if (*count > ADDON_REPLACEMENTS_MAX_PATTERNS) {
        addon_yaml_errorf(n, err, errlen, "%s: more than %d patterns", what,
                          ADDON_REPLACEMENTS_MAX_PATTERNS);
        return PX_ETOOBIG;
    }
    return 0;
}

/* Host patterns are stored as the allowlist stores them: lowercased, and a plain (non-glob)
 * pattern loses one trailing dot and IPv6 brackets. */
static int repl_scopes(const addon_yaml_node_t *n, const char *what, addon__repl_entry_t *e,
                       char *err, size_t errlen)
{
    size_t count;
    int rc = repl_seq(n, what, &count, err, errlen);
    if (rc != 0 || count == 0)
        return rc;
    e->scopes = calloc(count, sizeof(*e->scopes));
    if (e->scopes == NULL)
        return repl_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        const addon_yaml_node_t *item = addon_yaml_item(n, i);
        char sub[ADDON__REPL_WHAT_MAX + 64];
        snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(item, sub, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        if (len > ADDON_REPLACEMENTS_MAX_STRING) {
            addon_yaml_errorf(item, err, errlen, "%s: longer than %d bytes", sub,
                              ADDON_REPLACEMENTS_MAX_STRING);
            return PX_ETOOBIG;
        }
        for (size_t k = 0; k < len; k++) {
            unsigned char c = (unsigned char)s[k];
            if (c <= 0x20 || c == 0x7f)
                return addon_yaml_errorf(item, err, errlen,
                                         "%s: host pattern contains a space or control "
                                         "character",
                                         sub);
            if (c == '/')
                return addon_yaml_errorf(item, err, errlen,
                                         "%s: host pattern contains '/' (a scope is a host)", sub);
        }
        size_t start = 0;
        size_t end = len;
        if (!addon_glob_is_glob(s, len)) {
            if (end > start && s[end - 1] == '.')
                end--;
            if (end - start >= 2 && s[start] == '[' && s[end - 1] == ']') {
                start++;
                end--;
            }
        }
        if (end == start)
            return addon_yaml_errorf(item, err, errlen, "%s: empty host pattern", sub);
        if (addon__repl_dup(s + start, end - start, 1, &e->scopes[i]) != 0)
            return repl_nomem(err, errlen);
        e->nscopes = i + 1;
    }
    return 0;
}

static int repl_is_exact(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == ']')
            return 0;
    }
    return 1;
}

static int repl_headers(const addon_yaml_node_t *n, const char *what, addon__repl_entry_t *e,
                        char *err, size_t errlen)
{
    size_t count;
    int rc = repl_seq(n, what, &count, err, errlen);
    if (rc != 0 || count == 0)
        return rc;
    e->headers = calloc(count, sizeof(*e->headers));
    e->exact = calloc(count, sizeof(*e->exact));
    if (e->headers == NULL || e->exact == NULL)
        return repl_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        const addon_yaml_node_t *item = addon_yaml_item(n, i);
        char sub[ADDON__REPL_WHAT_MAX + 64];
        snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(item, sub, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        if (len == 0)
            return addon_yaml_errorf(item, err, errlen, "%s: empty header pattern", sub);
        if (len > ADDON_REPLACEMENTS_MAX_STRING) {
            addon_yaml_errorf(item, err, errlen, "%s: longer than %d bytes", sub,
                              ADDON_REPLACEMENTS_MAX_STRING);
            return PX_ETOOBIG;
        }
        for (size_t k = 0; k < len; k++) {
            unsigned char c = (unsigned char)s[k];
            if (c <= 0x20 || c == 0x7f || c == ':')
                return addon_yaml_errorf(item, err, errlen,
                                         "%s: a header name pattern cannot hold a space, ':' "
                                         "or a control character",
                                         sub);
        }
        if (addon__repl_dup(s, len, 0, &e->headers[i]) != 0)
            return repl_nomem(err, errlen);
        e->exact[i] = (unsigned char)repl_is_exact(s, len);
        e->nheaders = i + 1;
    }
    return 0;
}

/* The key node that holds value v in mapping n: messages about a key point at the key. */
static const addon_yaml_node_t *repl_key_of(const addon_yaml_node_t *n, const addon_yaml_node_t *v)
{
    for (size_t i = 0; i < addon_yaml_count(n); i++) {
        if (addon_yaml_value(n, i) == v)
            return addon_yaml_key(n, i);
    }
    return v;
}

static const addon_yaml_node_t *repl_required(const addon_yaml_node_t *n, const char *key,
                                              const char *what, int *rc, char *err, size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, key);
    if (v == NULL)
        *rc = addon_yaml_errorf(n, err, errlen, "%s: missing required key '%s'", what, key);
    return v;
}

/* The optional "allow_plain_http" flag (masked and aws-sigv4 entries). */
static int repl_plain_http(const addon_yaml_node_t *n, const char *what, addon__repl_entry_t *e,
                           char *err, size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, "allow_plain_http");
    if (v == NULL)
        return 0;
    char sub[ADDON__REPL_WHAT_MAX + 32];
    snprintf(sub, sizeof(sub), "%s.allow_plain_http", what);
    return addon_yaml_get_bool(v, sub, &e->allow_plain_http, err, errlen);
}

static int repl_masked(const addon_yaml_node_t *n, const char *what, addon__repl_entry_t *e,
                       char *err, size_t errlen)
{
    int rc = addon__repl_check_keys(n, repl_masked_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    char sub[ADDON__REPL_WHAT_MAX + 32];
    e->kind = ADDON_REPLACEMENTS_MASKED;
    const addon_yaml_node_t *value = addon_yaml_get(n, "value");
    const addon_yaml_node_t *from = addon_yaml_get(n, "value_from");
    if (value != NULL && from != NULL)
        return addon_yaml_errorf(repl_key_of(n, from), err, errlen,
                                 "%s: 'value' and 'value_from' both given (give one of them)",
                                 what);
    if (value == NULL && from == NULL)
        return addon_yaml_errorf(n, err, errlen,
                                 "%s: missing required key 'value' (or 'value_from')", what);
    const addon_yaml_node_t *scopes = repl_required(n, "scopes", what, &rc, err, errlen);
    if (scopes == NULL)
        return rc;
    const addon_yaml_node_t *headers = repl_required(n, "headers", what, &rc, err, errlen);
    if (headers == NULL)
        return rc;
    snprintf(sub, sizeof(sub), "%s.value", what);
    rc = value != NULL ? repl_string(value, sub, 1, &e->value, err, errlen)
                       : addon__repl_value_from(from, what, &e->value, &e->from, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(sub, sizeof(sub), "%s.scopes", what);
    rc = repl_scopes(scopes, sub, e, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(sub, sizeof(sub), "%s.headers", what);
    rc = repl_headers(headers, sub, e, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *allow = addon_yaml_get(n, "allow_foreign_credentials");
    if (allow != NULL) {
        snprintf(sub, sizeof(sub), "%s.allow_foreign_credentials", what);
        rc = addon_yaml_get_bool(allow, sub, &e->allow_foreign, err, errlen);
        if (rc != 0)
            return rc;
    }
    return repl_plain_http(n, what, e, err, errlen);
}

/* An optional real string: absent and null both leave out unset. */
static int repl_optional(const addon_yaml_node_t *n, const char *key, const char *what,
                         addon_str_t *out, char *err, size_t errlen)
{
    const addon_yaml_node_t *v = addon_yaml_get(n, key);
    if (v == NULL || addon_yaml_type(v) == ADDON_YAML_NULL)
        return 0;
    char sub[ADDON__REPL_WHAT_MAX + 32];
    snprintf(sub, sizeof(sub), "%s.%s", what, key);
    return repl_string(v, sub, 0, out, err, errlen);
}

static int repl_aws(const addon_yaml_node_t *n, const char *what, addon__repl_entry_t *e, char *err,
                    size_t errlen)
{
    int rc = addon__repl_check_keys(n, repl_aws_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    char sub[ADDON__REPL_WHAT_MAX + 32];
    e->kind = ADDON_REPLACEMENTS_AWS_SIGV4;
    const addon_yaml_node_t *akid = repl_required(n, "access_key_id", what, &rc, err, errlen);
    if (akid == NULL)
        return rc;
    const addon_yaml_node_t *secret = repl_required(n, "secret_access_key", what, &rc, err, errlen);
    if (secret == NULL)
        return rc;
    const addon_yaml_node_t *scopes = repl_required(n, "scopes", what, &rc, err, errlen);
    if (scopes == NULL)
        return rc;
    snprintf(sub, sizeof(sub), "%s.access_key_id", what);
    rc = repl_string(akid, sub, 0, &e->akid, err, errlen);
    if (rc != 0)
        return rc;
    snprintf(sub, sizeof(sub), "%s.secret_access_key", what);
    rc = repl_string(secret, sub, 0, &e->secret, err, errlen);
    if (rc != 0)
        return rc;
    rc = repl_optional(n, "session_token", what, &e->token, err, errlen);
    if (rc != 0)
        return rc;
    rc = repl_optional(n, "surrogate_session_token", what, &e->surrogate_token, err, errlen);
    if (rc != 0)
        return rc;
    if (e->surrogate_token.base != NULL && e->token.base == NULL) {
        const addon_yaml_node_t *st = addon_yaml_get(n, "surrogate_session_token");
        return addon_yaml_errorf(repl_key_of(n, st), err, errlen,
                                 "%s: 'surrogate_session_token' given without "
                                 "'session_token'",
                                 what);
    }
    snprintf(sub, sizeof(sub), "%s.scopes", what);
    rc = repl_scopes(scopes, sub, e, err, errlen);
    if (rc != 0)
        return rc;
    return repl_plain_http(n, what, e, err, errlen);
}

/* A github-app entry: scopes and the foreign-credential flag here, the rest in addon_ghapp. */
static int repl_ghapp(const addon_yaml_node_t *n, const char *what, addon__repl_entry_t *e,
                      char *err, size_t errlen)
{
    int rc = addon__repl_check_keys(n, repl_ghapp_keys, what, err, errlen);
    char sub[ADDON__REPL_WHAT_MAX + 32];
    e->kind = ADDON_REPLACEMENTS_GITHUB_APP;
    const addon_yaml_node_t *scopes =
        rc == 0 ? repl_required(n, "scopes", what, &rc, err, errlen) : NULL;
    if (scopes == NULL)
        return rc;
    snprintf(sub, sizeof(sub), "%s.scopes", what);
    if ((rc = repl_scopes(scopes, sub, e, err, errlen)) != 0)
        return rc;
    const addon_yaml_node_t *allow = addon_yaml_get(n, "allow_foreign_credentials");
    snprintf(sub, sizeof(sub), "%s.allow_foreign_credentials", what);
    if (allow != NULL && (rc = addon_yaml_get_bool(allow, sub, &e->allow_foreign, err, errlen)))
        return rc;
    return addon_ghapp_parse(n, what, &e->ghapp, err, errlen);
}

static int repl_entry(const addon_yaml_node_t *key, const addon_yaml_node_t *n, size_t idx,
                      addon__repl_entry_t *e, char *err, size_t errlen)
{
    char what[ADDON__REPL_WHAT_MAX];
    snprintf(what, sizeof(what), "entry[%zu]", idx);
    if (addon_yaml_type(key) != ADDON_YAML_STRING)
        return addon_yaml_errorf(key, err, errlen,
                                 "%s: the surrogate (the key) must be a string, got %s", what,
                                 addon_yaml_type_name(addon_yaml_type(key)));
    size_t slen;
    const char *s = addon_yaml_text(key, &slen);
    if (slen == 0)
        return addon_yaml_errorf(key, err, errlen, "%s: empty surrogate", what);
    if (slen > ADDON_REPLACEMENTS_MAX_STRING) {
        addon_yaml_errorf(key, err, errlen, "%s: surrogate longer than %d bytes", what,
                          ADDON_REPLACEMENTS_MAX_STRING);
        return PX_ETOOBIG;
    }
    if (addon__repl_has_ctl(s, slen))
        return addon_yaml_errorf(key, err, errlen, "%s: the surrogate contains a control character",
                                 what);
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, what, err, errlen);
    if (rc != 0)
        return rc;
    if (addon__repl_dup(s, slen, 0, &e->surrogate) != 0)
        return repl_nomem(err, errlen);

    const addon_yaml_node_t *type = addon_yaml_get(n, "type");
    if (type == NULL)
        return repl_masked(n, what, e, err, errlen);
    char sub[ADDON__REPL_WHAT_MAX + 16];
    snprintf(sub, sizeof(sub), "%s.type", what);
    const char *t;
    size_t tlen;
    rc = addon_yaml_get_string(type, sub, &t, &tlen, err, errlen);
    if (rc != 0)
        return rc;
    if (tlen == strlen("aws-sigv4") && memcmp(t, "aws-sigv4", tlen) == 0)
        return repl_aws(n, what, e, err, errlen);
    if (tlen == strlen("github-app") && memcmp(t, "github-app", tlen) == 0)
        return repl_ghapp(n, what, e, err, errlen);
    /* The text is not echoed: in a damaged file it could be a real value. */
    return addon_yaml_errorf(type, err, errlen,
                             "%s: unknown type (expected 'aws-sigv4', 'github-app', or no "
                             "'type' for a "
                             "masked secret)",
                             sub);
}

static int repl_from_root(addon_replacements_t *r, const addon_yaml_node_t *root, char *err,
                          size_t errlen)
{
    if (root == NULL || addon_yaml_type(root) == ADDON_YAML_NULL)
        return 0;
    if (addon_yaml_type(root) != ADDON_YAML_MAP)
        return addon_yaml_errorf(root, err, errlen,
                                 "the replacement map must be a mapping keyed by surrogate, "
                                 "got %s",
                                 addon_yaml_type_name(addon_yaml_type(root)));
    size_t count = addon_yaml_count(root);
    if (count == 0)
        return 0;
    if (count > ADDON_REPLACEMENTS_MAX_ENTRIES) {
        addon_yaml_errorf(root, err, errlen, "more than %d entries",
                          ADDON_REPLACEMENTS_MAX_ENTRIES);
        return PX_ETOOBIG;
    }
    r->entries = calloc(count, sizeof(*r->entries));
    if (r->entries == NULL)
        return repl_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        const addon_yaml_node_t *key = addon_yaml_key(root, i);
        const addon_yaml_node_t *value = addon_yaml_value(root, i);
        int rc;
        if (!r->canaries.present && addon__repl_is_canaries(key, value)) {
            rc = addon__repl_canaries_parse(value, &r->canaries, err, errlen);
        } else {
            r->n++;
            rc = repl_entry(key, value, r->n - 1, &r->entries[r->n - 1], err, errlen);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* addon_yaml quotes what it complains about (a duplicate key, a tag) and shows an offending
 * byte. In a replacement map that text may be a real value written unquoted in YAML (a value
 * starting with '!' is read as a tag), so quoted text and bytes are blanked out. */
static void repl_redact(char *err, size_t errlen)
{
    char src[ADDON_YAML_ERR_MAX];
    snprintf(src, sizeof(src), "%s", err);
    size_t o = 0;
    const char *s = src;
    while (*s != '\0' && o + 1 < errlen) {
        const char *piece = s;
        size_t plen = 1;
        const char *next = s + 1;
        const char *end = *s == '\'' ? strchr(s + 1, '\'') : NULL;
        if (end != NULL) {
            piece = "'...'";
            plen = 5;
            next = end + 1;
        } else if (strncmp(s, "(byte 0x", 8) == 0 && s[8] != '\0' && s[9] != '\0' && s[10] == ')') {
            piece = "(a byte)";
            plen = 8;
            next = s + 11;
        }
        if (plen > errlen - 1 - o)
            plen = errlen - 1 - o;
        memcpy(err + o, piece, plen);
        o += plen;
        s = next;
    }
    err[o] = '\0';
}

/* Turns a loaded document (taken; wiped and freed here) into a snapshot. */
static int repl_from_doc(addon_yaml_doc_t *doc, addon_replacements_t **out, char *err,
                         size_t errlen)
{
    addon_replacements_t *r = repl_new(addon_yaml_name(doc));
    if (r == NULL) {
        addon_yaml_free_wipe(doc);
        return repl_nomem(err, errlen);
    }
    int rc = repl_from_root(r, addon_yaml_root(doc), err, errlen);
    addon_yaml_free_wipe(doc);
    if (rc != 0) {
        repl_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* addon_yaml's message after the name prefix (the name is the caller's, not file text). */
static void repl_redact_after(const char *name, char *err, size_t errlen)
{
    size_t nlen = strlen(name);
    if (strncmp(err, name, nlen) == 0)
        repl_redact(err + nlen, errlen - nlen);
    else
        repl_redact(err, errlen);
}

int addon_replacements_load_buffer(const char *name, const char *data, size_t len,
                                   addon_replacements_t **out, char *err, size_t errlen)
{
    char dummy[ADDON_YAML_ERR_MAX];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    *out = NULL;
    if (name == NULL)
        name = "<replacements>";
    addon_yaml_doc_t *doc;
    int rc = addon_yaml_load_buffer(name, data, len, &doc, err, errlen);
    if (rc != 0) {
        repl_redact_after(name, err, errlen);
        return rc;
    }
    return repl_from_doc(doc, out, err, errlen);
}

int addon_replacements_load_file(const char *path, addon_replacements_t **out, char *err,
                                 size_t errlen)
{
    char dummy[ADDON_YAML_ERR_MAX];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    *out = NULL;
    /* addon_yaml reads a regular file in one allocation and wipes it after parsing. */
    addon_yaml_doc_t *doc;
    int rc = addon_yaml_load_file(path, &doc, err, errlen);
    if (rc != 0) {
        repl_redact_after(path, err, errlen);
        return rc;
    }
    return repl_from_doc(doc, out, err, errlen);
}

addon_replacements_t *addon_replacements_new_empty(const char *name)
{
    return repl_new(name);
}

addon_replacements_t *addon_replacements_ref(addon_replacements_t *r)
{
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    return r;
}

void addon_replacements_unref(addon_replacements_t *r)
{
    if (r == NULL)
        return;
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        repl_free(r);
}
