#include "addons/addon_aws.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "addons/addon_replacements.h"
#include "base/px_err.h"
#include "signing/sig_auth.h"
#include "signing/sig_chunked.h"
#include "signing/sig_encode.h"
#include "signing/sig_resign.h"
#include "signing/sig_v4.h"
#include "signing/sig_v4a.h"

/* Per-request state, kept from the head to the end of the body. */
typedef struct addon__aws {
    sig_auth_t auth; /* the client's authentication (views into the request or auth.store) */
    addon_replacements_aws_t creds; /* views into the request's snapshot */
    sig_str_t region;               /* annotation: V4 scope region, V4A region set */
    sig_chunked_t *chunked;         /* aws-chunked body re-signer */
    const addon_sink_t *sink;       /* where the re-signer writes (valid during a body call) */
    int deferred;                   /* no payload hash: sign when the whole body is known */
    int have_hash;
    char body_hash[SIG_SHA256_HEX_LEN];
} addon__aws_t;

/* The x-amz-content-sha256 values that announce a signed aws-chunked body. */
static const struct {
    const char *value;
    sig_alg_t alg;
    int trailer;
} addon__streaming[] = {
    {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", SIG_ALG_V4, 0},
    {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", SIG_ALG_V4, 1},
    {"STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", SIG_ALG_V4A, 0},
    {"STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER", SIG_ALG_V4A, 1},
};

/* ---- SigV4A key cache ----------------------------------------------------------------------
 * Deriving a SigV4A key costs a few HMACs and a scalar multiplication; it depends only on
 * (access key id, secret), so the pairs of the real credentials are kept, at most
 * ADDON_AWS_KEY_CACHE of them, least recently used out first. A slot is named by
 * HMAC-SHA256(secret, akid), which reveals neither. The loop is single-threaded today; the
 * mutex keeps the cache correct if that changes. */
typedef struct addon__key_slot {
    unsigned char id[SIG_SHA256_LEN];
    EVP_PKEY *key; /* NULL: empty slot */
    unsigned long used;
} addon__key_slot_t;

static struct {
    pthread_mutex_t mu;
    addon__key_slot_t slot[ADDON_AWS_KEY_CACHE];
    unsigned long tick;
    unsigned long derivations;
} addon__keys = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* A reference to the SigV4A key of (akid, secret) in *out (EVP_PKEY_free it). 0 or the
 * sig_v4a_derive_key() error. */
static int addon__key_get(sig_str_t akid, sig_str_t secret, EVP_PKEY **out)
{
    unsigned char id[SIG_SHA256_LEN];
    *out = NULL;
    if (sig_hmac_sha256(secret.base, secret.len, akid.base, akid.len, id) != 0)
        return PX_ECRYPTO;
    pthread_mutex_lock(&addon__keys.mu);
    for (size_t i = 0; i < ADDON_AWS_KEY_CACHE; i++) {
        addon__key_slot_t *s = &addon__keys.slot[i];
        if (s->key != NULL && CRYPTO_memcmp(s->id, id, sizeof(id)) == 0 &&
            EVP_PKEY_up_ref(s->key) == 1) {
            s->used = ++addon__keys.tick;
            *out = s->key;
            break;
        }
    }
    pthread_mutex_unlock(&addon__keys.mu);
    if (*out != NULL)
        return 0;

    EVP_PKEY *key = NULL;
    int rc = sig_v4a_derive_key(akid, secret, &key);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&addon__keys.mu);
    addon__keys.derivations++;
    addon__key_slot_t *victim = &addon__keys.slot[0];
    for (size_t i = 0; i < ADDON_AWS_KEY_CACHE; i++) {
        addon__key_slot_t *s = &addon__keys.slot[i];
        if (s->key == NULL) {
            victim = s;
            break;
        }
        if (s->used < victim->used)
            victim = s;
    }
    if (EVP_PKEY_up_ref(key) == 1) {
        EVP_PKEY_free(victim->key);
        memcpy(victim->id, id, sizeof(id));
        victim->key = key;
        victim->used = ++addon__keys.tick;
    }
    pthread_mutex_unlock(&addon__keys.mu);
    *out = key;
    return 0;
}

void addon_aws_key_cache_stats(size_t *entries, unsigned long *derivations)
{
    size_t n = 0;
    pthread_mutex_lock(&addon__keys.mu);
    for (size_t i = 0; i < ADDON_AWS_KEY_CACHE; i++)
        n += addon__keys.slot[i].key != NULL;
    if (derivations != NULL)
        *derivations = addon__keys.derivations;
    pthread_mutex_unlock(&addon__keys.mu);
    if (entries != NULL)
        *entries = n;
}

void addon_aws_key_cache_clear(void)
{
    pthread_mutex_lock(&addon__keys.mu);
    for (size_t i = 0; i < ADDON_AWS_KEY_CACHE; i++) {
        EVP_PKEY_free(addon__keys.slot[i].key);
        memset(&addon__keys.slot[i], 0, sizeof(addon__keys.slot[i]));
    }
    pthread_mutex_unlock(&addon__keys.mu);
}

/* ---- helpers ------------------------------------------------------------------------------- */

static void addon__fail(addon_answer_t *ans, const char *why)
{
    ans->status = 403;
    ans->error = "signing_failed";
    ans->with_request = 0;
    ans->verdict = "ERROR";
    snprintf(ans->message, sizeof(ans->message),
             "airlock could not re-sign this AWS request (%s); it was not sent. Sign it with "
             "the credentials from the environment using a standard AWS SDK or CLI.",
             why);
    snprintf(ans->log_tail, sizeof(ans->log_tail), " (signing failed: %s)", why);
}

static int addon__find(const addon_req_t *req, const char *name)
{
    return addon_req_find(req, name, 0);
}

/* 1 when an aws-sigv4 surrogate key id whose entry covers host occurs in s. */
static int addon__mentions_surrogate(const addon_replacements_t *r, const char *s, size_t len,
                                     addon_str_t host)
{
    size_t n = addon_replacements_count(r);
    for (size_t i = 0; i < n; i++) {
        if (addon_replacements_kind(r, i) != ADDON_REPLACEMENTS_AWS_SIGV4)
            continue;
        addon_str_t sur = addon_replacements_surrogate(r, i);
        if (sur.len > 0 && sur.len <= len && memmem(s, len, sur.base, sur.len) != NULL &&
            addon_replacements_in_scope(r, i, host))
            return 1;
    }
    return 0;
}

static void addon__skew(addon_req_t *req, const char *amz, size_t len)
{
    if (len != SIG_AMZ_DATE_LEN || !sig_amz_date_valid(amz, len))
        return;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    char buf[SIG_AMZ_DATE_LEN + 1];
    memcpy(buf, amz, len);
    buf[len] = '\0';
    if (strptime(buf, "%Y%m%dT%H%M%SZ", &tm) == NULL)
        return;
    time_t then = timegm(&tm);
    time_t now = time(NULL);
    long drift = (long)(now > then ? now - then : then - now);
    if (drift <= ADDON_AWS_SKEW_S)
        return;
    struct tm nt;
    gmtime_r(&now, &nt);
    char nowbuf[32];
    strftime(nowbuf, sizeof(nowbuf), "%Y%m%dT%H%M%SZ", &nt);
    addon_req_note(req, ADDON_NOTE_WARNING, NULL, 0,
                   "Container clock skew detected: x-amz-date=%s, proxy-time=%s (drift=%ldm). "
                   "Upstream rejection likely.",
                   buf, nowbuf, drift / 60);
}

/* " [masked: 1] [region: R]"; R is client text, so only plain bytes reach the log. */
static void addon__annotate(addon_req_t *req, const addon__aws_t *st)
{
    char region[ADDON_AWS_REGION_MAX];
    size_t n = 0;
    for (size_t i = 0; i < st->region.len && n < sizeof(region); i++) {
        unsigned char ch = (unsigned char)st->region.base[i];
        int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || strchr("-_.,* ", ch) != NULL;
        region[n++] = plain && ch != '\0' ? (char)ch : '?';
    }
    addon_req_annotate(req, "masked: 1");
    if (n > 0)
        addon_req_annotate(req, "region: %.*s", (int)n, region);
}

/* The request's headers as the signer wants them (live ones, wire order). */
static size_t addon__sig_headers(const addon_req_t *req, sig_header_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < req->nheaders && n < cap; i++) {
        if (req->headers[i].removed)
            continue;
        out[n].name.base = req->headers[i].name.base;
        out[n].name.len = req->headers[i].name.len;
        out[n].value.base = req->headers[i].value.base;
        out[n].value.len = req->headers[i].value.len;
        n++;
    }
    return n;
}

