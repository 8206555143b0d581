/* The request side of GitHub App credentials (addon_ghapp.h): which entry a request's
 * Authorization names, the replacement of its surrogate, the stripping of foreign credentials
 * and the refresh-failure answer. */
#include "addons/addon_ghapp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "addons/addon_ghscope.h"
#include "addons/addon_replacements.h"
#include "base/px_b64.h"
#include "base/px_err.h"
#include "base/px_path.h"

#define GHAPP_VALUE_MAX 16384 /* bytes of an Authorization value decoded or built here */

static int ghapp_is_auth(const addon_header_t *h)
{
    return !h->removed && h->name.len == 13 && strncasecmp(h->name.base, "authorization", 13) == 0;
}

/* Where sur is in a value: 1 directly, 2 in the password of a Basic value, 0 nowhere. For 2,
 * the decoded "user:password" is left in dec (len *declen, cap GHAPP_VALUE_MAX). */
static int ghapp_holds(addon_str_t v, addon_str_t sur, unsigned char *dec, size_t *declen)
{
    if (sur.len == 0)
        return 0;
    if (memmem(v.base, v.len, sur.base, sur.len) != NULL)
        return 1;
    if (v.len <= 6 || memcmp(v.base, "Basic ", 6) != 0)
        return 0;
    long n = px_b64_decode(v.base + 6, v.len - 6, dec, GHAPP_VALUE_MAX);
    if (n < 0)
        return 0;
    *declen = (size_t)n;
    const unsigned char *colon = memchr(dec, ':', (size_t)n);
    if (colon == NULL)
        return 0;
    size_t off = (size_t)(colon - dec) + 1;
    return memmem(dec + off, (size_t)n - off, sur.base, sur.len) != NULL ? 2 : 0;
}

/* The first live Authorization header holding entry i's surrogate (kind in *how), or -1. */
static int ghapp_find(const addon_req_t *req, addon_str_t sur, int *how, unsigned char *dec,
                      size_t *declen)
{
    for (size_t k = 0; k < req->nheaders; k++) {
        if (!ghapp_is_auth(&req->headers[k]))
            continue;
        int h = ghapp_holds(req->headers[k].value, sur, dec, declen);
        if (h != 0) {
            *how = h;
            return (int)k;
        }
    }
    return -1;
}

int addon_ghapp_match(const addon_replacements_t *r, const addon_req_t *req)
{
    unsigned char *dec = malloc(GHAPP_VALUE_MAX);
    if (dec == NULL)
        return -1;
    int found = -1;
    for (size_t i = 0; i < addon_replacements_count(r) && found < 0; i++) {
        if (addon_replacements_kind(r, i) != ADDON_REPLACEMENTS_GITHUB_APP ||
            !addon_replacements_in_scope(r, i, req->host))
            continue;
        int how;
        size_t declen = 0;
        if (ghapp_find(req, addon_replacements_surrogate(r, i), &how, dec, &declen) >= 0)
            found = (int)i;
        OPENSSL_cleanse(dec, declen);
    }
    free(dec);
    return found;
}

/* Every sur in s[0..len) replaced by rep, appended to out (cap GHAPP_VALUE_MAX); the new
 * length, or -1 when it does not fit. */
static long ghapp_subst(const char *s, size_t len, addon_str_t sur, const char *rep, size_t rlen,
                        char *out, size_t o)
{
    size_t i = 0;
    while (i < len) {
        const char *hit = sur.len <= len - i ? memmem(s + i, len - i, sur.base, sur.len) : NULL;
        size_t lit = hit != NULL ? (size_t)(hit - (s + i)) : len - i;
        if (o + lit + (hit != NULL ? rlen : 0) > GHAPP_VALUE_MAX)
            return -1;
        memcpy(out + o, s + i, lit);
        o += lit;
        i += lit;
        if (hit == NULL)
            break;
        memcpy(out + o, rep, rlen);
        o += rlen;
        i += sur.len;
    }
    return (long)o;
}

