#include "addons/addon_secrets.h"

#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "addons/addon_glob.h"
#include "base/px_b64.h"
#include "base/px_err.h"

#define ADDON__SECRETS_HEADERS_CAP (ADDON_MAX_HEADERS + 8) /* as addon_req_t.headers */
#define ADDON__SECRETS_BASIC "Basic "
#define ADDON__SECRETS_BASIC_LEN 6

/* Where values are built before addon_req_set_value copies them into the arena. On the stack,
 * wiped up to the high-water marks before the pass returns. */
typedef struct secrets__scratch {
    char out[ADDON_SECRETS_VALUE_MAX]; /* the new header value */
    char dec[ADDON_SECRETS_VALUE_MAX]; /* decoded Basic credentials */
    char rep[ADDON_SECRETS_VALUE_MAX]; /* the credentials with the surrogate replaced */
    size_t out_used;
    size_t dec_used;
    size_t rep_used;
} secrets__scratch_t;

/* A foreign-credential candidate: the first header of the name, and whether any entry that
 * named it exactly lacks allow_foreign_credentials. */
typedef struct secrets__cand {
    size_t idx;
    int strip;
} secrets__cand_t;

static int secrets_name_eq(addon_str_t a, addon_str_t b)
{
    return a.len == b.len && (a.len == 0 || strncasecmp(a.base, b.base, a.len) == 0);
}

static int secrets_name_is(addon_str_t a, const char *lit)
{
    size_t n = strlen(lit);
    return a.len == n && strncasecmp(a.base, lit, n) == 0;
}

/* Headers that frame or route the request: rewriting them could desynchronize the upstream. */
static int secrets_protected(addon_str_t name)
{
    return secrets_name_is(name, "host") || secrets_name_is(name, "content-length") ||
           secrets_name_is(name, "transfer-encoding");
}

/* 1 when a live header before idx has the same name (the name was handled there). */
static int secrets_seen_before(const addon_req_t *req, size_t idx)
{
    for (size_t j = 0; j < idx; j++) {
        if (!req->headers[j].removed &&
            secrets_name_eq(req->headers[j].name, req->headers[idx].name))
            return 1;
    }
    return 0;
}

/* Copies s[0..len) into out with every occurrence of sur (not empty) replaced by real; *outlen
 * gets the length written. The count of occurrences, or -1 when the result would exceed cap. */
static long secrets_subst(const char *s, size_t len, addon_str_t sur, addon_str_t real, char *out,
                          size_t cap, size_t *outlen)
{
    long count = 0;
    size_t o = 0;
    size_t i = 0;
    while (i < len) {
        const char *hit = len - i >= sur.len ? memmem(s + i, len - i, sur.base, sur.len) : NULL;
        size_t plain = hit != NULL ? (size_t)(hit - (s + i)) : len - i;
        if (plain > cap - o)
            return -1;
        memcpy(out + o, s + i, plain);
        o += plain;
        i += plain;
        if (hit == NULL)
            break;
        if (real.len > cap - o)
            return -1;
        if (real.len > 0)
            memcpy(out + o, real.base, real.len);
        o += real.len;
        i += sur.len;
        count++;
    }
    *outlen = o;
    return count;
}

static void secrets_mark(size_t *used, size_t n)
{
    if (n > *used)
        *used = n;
}

/* The surrogate inside "Basic base64(user:password)": 1 and sc->out[0..*outlen) holds the new
 * value; 0 when the value is not Basic or holds no surrogate; PX_ETOOBIG when it would not fit. */
static int secrets_basic(addon_str_t v, addon_str_t sur, addon_str_t real, secrets__scratch_t *sc,
                         size_t *outlen)
{
    if (v.len < ADDON__SECRETS_BASIC_LEN ||
        memcmp(v.base, ADDON__SECRETS_BASIC, ADDON__SECRETS_BASIC_LEN) != 0)
        return 0;
    long dlen = px_b64_decode(v.base + ADDON__SECRETS_BASIC_LEN, v.len - ADDON__SECRETS_BASIC_LEN,
                              (unsigned char *)sc->dec, sizeof(sc->dec));
    if (dlen < 0)
        return 0;
    secrets_mark(&sc->dec_used, (size_t)dlen);
    const char *colon = memchr(sc->dec, ':', (size_t)dlen);
    if (colon == NULL)
        return 0;
    size_t ulen = (size_t)(colon - sc->dec);
    size_t plen = (size_t)dlen - ulen - 1;
    size_t uout = 0;
    size_t pout = 0;
    long nu = secrets_subst(sc->dec, ulen, sur, real, sc->rep, sizeof(sc->rep), &uout);
    if (nu < 0)
        return PX_ETOOBIG;
    secrets_mark(&sc->rep_used, uout);
    if (uout >= sizeof(sc->rep))
        return PX_ETOOBIG;
    sc->rep[uout] = ':';
    char *p = sc->rep + uout + 1;
    size_t room = sizeof(sc->rep) - uout - 1;
    long np = secrets_subst(colon + 1, plen, sur, real, p, room, &pout);
    if (np < 0)
        return PX_ETOOBIG;
    size_t rlen = uout + 1 + pout;
    secrets_mark(&sc->rep_used, rlen);
    if (nu + np == 0)
        return 0;
    memcpy(sc->out, ADDON__SECRETS_BASIC, ADDON__SECRETS_BASIC_LEN);
    long elen = px_b64_encode((const unsigned char *)sc->rep, rlen,
                              sc->out + ADDON__SECRETS_BASIC_LEN,
                              sizeof(sc->out) - ADDON__SECRETS_BASIC_LEN);
    if (elen < 0)
        return PX_ETOOBIG;
    *outlen = ADDON__SECRETS_BASIC_LEN + (size_t)elen;
    secrets_mark(&sc->out_used, *outlen);
    return 1;
}