/* Puts exactly one X-Amz-Security-Token with the real token (header form), or none. */
static int addon__set_token(addon_req_t *req, const addon_replacements_aws_t *c)
{
    int first = addon__find(req, "x-amz-security-token");
    if (c->session_token.len == 0) {
        while (first >= 0) {
            addon_req_remove_header(req, (size_t)first);
            first = addon_req_find(req, "x-amz-security-token", (size_t)first + 1);
        }
        return 0;
    }
    if (first < 0)
        return addon_req_add_header(req, "X-Amz-Security-Token", 20, c->session_token.base,
                                    c->session_token.len);
    int rc = addon_req_set_value(req, (size_t)first, c->session_token.base, c->session_token.len);
    for (int i = addon_req_find(req, "x-amz-security-token", (size_t)first + 1); i >= 0;
         i = addon_req_find(req, "x-amz-security-token", (size_t)i + 1))
        addon_req_remove_header(req, (size_t)i);
    return rc;
}

/* 1 when the (possibly %-encoded) query name k equals name. */
static int addon__qkey_is(const char *k, size_t klen, const char *name)
{
    char buf[32];
    sig_buf_t b;
    sig_buf_init(&b, buf, sizeof(buf), sizeof(buf));
    if (sig_uri_decode(&b, k, klen) != 0)
        return 0;
    return b.len == strlen(name) && memcmp(b.base, name, b.len) == 0;
}