/* The new value of header k: into out; returns its length or a negative code. */
static long ghapp_new_value(addon_str_t v, int how, addon_str_t sur, const char *token,
                            size_t toklen, const unsigned char *dec, size_t declen, char *out,
                            char *tmp)
{
    if (how == 1)
        return ghapp_subst(v.base, v.len, sur, token, toklen, out, 0);
    const unsigned char *colon = memchr(dec, ':', declen);
    size_t off = (size_t)(colon - dec) + 1;
    memcpy(tmp, dec, off);
    long n = ghapp_subst((const char *)dec + off, declen - off, sur, token, toklen, tmp, off);
    if (n < 0 || 6 + 4 * (((size_t)n + 2) / 3) + 1 > GHAPP_VALUE_MAX)
        return PX_ETOOBIG;
    memcpy(out, "Basic ", 6);
    long e = px_b64_encode((const unsigned char *)tmp, (size_t)n, out + 6, GHAPP_VALUE_MAX - 6);
    OPENSSL_cleanse(tmp, (size_t)n);
    return 6 + e;
}

int addon_ghapp_apply(addon_req_t *req, const addon_replacements_t *r, size_t i, const char *token,
                      size_t toklen, int flags)
{
    addon_str_t sur = addon_replacements_surrogate(r, i);
    unsigned char *dec = malloc(GHAPP_VALUE_MAX);
    char *out = malloc(GHAPP_VALUE_MAX + 1);
    char *tmp = malloc(GHAPP_VALUE_MAX + 1);
    int rc = PX_ENOMEM;
    size_t declen = 0;
    long n = -1;
    if (dec == NULL || out == NULL || tmp == NULL)
        goto out;
    int how = 0;
    int k = ghapp_find(req, sur, &how, dec, &declen);
    rc = PX_ENOENT;
    if (k < 0)
        goto out;
    n = ghapp_new_value(req->headers[k].value, how, sur, token, toklen, dec, declen, out, tmp);
    rc = n < 0 ? PX_ETOOBIG : 0;
    if (rc != 0)
        goto out;
    /* one Authorization header is left, at the first one's place, with the replaced value */
    size_t first = (size_t)k, count = 0;
    for (size_t j = 0; j < req->nheaders; j++) {
        if (!ghapp_is_auth(&req->headers[j]))
            continue;
        if (count++ == 0)
            first = j;
        if (j != first)
            addon_req_remove_header(req, j);
    }
    rc = addon_req_set_value(req, first, out, (size_t)n);
    if (rc != 0)
        goto out;
    if (count > 1)
        addon_req_note(req, ADDON_NOTE_COLLAPSED, "authorization", (unsigned)count,
                       "duplicate credential headers removed");
    addon_req_annotate(req, "github-app: %s%s",
                       flags & ADDON_GHAPP_REFRESHED ? "refreshed" : "cached",
                       flags & ADDON_GHAPP_SCOPED ? ", graphql-scoped" : "");
    addon_req_annotate(req, "masked: 1");
    req->credentials_done = 1;
out:
    if (dec != NULL)
        OPENSSL_cleanse(dec, GHAPP_VALUE_MAX);
    if (out != NULL)
        OPENSSL_cleanse(out, GHAPP_VALUE_MAX + 1);
    if (tmp != NULL)
        OPENSSL_cleanse(tmp, GHAPP_VALUE_MAX + 1);
    free(dec);
    free(out);
    free(tmp);
    return rc;
}

int addon_ghapp_strip_foreign(addon_req_t *req, const addon_replacements_t *r)
{
    int strip = 0;
    for (size_t i = 0; i < addon_replacements_count(r) && !strip; i++)
        strip = addon_replacements_kind(r, i) == ADDON_REPLACEMENTS_GITHUB_APP &&
                !addon_replacements_allow_foreign(r, i) &&
                addon_replacements_in_scope(r, i, req->host);
    if (!strip)
        return 0;
    int removed = 0;
    for (size_t j = 0; j < req->nheaders; j++) {
        if (ghapp_is_auth(&req->headers[j])) {
            addon_req_remove_header(req, j);
            removed = 1;
        }
    }
    if (removed)
        addon_req_note(req, ADDON_NOTE_STRIPPED, "authorization", 0, "foreign credential blocked");
    return removed;
}

int addon_ghapp_graphql_query(addon_req_t *req, addon_answer_t *ans)
{
    if (memchr(req->path.base, '?', req->path.len) == NULL || !addon_ghapp_graphql_path(req))
        return 0;
    addon_req_annotate(req, "github-app: query-params");
    ans->status = 403;
    ans->error = "graphql_repo_scope_blocked";
    ans->with_request = 0;
    ans->verdict = "BLOCKED";
    snprintf(ans->message, sizeof(ans->message),
             "GraphQL requests with a GitHub App token may not carry query parameters: send the "
             "query in the POST body.");
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "query-params");
    ans->log_tail[0] = '\0';
    return 1;
}