/* Tries value v: 1 and the new value in sc->out[0..*outlen), 0 when the surrogate is not in it,
 * PX_ETOOBIG when the result would exceed the cap. */
static int secrets_try_value(addon_str_t name, addon_str_t v, addon_str_t sur, addon_str_t real,
                             secrets__scratch_t *sc, size_t *outlen)
{
    if (v.len >= sur.len && memmem(v.base, v.len, sur.base, sur.len) != NULL) {
        long n = secrets_subst(v.base, v.len, sur, real, sc->out, sizeof(sc->out), outlen);
        if (n < 0)
            return PX_ETOOBIG;
        secrets_mark(&sc->out_used, *outlen);
        return 1;
    }
    if (secrets_name_is(name, "authorization"))
        return secrets_basic(v, sur, real, sc, outlen);
    return 0;
}

/* The lowercased header name for a log line, cut at ADDON_SECRETS_LOG_NAME_MAX bytes. */
static void secrets_log_name(addon_str_t name, char *out)
{
    size_t n = name.len < ADDON_SECRETS_LOG_NAME_MAX ? name.len : ADDON_SECRETS_LOG_NAME_MAX;
    for (size_t i = 0; i < n; i++) {
        char c = name.base[i];
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
    }
    out[n] = '\0';
}

/* Handles the name of header first (its first live occurrence) for one entry. *replaced is set
 * when a duplicate held the surrogate; the rest of the duplicates are then removed. */
static int secrets_one_name(addon_req_t *req, size_t first, addon_str_t sur, addon_str_t real,
                            const char *url, secrets__scratch_t *sc, int *replaced,
                            unsigned *collapsed)
{
    addon_str_t name = req->headers[first].name;
    size_t outlen = 0;
    int hit = 0;
    size_t count = 0;
    for (size_t j = first; j < req->nheaders; j++) {
        const addon_header_t *h = &req->headers[j];
        if (h->removed || !secrets_name_eq(h->name, name))
            continue;
        count++;
        if (hit)
            continue;
        int rc = secrets_try_value(name, h->value, sur, real, sc, &outlen);
        if (rc < 0)
            return rc;
        hit = rc;
    }
    *replaced = hit;
    if (!hit)
        return 0;
    int rc = addon_req_set_value(req, first, sc->out, outlen);
    if (rc != 0)
        return rc;
    for (size_t j = first + 1; j < req->nheaders; j++) {
        if (!req->headers[j].removed && secrets_name_eq(req->headers[j].name, name))
            addon_req_remove_header(req, j);
    }
    if (count > 1) {
        char lname[ADDON_SECRETS_LOG_NAME_MAX + 1];
        secrets_log_name(name, lname);
        addon_req_note_at(req, url, ADDON_NOTE_COLLAPSED, lname, (unsigned)count,
                       "duplicate credential headers removed");
        (*collapsed)++;
    }
    return 0;
}

/* Sets *hit when a header named as header first holds the surrogate; changes nothing. */
static int secrets_holds(const addon_req_t *req, size_t first, addon_str_t sur, addon_str_t real,
                         secrets__scratch_t *sc, int *hit)
{
    addon_str_t name = req->headers[first].name;
    size_t outlen = 0;
    *hit = 0;
    for (size_t j = first; j < req->nheaders && !*hit; j++) {
        const addon_header_t *h = &req->headers[j];
        if (h->removed || !secrets_name_eq(h->name, name))
            continue;
        int rc = secrets_try_value(name, h->value, sur, real, sc, &outlen);
        if (rc < 0)
            return rc;
        *hit = rc;
    }
    return 0;
}