/* SIG_OPT_* of a presigned request, read from the wire (there is no surrogate secret to try
 * the layouts with sig_verify): a token after X-Amz-Signature was appended unsigned; non-S3
 * services sign SHA-256("") as the payload line (an X-Amz-Content-Sha256 parameter, when
 * present, takes precedence inside the signer). */
static unsigned addon__presigned_flags(addon_str_t path, const sig_auth_t *auth)
{
    unsigned flags = 0;
    const char *q = memchr(path.base, '?', path.len);
    if (q != NULL) {
        const char *end = path.base + path.len;
        const char *p = q + 1;
        int after_sig = 0;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            const char *pe = amp != NULL ? amp : end;
            const char *eq = memchr(p, '=', (size_t)(pe - p));
            size_t klen = (size_t)((eq != NULL ? eq : pe) - p);
            if (addon__qkey_is(p, klen, "X-Amz-Signature"))
                after_sig = 1;
            else if (after_sig && addon__qkey_is(p, klen, "X-Amz-Security-Token"))
                flags |= SIG_OPT_UNSIGNED_TOKEN;
            p = pe + 1;
        }
    }
    if (!sig_service_is_s3(auth->service))
        flags |= SIG_OPT_EMPTY_PAYLOAD;
    return flags;
}

static int on_chunk_out(void *data, const char *buf, size_t len)
{
    addon__aws_t *st = data;
    return st->sink->write(st->sink->data, buf, len);
}

/* Index in addon__streaming of the request's x-amz-content-sha256, or -1. */
static int addon__streaming_kind(const addon_req_t *req)
{
    int ci = addon__find(req, "x-amz-content-sha256");
    if (ci < 0)
        return -1;
    addon_str_t v = req->headers[ci].value;
    for (size_t k = 0; k < sizeof(addon__streaming) / sizeof(addon__streaming[0]); k++)
        if (v.len == strlen(addon__streaming[k].value) &&
            strncasecmp(v.base, addon__streaming[k].value, v.len) == 0)
            return (int)k;
    return -1;
}