/* A reading of the path (no query) whose last segment, trailing slashes aside, is "graphql" or
 * "graphql.<format>" (Rails serves /graphql.json as /graphql), in any case. */
static int ghapp_graphql_reading(const char *path, size_t len, void *ctx)
{
    (void)ctx;
    while (len > 0 && path[len - 1] == '/')
        len--;
    size_t seg = len;
    while (seg > 0 && path[seg - 1] != '/')
        seg--;
    if (seg == 0)
        return 0; /* no '/' before it: not a path */
    static const char name[] = "graphql";
    size_t nl = sizeof(name) - 1;
    if (len - seg < nl || strncasecmp(path + seg, name, nl) != 0)
        return 0;
    return len - seg == nl || path[seg + nl] == '.';
}

int addon_ghapp_graphql_path(const addon_req_t *req)
{
    return addon_req_path_any(req, ghapp_graphql_reading, NULL) != 0;
}

/* The 403 of a scope refusal: message by verdict, detail, annotation. */
static void ghapp_scope_answer(addon_req_t *req, addon_answer_t *ans, const char *message,
                               const char *detail)
{
    addon_req_annotate(req, "github-app: graphql-scope-blocked: %s", detail);
    ans->status = 403;
    ans->error = "graphql_repo_scope_blocked";
    ans->with_request = 0;
    ans->verdict = "BLOCKED";
    snprintf(ans->message, sizeof(ans->message), "%s", message);
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "%s", detail);
    ans->log_tail[0] = '\0';
}

int addon_ghapp_graphql_scope(addon_req_t *req, const struct addon_ghrepos *repos, const char *body,
                              size_t len, addon_answer_t *ans)
{
    static const char outside[] =
        "This GraphQL request targets a repository outside the GitHub App installation's "
        "repositories (or an object that cannot be tied to one of them); airlock refused it.";
    static const char unreadable[] =
        "airlock could not read the repositories this GraphQL request targets and refused it.";
    if (len > ADDON_GHSCOPE_BODY_CAP) {
        addon_req_note(req, ADDON_NOTE_GRAPHQL_SCOPE, NULL, 0, "unreadable: <too-large>");
        ghapp_scope_answer(req, ans, unreadable, "<too-large>");
        return 1;
    }
    if (repos == NULL) {
        ghapp_scope_answer(req, ans,
                           "The GitHub App installation's repositories could not be fetched, so "
                           "airlock refuses GraphQL requests with its token.",
                           "<repositories-unknown>");
        return 1;
    }
    int e = addon_req_find(req, "content-encoding", 0);
    if (e >= 0 && req->headers[e].value.len > 0 &&
        !(req->headers[e].value.len == 8 &&
          strncasecmp(req->headers[e].value.base, "identity", 8) == 0)) {
        addon_req_note(req, ADDON_NOTE_GRAPHQL_SCOPE, NULL, 0, "unreadable: <content-encoding>");
        ghapp_scope_answer(req, ans, unreadable, "<content-encoding>");
        return 1;
    }
    char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
    size_t n = 0;
    int v = addon_ghscope_check(body, len, repos, detail, sizeof(detail), &n);
    if (v == ADDON_GHSCOPE_PASS)
        return 0;
    if (v < 0) {
        addon_req_note(req, ADDON_NOTE_GRAPHQL_SCOPE, NULL, 0, "internal: out of memory");
        snprintf(detail, sizeof(detail), "<internal-error>");
    } else if (v == ADDON_GHSCOPE_UNREADABLE) {
        addon_req_note(req, ADDON_NOTE_GRAPHQL_SCOPE, NULL, 0, "unreadable: %s", detail);
    }
    ghapp_scope_answer(req, ans, v == ADDON_GHSCOPE_OUTSIDE ? outside : unreadable, detail);
    return 1;
}

void addon_ghapp_refresh_failed(addon_req_t *req, addon_answer_t *ans, const char *why)
{
    addon_req_note(req, ADDON_NOTE_GHAPP_TOKEN, NULL, 0, "%s", why);
    addon_req_annotate(req, "github-app: refresh-failed");
    ans->status = 502;
    ans->error = "github_app_token_refresh_failed";
    ans->with_request = 0;
    ans->verdict = "allowed";
    snprintf(ans->message, sizeof(ans->message), "Failed to refresh GitHub App installation token");
    ans->log_tail[0] = '\0';
}