static int secrets_matches(const addon_replacements_t *repl, size_t e, addon_str_t name, int *exact)
{
    int any = 0;
    *exact = 0;
    size_t n = addon_replacements_header_count(repl, e);
    for (size_t k = 0; k < n; k++) {
        int ex;
        addon_str_t pat = addon_replacements_header(repl, e, k, &ex);
        if (addon_glob_match_icase(pat.base, pat.len, name.base, name.len)) {
            any = 1;
            if (ex)
                *exact = 1;
        }
    }
    return any;
}

static void secrets_add_cand(secrets__cand_t *cand, size_t *ncand, const addon_req_t *req,
                             size_t idx, int strip)
{
    for (size_t c = 0; c < *ncand; c++) {
        if (secrets_name_eq(req->headers[cand[c].idx].name, req->headers[idx].name)) {
            cand[c].strip |= strip;
            return;
        }
    }
    cand[*ncand].idx = idx;
    cand[*ncand].strip = strip;
    (*ncand)++;
}

static int secrets_in_set(const addon_str_t *set, size_t n, addon_str_t name)
{
    for (size_t i = 0; i < n; i++) {
        if (secrets_name_eq(set[i], name))
            return 1;
    }
    return 0;
}

static int secrets_entries(addon_req_t *req, const addon_replacements_t *repl, const char *url,
                           secrets__scratch_t *sc, addon_secrets_result_t *res)
{
    secrets__cand_t cand[ADDON__SECRETS_HEADERS_CAP];
    size_t ncand = 0;
    addon_str_t done[ADDON__SECRETS_HEADERS_CAP]; /* names some entry replaced */
    size_t ndone = 0;
    size_t nh =
        req->nheaders < ADDON__SECRETS_HEADERS_CAP ? req->nheaders : ADDON__SECRETS_HEADERS_CAP;
    size_t n = addon_replacements_count(repl);
    for (size_t e = 0; e < n; e++) {
        if (addon_replacements_kind(repl, e) != ADDON_REPLACEMENTS_MASKED ||
            !addon_replacements_in_scope(repl, e, req->host))
            continue;
        addon_str_t sur = addon_replacements_surrogate(repl, e);
        addon_str_t real = addon_replacements_value(repl, e);
        if (sur.len == 0)
            continue; /* the loader refuses it; an empty needle would match everywhere */
        int strip = !addon_replacements_allow_foreign(repl, e);
        /* over plain http the real value would cross the network in clear: only look */
        int look_only = !req->tls && !addon_replacements_allow_plain_http(repl, e);
        for (size_t h = 0; h < nh; h++) {
            addon_str_t name = req->headers[h].name;
            int exact;
            if (req->headers[h].removed || !secrets_matches(repl, e, name, &exact) ||
                secrets_protected(name) || secrets_seen_before(req, h))
                continue;
            int replaced = 0;
            int rc = look_only ? secrets_holds(req, h, sur, real, sc, &replaced)
                               : secrets_one_name(req, h, sur, real, url, sc, &replaced,
                                                  &res->collapsed);
            if (rc == 0 && look_only && replaced) {
                res->plain_http++;
                continue;
            }
            if (rc != 0)
                return rc;
            if (replaced) {
                res->masked++;
                if (!secrets_in_set(done, ndone, name))
                    done[ndone++] = name;
            } else if (exact) {
                secrets_add_cand(cand, &ncand, req, h, strip);
            }
        }
    }
    for (size_t c = 0; c < ncand; c++) {
        addon_str_t name = req->headers[cand[c].idx].name;
        if (!cand[c].strip || secrets_in_set(done, ndone, name))
            continue;
        for (size_t j = 0; j < req->nheaders; j++) {
            if (!req->headers[j].removed && secrets_name_eq(req->headers[j].name, name))
                addon_req_remove_header(req, j);
        }
        res->dropped++;
        char lname[ADDON_SECRETS_LOG_NAME_MAX + 1];
        secrets_log_name(name, lname);
        addon_req_note_at(req, url, ADDON_NOTE_STRIPPED, lname, 0, "foreign credential blocked");
    }
    return 0;
}

int addon_secrets_apply(addon_req_t *req, const addon_replacements_t *repl, const char *url,
                        addon_secrets_result_t *res)
{
    addon_secrets_result_t local;
    if (res == NULL)
        res = &local;
    memset(res, 0, sizeof(*res));
    if (addon_replacements_count(repl) == 0)
        return 0;
    secrets__scratch_t sc;
    sc.out_used = 0;
    sc.dec_used = 0;
    sc.rep_used = 0;
    int rc = secrets_entries(req, repl, url, &sc, res);
    OPENSSL_cleanse(sc.out, sc.out_used);
    OPENSSL_cleanse(sc.dec, sc.dec_used);
    OPENSSL_cleanse(sc.rep, sc.rep_used);
    if (rc != 0)
        return rc;
    if (res->masked > 0)
        addon_req_annotate(req, "masked: %u", res->masked);
    if (res->dropped > 0)
        addon_req_annotate(req, "dropped: %u", res->dropped);
    return 0;
}