/* Re-signs the head. payload: the hash to sign, or base NULL to take the request's. On failure
 * *why says why (static text) and nothing of the request was changed that could go out. */
static int addon__resign(addon_req_t *req, addon__aws_t *st, sig_str_t payload, const char **why)
{
    sig_header_t hdrs[ADDON_MAX_HEADERS + 8];
    const addon_replacements_aws_t *rcreds = &st->creds;
    int kind = st->auth.presigned ? -1 : addon__streaming_kind(req);
    if (kind >= 0 && addon__streaming[kind].alg != st->auth.alg) {
        *why = "the aws-chunked payload type does not match the signing algorithm";
        return PX_EPARSE;
    }
    /* The client's headers as sent: the signer substitutes the real token itself, and adds
     * x-amz-security-token to the signed list only when the client sent none. */
    size_t nh = addon__sig_headers(req, hdrs, sizeof(hdrs) / sizeof(hdrs[0]));
    sig_request_t sreq = {
        .method = {req->method.base, req->method.len},
        .target = {req->path.base, req->path.len},
        .headers = hdrs,
        .nheaders = nh,
    };
    sig_creds_t creds = {
        .access_key_id = {rcreds->access_key_id.base, rcreds->access_key_id.len},
        .secret = {rcreds->secret_access_key.base, rcreds->secret_access_key.len},
        .session_token = {rcreds->session_token.len ? rcreds->session_token.base : NULL,
                          rcreds->session_token.len},
        .v4a_key = NULL,
    };
    EVP_PKEY *key = NULL;
    char *out = NULL;
    size_t cap = 0;
    sig_result_t res;
    memset(&res, 0, sizeof(res));
    int rc;
    if (st->auth.alg == SIG_ALG_V4A) {
        rc = addon__key_get(creds.access_key_id, creds.secret, &key);
        if (rc != 0) {
            *why = "SigV4A key derivation failed";
            goto done;
        }
        creds.v4a_key = key;
    }
    sig_opts_t opts;
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = sig_service_is_s3(st->auth.service) ? SIG_URI_S3 : SIG_URI_NORMALIZE;
    opts.payload_hash = payload;
    /* presigned: the query grows by the real key id, scope and token, each %-encoded */
    cap = st->auth.presigned
              ? req->path.len +
                    3 * (creds.access_key_id.len + st->auth.scope.len + creds.session_token.len) +
                    SIG_SIG_MAX + 64
              : SIG_AUTH_VALUE_MAX;
    out = malloc(cap);
    if (out == NULL) {
        *why = "out of memory";
        rc = PX_ENOMEM;
        goto done;
    }
    size_t outlen = 0;
    if (st->auth.presigned) {
        opts.flags = addon__presigned_flags(req->path, &st->auth);
        rc = sig_resign_query(&sreq, &st->auth, &creds, &opts, out, cap, &outlen, &res);
    } else {
        rc = sig_resign_header(&sreq, &st->auth, &creds, &opts, out, cap, &outlen, &res);
    }
    if (rc != 0) {
        *why = rc == PX_EPARSE     ? "malformed request or X-Amz-Date"
               : rc == PX_ESIGNING ? "no payload hash"
               : rc == PX_ETOOBIG  ? "request too large to sign"
                                   : "signing error";
        goto done;
    }
    if (st->auth.presigned) {
        /* the path keeps its bytes up to '?'; the query is the re-signed one */
        const char *q = memchr(req->path.base, '?', req->path.len);
        size_t plen = q != NULL ? (size_t)(q - req->path.base) : req->path.len;
        size_t nlen = plen + 1 + outlen;
        char *np = malloc(nlen);
        char *kept = NULL;
        if (np != NULL) {
            memcpy(np, req->path.base, plen);
            np[plen] = '?';
            memcpy(np + plen + 1, out, outlen);
            kept = addon_req_dup(req, np, nlen);
            OPENSSL_cleanse(np, nlen);
            free(np);
        }
        if (kept == NULL) {
            *why = "out of memory";
            rc = PX_ENOMEM;
            goto done;
        }
        req->path.base = kept;
        req->path.len = plen + 1 + outlen;
    } else {
        int ai = addon__find(req, "authorization");
        if (ai < 0 || addon_req_set_value(req, (size_t)ai, out, outlen) != 0 ||
            addon__set_token(req, rcreds) != 0) {
            *why = "out of memory";
            rc = PX_ENOMEM;
            goto done;
        }
        for (int i = addon_req_find(req, "authorization", (size_t)ai + 1); i >= 0;
             i = addon_req_find(req, "authorization", (size_t)i + 1))
            addon_req_remove_header(req, (size_t)i);
    }

    if (kind >= 0) {
        /* an aws-chunked body continues the chain from this signature */
        sig_chunked_config_t cc;
        memset(&cc, 0, sizeof(cc));
        cc.alg = st->auth.alg;
        cc.trailer = addon__streaming[kind].trailer;
        cc.amz_date = res.amz_date;
        cc.scope = st->auth.scope;
        cc.seed.base = res.signature;
        cc.seed.len = res.signature_len;
        cc.v4_key = res.v4_key;
        cc.v4a_key = key;
        rc = sig_chunked_new(&cc, on_chunk_out, st, &st->chunked);
        if (rc != 0) {
            *why = "cannot re-sign the aws-chunked body";
            goto done;
        }
        req->body_mode = ADDON_BODY_STREAM;
    }
done:
    if (out != NULL) {
        OPENSSL_cleanse(out, cap);
        free(out);
    }
    OPENSSL_cleanse(&res, sizeof(res));
    EVP_PKEY_free(key);
    return rc;
}

