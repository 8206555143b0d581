#include "addons/addon_aws.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "addons/addon_replacements.h"
#include "proxy/px_err.h"
#include "signing/sig_auth.h"
#include "signing/sig_chunked.h"
#include "signing/sig_encode.h"
#include "signing/sig_resign.h"
#include "signing/sig_v4a.h"

#include <openssl/evp.h>

/* Per-request state, kept from the head to the end of the body. */
typedef struct addon__aws {
    sig_auth_t auth;          /* the client's authentication (views into the request) */
    addon_replacements_aws_t creds;
    size_t entry;
    sig_chunked_t *chunked;   /* aws-chunked body re-signer */
    const addon_sink_t *sink; /* where the re-signer writes (valid during a body call) */
    int deferred;             /* no payload hash: sign when the whole body is known */
    int have_hash;
    char body_hash[SIG_SHA256_HEX_LEN];
} addon__aws_t;

static const char *const addon__streaming[] = {
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER",
};

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

/* 1 when any aws-sigv4 surrogate key id occurs in s. */
static int addon__mentions_surrogate(const addon_replacements_t *r, const char *s, size_t len)
{
    size_t n = addon_replacements_count(r);
    for (size_t i = 0; i < n; i++) {
        if (addon_replacements_kind(r, i) != ADDON_REPLACEMENTS_AWS_SIGV4)
            continue;
        addon_str_t sur = addon_replacements_surrogate(r, i);
        if (sur.len > 0 && sur.len <= len && memmem(s, len, sur.base, sur.len) != NULL)
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
    addon_req_log(req,
                  "WARNING: Container clock skew detected: x-amz-date=%s, proxy-time=%s "
                  "(drift=%ldm). Upstream rejection likely.",
                  buf, nowbuf, drift / 60);
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
    int rc = addon_req_set_value(req, (size_t)first, c->session_token.base,
                                 c->session_token.len);
    for (int i = addon_req_find(req, "x-amz-security-token", (size_t)first + 1); i >= 0;
         i = addon_req_find(req, "x-amz-security-token", (size_t)i + 1))
        addon_req_remove_header(req, (size_t)i);
    return rc;
}

static int on_chunk_out(void *data, const char *buf, size_t len)
{
    addon__aws_t *st = data;
    return st->sink->write(st->sink->data, buf, len);
}

/* Re-signs the head. payload: the hash to sign, or base NULL to take the request's. */
static int addon__resign(addon_req_t *req, addon__aws_t *st, sig_str_t payload,
                         const char **why)
{
    sig_header_t hdrs[ADDON_MAX_HEADERS + 8];
    /* the real token goes in place before canonicalization */
    if (!st->auth.presigned && addon__set_token(req, &st->creds) != 0) {
        *why = "out of memory";
        return PX_ENOMEM;
    }
    size_t nh = addon__sig_headers(req, hdrs, sizeof(hdrs) / sizeof(hdrs[0]));
    sig_request_t sreq = {
        .method = {req->method.base, req->method.len},
        .target = {req->path.base, req->path.len},
        .headers = hdrs,
        .nheaders = nh,
    };
    sig_creds_t creds = {
        .access_key_id = {st->creds.access_key_id.base, st->creds.access_key_id.len},
        .secret = {st->creds.secret_access_key.base, st->creds.secret_access_key.len},
        .session_token = {st->creds.session_token.len ? st->creds.session_token.base : NULL,
                          st->creds.session_token.len},
        .v4a_key = NULL,
    };
    sig_opts_t opts;
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = sig_service_is_s3(st->auth.service) ? SIG_URI_S3 : SIG_URI_NORMALIZE;
    opts.payload_hash = payload;
    sig_result_t res;
    size_t cap = st->auth.presigned ? req->path.len + 4096 : SIG_AUTH_VALUE_MAX;
    char *out = malloc(cap);
    if (out == NULL) {
        *why = "out of memory";
        return PX_ENOMEM;
    }
    size_t outlen = 0;
    int rc;
    if (st->auth.presigned) {
        if (st->auth.has_token && st->creds.session_token.len == 0) {
            /* a surrogate token the entry has no real token for */
        }
        rc = sig_resign_query(&sreq, &st->auth, &creds, &opts, out, cap, &outlen, &res);
    } else {
        rc = sig_resign_header(&sreq, &st->auth, &creds, &opts, out, cap, &outlen, &res);
    }
    if (rc != 0) {
        explicit_bzero(out, cap);
        free(out);
        *why = rc == PX_EPARSE     ? "malformed request or X-Amz-Date"
               : rc == PX_ESIGNING ? "no payload hash"
               : rc == PX_ETOOBIG  ? "request too large to sign"
                                   : "signing error";
        return rc;
    }
    if (st->auth.presigned) {
        /* the path keeps its bytes up to '?'; the query is the re-signed one */
        const char *q = memchr(req->path.base, '?', req->path.len);
        size_t plen = q != NULL ? (size_t)(q - req->path.base) : req->path.len;
        char *np = malloc(plen + 1 + outlen);
        if (np == NULL) {
            free(out);
            *why = "out of memory";
            return PX_ENOMEM;
        }
        memcpy(np, req->path.base, plen);
        np[plen] = '?';
        memcpy(np + plen + 1, out, outlen);
        char *kept = addon_req_dup(req, np, plen + 1 + outlen);
        explicit_bzero(np, plen + 1 + outlen);
        free(np);
        if (kept == NULL) {
            free(out);
            *why = "out of memory";
            return PX_ENOMEM;
        }
        req->path.base = kept;
        req->path.len = plen + 1 + outlen;
    } else {
        int ai = addon__find(req, "authorization");
        if (ai < 0 || addon_req_set_value(req, (size_t)ai, out, outlen) != 0) {
            free(out);
            *why = "out of memory";
            return PX_ENOMEM;
        }
        for (int i = addon_req_find(req, "authorization", (size_t)ai + 1); i >= 0;
             i = addon_req_find(req, "authorization", (size_t)i + 1))
            addon_req_remove_header(req, (size_t)i);
    }
    explicit_bzero(out, cap);
    free(out);

    /* an aws-chunked body continues the chain from this signature */
    int ci = addon__find(req, "x-amz-content-sha256");
    if (!st->auth.presigned && ci >= 0) {
        addon_str_t v = req->headers[ci].value;
        for (size_t k = 0; k < sizeof(addon__streaming) / sizeof(addon__streaming[0]); k++) {
            if (v.len != strlen(addon__streaming[k]) ||
                strncasecmp(v.base, addon__streaming[k], v.len) != 0)
                continue;
            sig_chunked_config_t cc;
            memset(&cc, 0, sizeof(cc));
            cc.alg = st->auth.alg;
            cc.trailer = strstr(addon__streaming[k], "TRAILER") != NULL;
            cc.amz_date = res.amz_date;
            cc.scope = st->auth.scope;
            cc.seed.base = res.signature;
            cc.seed.len = res.signature_len;
            cc.v4_key = res.v4_key;
            EVP_PKEY *key = NULL;
            if (st->auth.alg == SIG_ALG_V4A &&
                sig_v4a_derive_key(creds.access_key_id, creds.secret, &key) != 0) {
                *why = "key derivation failed";
                return PX_ECRYPTO;
            }
            cc.v4a_key = key;
            rc = sig_chunked_new(&cc, on_chunk_out, st, &st->chunked);
            EVP_PKEY_free(key);
            explicit_bzero(res.v4_key, sizeof(res.v4_key));
            if (rc != 0) {
                *why = "cannot re-sign the aws-chunked body";
                return rc;
            }
            req->body_mode = ADDON_BODY_STREAM;
            break;
        }
    }
    explicit_bzero(res.v4_key, sizeof(res.v4_key));
    return 0;
}

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    if (req->credentials_done || req->config == NULL || req->config->replacements == NULL)
        return ADDON_NEXT;
    const addon_replacements_t *repl = req->config->replacements;
    int ai = addon__find(req, "authorization");
    const char *q = memchr(req->path.base, '?', req->path.len);
    int presigned = 0;
    addon__aws_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PX_ENOMEM;
    int prc;
    const char *src;
    size_t srclen;
    if (ai >= 0) {
        src = req->headers[ai].value.base;
        srclen = req->headers[ai].value.len;
        if (srclen < 5 || strncmp(src, "AWS4-", 5) != 0) {
            free(st);
            return ADDON_NEXT;
        }
        prc = sig_auth_parse_header(src, srclen, &st->auth);
    } else if (q != NULL && memmem(q, req->path.len - (size_t)(q - req->path.base),
                                   "X-Amz-Credential=", 17) != NULL) {
        presigned = 1;
        src = q + 1;
        srclen = req->path.len - (size_t)(q - req->path.base) - 1;
        prc = sig_auth_parse_query(src, srclen, &st->auth);
    } else {
        free(st);
        return ADDON_NEXT;
    }
    if (prc != 0) {
        int ours = addon__mentions_surrogate(repl, src, srclen);
        free(st);
        if (!ours)
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
    st->entry = (size_t)idx;
    if (addon_replacements_aws(repl, (size_t)idx, &st->creds) != 0) {
        free(st);
        addon__fail(ans, "credentials unavailable");
        return ADDON_ANSWER;
    }
    req->state = st;
    req->state_owner = self;
    req->credentials_done = 1;

    int ci = addon__find(req, "x-amz-content-sha256");
    if (!presigned) {
        int di = addon__find(req, "x-amz-date");
        if (di >= 0)
            addon__skew(req, req->headers[di].value.base, req->headers[di].value.len);
    }
    if (!presigned && ci < 0) {
        /* no payload hash: the body is hashed once it is all here */
        st->deferred = 1;
        req->body_mode = ADDON_BODY_BUFFER;
        req->body_cap = ADDON_AWS_BODY_CAP;
        return ADDON_NEXT;
    }
    const char *why = NULL;
    sig_str_t none = {NULL, 0};
    if (addon__resign(req, st, none, &why) != 0) {
        addon__fail(ans, why);
        return ADDON_ANSWER;
    }
    addon_req_annotate(req, "masked: 1");
    if (st->auth.region.len > 0)
        addon_req_annotate(req, "region: %.*s", (int)st->auth.region.len, st->auth.region.base);
    else if (st->auth.region_set.len > 0)
        addon_req_annotate(req, "region: %.*s", (int)st->auth.region_set.len,
                           st->auth.region_set.base);
    return ADDON_NEXT;
}

static int on_request_body(const addon_t *self, addon_req_t *req, const char *data, size_t len,
                           const addon_sink_t *out)
{
    addon__aws_t *st = req->state;
    if (req->state_owner != self || st == NULL)
        return out->write(out->data, data, len);
    if (st->deferred) {
        /* the whole body, once: remember its hash (signed in on_request_body_end) */
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
        /* the body's hash (an empty body never reached on_request_body) */
        const char *why = NULL;
        static const char empty[] =
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        sig_str_t payload = {st->have_hash ? st->body_hash : empty, SIG_SHA256_HEX_LEN};
        if (addon__resign(req, st, payload, &why) != 0) {
            addon__fail(ans, why);
            return ADDON_ANSWER;
        }
        st->deferred = 0;
        addon_req_annotate(req, "masked: 1");
        if (st->auth.region.len > 0)
            addon_req_annotate(req, "region: %.*s", (int)st->auth.region.len,
                               st->auth.region.base);
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
    explicit_bzero(st, sizeof(*st));
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