/* The answer to a request that would carry a real session token over plain http. */
static void addon__plain_http(addon_answer_t *ans)
{
    ans->status = 403;
    ans->error = "credentials_require_https";
    ans->with_request = 1;
    ans->verdict = "BLOCKED";
    snprintf(ans->message, sizeof(ans->message),
             "This request would carry an AWS session token that airlock only injects over "
             "https, so it never crosses the network in clear. Use https:// for this host (or ask "
             "the user to set allow_plain_http on the credential).");
    snprintf(ans->log_tail, sizeof(ans->log_tail), " (credential needs https)");
}

/* ---- hooks --------------------------------------------------------------------------------- */

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    if (req->credentials_done || req->config == NULL || req->config->replacements == NULL)
        return ADDON_NEXT;
    const addon_replacements_t *repl = req->config->replacements;
    int ai = addon__find(req, "authorization");
    const char *q = memchr(req->path.base, '?', req->path.len);
    int presigned = 0;
    const char *src;
    size_t srclen;
    if (ai >= 0) {
        src = req->headers[ai].value.base;
        srclen = req->headers[ai].value.len;
        if (srclen < 5 || strncmp(src, "AWS4-", 5) != 0)
            return ADDON_NEXT;
    } else if (q != NULL && memmem(q, req->path.len - (size_t)(q - req->path.base),
                                   "X-Amz-Credential=", 17) != NULL) {
        presigned = 1;
        src = q + 1;
        srclen = req->path.len - (size_t)(q - req->path.base) - 1;
    } else {
        return ADDON_NEXT;
    }
    addon__aws_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PX_ENOMEM;
    int prc = presigned ? sig_auth_parse_query(src, srclen, &st->auth)
                        : sig_auth_parse_header(src, srclen, &st->auth);
    if (prc != 0) {
        free(st);
        /* unparseable but naming one of our surrogates toward its scope: never let it out */
        if (!addon__mentions_surrogate(repl, src, srclen, req->host))
            return ADDON_NEXT;
        addon__fail(ans, presigned ? "malformed presigned URL" : "malformed Authorization");
        return ADDON_ANSWER;
    }
    addon_str_t akid = {st->auth.access_key_id.base, st->auth.access_key_id.len};
    int idx = addon_replacements_find_aws(repl, akid);
    if (idx < 0 || !addon_replacements_in_scope(repl, (size_t)idx, req->host)) {
        /* not ours, or out of scope: the surrogate goes out unchanged and is useless there */
        free(st);
        return ADDON_NEXT;
    }
    if (addon_replacements_aws(repl, (size_t)idx, &st->creds) != 0) {
        free(st);
        addon__fail(ans, "credentials unavailable");
        return ADDON_ANSWER;
    }
    if (!req->tls && st->creds.session_token.len > 0 &&
        !addon_replacements_allow_plain_http(repl, (size_t)idx)) {
        /* the real session token would cross the network in clear */
        free(st);
        addon__plain_http(ans);
        return ADDON_ANSWER;
    }
    if (st->auth.alg == SIG_ALG_V4) {
        st->region = st->auth.region;
    } else if (presigned) {
        st->region = st->auth.region_set;
    } else {
        int ri = addon__find(req, "x-amz-region-set");
        if (ri >= 0) {
            st->region.base = req->headers[ri].value.base;
            st->region.len = req->headers[ri].value.len;
        }
    }
    req->state = st;
    req->state_owner = self;
    req->credentials_done = 1;

    if (!presigned) {
        int di = addon__find(req, "x-amz-date");
        if (di >= 0)
            addon__skew(req, req->headers[di].value.base, req->headers[di].value.len);
        if (addon__find(req, "x-amz-content-sha256") < 0) {
            /* no payload hash: the body is hashed once it is all here */
            st->deferred = 1;
            req->body_mode = ADDON_BODY_BUFFER;
            req->body_cap = ADDON_AWS_BODY_CAP;
            return ADDON_NEXT;
        }
    }
    const char *why = "signing error";
    sig_str_t none = {NULL, 0};
    if (addon__resign(req, st, none, &why) != 0) {
        addon__fail(ans, why);
        return ADDON_ANSWER;
    }
    addon__annotate(req, st);
    return ADDON_NEXT;
}

static int on_request_body(const addon_t *self, addon_req_t *req, const char *data, size_t len,
                           const addon_sink_t *out)
{
    addon__aws_t *st = req->state;
    if (req->state_owner != self || st == NULL)
        return out->write(out->data, data, len);
    if (st->deferred) {
        /* ADDON_BODY_BUFFER: the whole body, once; signed in on_request_body_end */
        if (sig_sha256_hex(data, len, st->body_hash) != 0)
            return PX_ECRYPTO;
        st->have_hash = 1;
        return out->write(out->data, data, len);
    }
    if (st->chunked == NULL)
        return out->write(out->data, data, len);
    st->sink = out;
    int rc = sig_chunked_feed(st->chunked, data, len);
    st->sink = NULL;
    return rc;
}

static int on_request_body_end(const addon_t *self, addon_req_t *req, const addon_sink_t *out,
                               addon_answer_t *ans)
{
    addon__aws_t *st = req->state;
    if (req->state_owner != self || st == NULL)
        return ADDON_NEXT;
    if (st->deferred) {
        /* an empty body never reached on_request_body */
        const char *why = "signing error";
        sig_str_t payload = {st->have_hash ? st->body_hash : SIG_EMPTY_SHA256, SIG_SHA256_HEX_LEN};
        if (addon__resign(req, st, payload, &why) != 0) {
            addon__fail(ans, why);
            return ADDON_ANSWER;
        }
        st->deferred = 0;
        addon__annotate(req, st);
        return ADDON_NEXT;
    }
    if (st->chunked == NULL)
        return ADDON_NEXT;
    st->sink = out;
    int rc = sig_chunked_finish(st->chunked);
    st->sink = NULL;
    return rc == 0 ? ADDON_NEXT : PX_ESIGNING;
}

static void on_request_end(const addon_t *self, addon_req_t *req)
{
    if (req->state_owner != self || req->state == NULL)
        return;
    addon__aws_t *st = req->state;
    sig_chunked_free(st->chunked);
    OPENSSL_cleanse(st, sizeof(*st));
    free(st);
    req->state = NULL;
    req->state_owner = NULL;
}

static const addon_t addon__aws = {
    .name = "aws",
    .on_request_head = on_request_head,
    .on_request_body = on_request_body,
    .on_request_body_end = on_request_body_end,
    .on_request_end = on_request_end,
};

const addon_t *addon_aws(void)
{
    return &addon__aws;
}
