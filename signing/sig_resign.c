#include "signing/sig_resign.h"

#include <stdint.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/px_err.h"
#include "signing/sig_v4.h"
#include "signing/sig_v4a.h"

#define SIG__CREQ_STACK 4096 /* canonical requests up to this size need no heap */
#define SIG__STS_STACK 512   /* string to sign: 4 short lines */
#define SIG__QKEY_MAX 32     /* longest query name decoded for comparison */

static const sig_str_t sig__no_token = {NULL, 0};

/* Payload line of a presigned request: the caller's, X-Amz-Content-Sha256, or the default. */
static sig_str_t sig__query_payload(const sig_auth_t *auth, const sig_opts_t *opts, unsigned flags)
{
    if (opts->payload_hash.base != NULL) {
        return opts->payload_hash;
    }
    if (auth->content_sha256.base != NULL) {
        return auth->content_sha256;
    }
    return (flags & SIG_OPT_EMPTY_PAYLOAD) ? SIG_STR(SIG_EMPTY_SHA256)
                                           : SIG_STR(SIG_UNSIGNED_PAYLOAD);
}

/* First header named lower (case-insensitive), value trimmed; 0 or PX_ENOENT. */
static int sig__find_header(const sig_request_t *req, const char *lower, sig_str_t *out)
{
    size_t i;

    for (i = 0; i < req->nheaders; i++) {
        const sig_header_t *h = &req->headers[i];

        if (sig_str_ieq(h->name.base, h->name.len, lower)) {
            size_t b = 0;
            size_t e = h->value.len;

            while (b < e && sig_is_space((unsigned char)h->value.base[b])) {
                b++;
            }
            while (e > b && sig_is_space((unsigned char)h->value.base[e - 1])) {
                e--;
            }
            out->base = h->value.base + b;
            out->len = e - b;
            return 0;
        }
    }
    return PX_ENOENT;
}

/* X-Amz-Date of a header-form request: present, well formed, same day as the scope. */
static int sig__header_date(const sig_request_t *req, const sig_auth_t *auth, sig_str_t *out)
{
    if (sig__find_header(req, "x-amz-date", out) != 0 || !sig_amz_date_valid(out->base, out->len) ||
        auth->date.len != 8 || memcmp(out->base, auth->date.base, 8) != 0) {
        return PX_EPARSE;
    }
    return 0;
}

/* Builds the canonical request of c, then the string to sign into sts. */
static int sig__build_sts(const sig_canon_t *c, const sig_auth_t *auth, sig_str_t amz_date,
                          const sig_opts_t *opts, sig_buf_t *sts)
{
    char stack[SIG__CREQ_STACK];
    char hash[SIG_SHA256_HEX_LEN];
    sig_buf_t local;
    sig_buf_t *creq = opts->creq != NULL ? opts->creq : &local;
    size_t start;
    int rc;

    sig_buf_init(&local, stack, sizeof(stack), SIG_CANON_MAX);
    start = creq->len;
    rc = sig_canonical_request(creq, c);
    if (rc == 0) {
        rc = sig_sha256_hex(creq->base + start, creq->len - start, hash);
    }
    sig_buf_free(&local);
    if (rc != 0) {
        return rc;
    }
    rc = sig_string_to_sign(sts, sig_alg_name(auth->alg), amz_date, auth->scope, hash);
    if (rc == 0 && opts->sts != NULL) {
        rc = sig_buf_add(opts->sts, sts->base, sts->len);
    }
    return rc;
}

/* Signs sts with creds for auth's algorithm and scope; fills res. */
static int sig__sign(const sig_auth_t *auth, const sig_creds_t *creds, const sig_buf_t *sts,
                     sig_result_t *res)
{
    EVP_PKEY *key = creds->v4a_key;
    int rc;

    memset(res->v4_key, 0, sizeof(res->v4_key));
    if (auth->alg == SIG_ALG_V4) {
        rc =
            sig_v4_signing_key(creds->secret, auth->date, auth->region, auth->service, res->v4_key);
        if (rc == 0) {
            rc = sig_v4_signature(res->v4_key, sts->base, sts->len, res->signature);
        }
        res->signature_len = rc == 0 ? SIG_V4_SIG_LEN : 0;
        res->signature[res->signature_len] = '\0';
        return rc;
    }
    if (key == NULL) {
        rc = sig_v4a_derive_key(creds->access_key_id, creds->secret, &key);
        if (rc != 0) {
            return rc;
        }
    }
    rc = sig_v4a_sign(key, sts->base, sts->len, res->signature, SIG_SIG_MAX, &res->signature_len);
    if (rc != 0) {
        res->signature_len = 0;
    }
    res->signature[res->signature_len] = '\0';
    if (key != creds->v4a_key) {
        EVP_PKEY_free(key);
    }
    return rc;
}

int sig_resign_header(const sig_request_t *req, const sig_auth_t *auth, const sig_creds_t *creds,
                      const sig_opts_t *opts, char *out, size_t cap, size_t *out_len,
                      sig_result_t *res)
{
    static const sig_opts_t defaults = {SIG_URI_NORMALIZE, 0, {NULL, 0}, NULL, NULL};
    char sts_stack[SIG__STS_STACK];
    sig_names_t names;
    sig_canon_t c;
    sig_buf_t sts;
    sig_buf_t ob;
    sig_str_t amz_date;
    sig_str_t tok;
    int rc;

    opts = opts != NULL ? opts : &defaults;
    *out_len = 0;
    if (auth->presigned || creds->access_key_id.len == 0 ||
        creds->access_key_id.len > SIG_AKID_MAX) {
        return PX_EPARSE;
    }
    rc = sig_names_parse(auth->signed_headers.base, auth->signed_headers.len, &names);
    if (rc == 0) {
        rc = sig__header_date(req, auth, &amz_date);
    }
    if (rc != 0) {
        return rc;
    }
    memset(&c, 0, sizeof(c));
    c.token = sig__no_token;
    if (creds->session_token.base != NULL) {
        /* A token the client sent unsigned stays unsigned; a missing one is added, signed. */
        if (sig_names_find(&names, "x-amz-security-token") < 0 &&
            sig__find_header(req, "x-amz-security-token", &tok) != 0) {
            rc = sig_names_add(&names, SIG_STR("x-amz-security-token"));
        }
        c.token = creds->session_token;
    } else {
        sig_names_remove(&names, "x-amz-security-token");
    }
    c.payload_hash = opts->payload_hash;
    if (rc == 0 && c.payload_hash.base == NULL &&
        sig__find_header(req, "x-amz-content-sha256", &c.payload_hash) != 0) {
        rc = PX_ESIGNING;
    }
    if (rc != 0) {
        return rc;
    }
    c.method = req->method;
    sig_target_split(req->target, &c.path, &c.query);
    c.headers = req->headers;
    c.nheaders = req->nheaders;
    c.names = &names;
    c.uri_mode = opts->uri_mode;
    sig_buf_init(&sts, sts_stack, sizeof(sts_stack), SIG_CANON_MAX);
    rc = sig__build_sts(&c, auth, amz_date, opts, &sts);
    if (rc == 0) {
        rc = sig__sign(auth, creds, &sts, res);
    }
    sig_buf_free(&sts);
    if (rc != 0) {
        return rc;
    }
    res->amz_date = amz_date;
    sig_buf_init(&ob, out, cap, cap);
    sig_buf_adds(&ob, sig_alg_name(auth->alg));
    sig_buf_adds(&ob, " Credential=");
    sig_buf_add(&ob, creds->access_key_id.base, creds->access_key_id.len);
    sig_buf_addc(&ob, '/');
    sig_buf_add(&ob, auth->scope.base, auth->scope.len);
    sig_buf_adds(&ob, ", SignedHeaders=");
    sig_names_join(&names, &ob);
    sig_buf_adds(&ob, ", Signature=");
    sig_buf_add(&ob, res->signature, res->signature_len);
    if (ob.err != 0) {
        return PX_ETOOBIG;
    }
    *out_len = ob.len;
    return 0;
}

/* Decodes a query name into buf; 1 when it equals name. */
static int sig__qkey_is(const char *k, size_t klen, const char *name)
{
    char kbuf[SIG__QKEY_MAX];
    sig_buf_t kb;

    sig_buf_init(&kb, kbuf, sizeof(kbuf), sizeof(kbuf));
    if (sig_uri_decode(&kb, k, klen) != 0) {
        return 0;
    }
    return kb.len == strlen(name) && memcmp(kb.base, name, kb.len) == 0;
}

/* Writes the rewritten query to ob; *sig_at = offset of the (empty) X-Amz-Signature value. */
static int sig__rewrite_query(sig_str_t query, const sig_auth_t *auth, const sig_creds_t *creds,
                              sig_buf_t *ob, size_t *sig_at)
{
    size_t emitted = 0;
    size_t i = 0;

    *sig_at = SIZE_MAX;
    while (i <= query.len) {
        const char *q = query.base;
        const char *amp = i < query.len ? memchr(q + i, '&', query.len - i) : NULL;
        size_t end = amp != NULL ? (size_t)(amp - q) : query.len;
        const char *eq = end > i ? memchr(q + i, '=', end - i) : NULL;
        size_t kend = eq != NULL ? (size_t)(eq - q) : end;
        const char *k = q + i;
        size_t klen = kend - i;
        size_t start = i;

        i = end + 1;
        if (sig__qkey_is(k, klen, "X-Amz-Security-Token")) {
            if (creds->session_token.base == NULL) {
                continue;
            }
            if (emitted > 0) {
                sig_buf_addc(ob, '&');
            }
            emitted++;
            sig_buf_add(ob, k, klen);
            sig_buf_addc(ob, '=');
            sig_uri_encode(ob, creds->session_token.base, creds->session_token.len, 0);
            continue;
        }
        if (emitted > 0) {
            sig_buf_addc(ob, '&');
        }
        emitted++;
        if (sig__qkey_is(k, klen, "X-Amz-Credential")) {
            sig_buf_add(ob, k, klen);
            sig_buf_addc(ob, '=');
            sig_uri_encode(ob, creds->access_key_id.base, creds->access_key_id.len, 0);
            sig_buf_adds(ob, "%2F");
            sig_uri_encode(ob, auth->scope.base, auth->scope.len, 0);
        } else if (sig__qkey_is(k, klen, "X-Amz-Signature")) {
            if (creds->session_token.base != NULL && !auth->has_token) {
                sig_buf_adds(ob, "X-Amz-Security-Token=");
                sig_uri_encode(ob, creds->session_token.base, creds->session_token.len, 0);
                sig_buf_addc(ob, '&');
            }
            sig_buf_add(ob, k, klen);
            sig_buf_addc(ob, '=');
            *sig_at = ob->len;
        } else {
            sig_buf_add(ob, q + start, end - start);
        }
    }
    if (ob->err != 0) {
        return PX_ETOOBIG;
    }
    return *sig_at == SIZE_MAX ? PX_EPARSE : 0;
}

int sig_resign_query(const sig_request_t *req, const sig_auth_t *auth, const sig_creds_t *creds,
                     const sig_opts_t *opts, char *out, size_t cap, size_t *out_len,
                     sig_result_t *res)
{
    static const sig_opts_t defaults = {SIG_URI_NORMALIZE, 0, {NULL, 0}, NULL, NULL};
    char sts_stack[SIG__STS_STACK];
    sig_names_t names;
    sig_canon_t c;
    sig_buf_t sts;
    sig_buf_t ob;
    sig_str_t query;
    size_t sig_at;
    int rc;

    opts = opts != NULL ? opts : &defaults;
    *out_len = 0;
    if (!auth->presigned || creds->access_key_id.len == 0 ||
        creds->access_key_id.len > SIG_AKID_MAX) {
        return PX_EPARSE;
    }
    rc = sig_names_parse(auth->signed_headers.base, auth->signed_headers.len, &names);
    if (rc != 0) {
        return rc;
    }
    memset(&c, 0, sizeof(c));
    sig_target_split(req->target, &c.path, &query);
    sig_buf_init(&ob, out, cap, cap);
    rc = sig__rewrite_query(query, auth, creds, &ob, &sig_at);
    if (rc != 0) {
        return rc;
    }
    c.method = req->method;
    c.query.base = ob.base;
    c.query.len = ob.len;
    c.headers = req->headers;
    c.nheaders = req->nheaders;
    c.names = &names;
    c.token = sig__no_token;
    c.uri_mode = opts->uri_mode;
    c.query_flags = SIG_QUERY_SKIP_SIGNATURE;
    if (opts->flags & SIG_OPT_UNSIGNED_TOKEN) {
        c.query_flags |= SIG_QUERY_SKIP_TOKEN;
    }
    c.payload_hash = sig__query_payload(auth, opts, opts->flags);
    sig_buf_init(&sts, sts_stack, sizeof(sts_stack), SIG_CANON_MAX);
    rc = sig__build_sts(&c, auth, auth->amz_date, opts, &sts);
    if (rc == 0) {
        rc = sig__sign(auth, creds, &sts, res);
    }
    sig_buf_free(&sts);
    if (rc != 0) {
        return rc;
    }
    res->amz_date = auth->amz_date;
    if (res->signature_len > cap - ob.len) {
        return PX_ETOOBIG;
    }
    memmove(out + sig_at + res->signature_len, out + sig_at, ob.len - sig_at);
    memcpy(out + sig_at, res->signature, res->signature_len);
    *out_len = ob.len + res->signature_len;
    return 0;
}

/* One verification attempt; flags are SIG_OPT_* for the presigned layout. */
static int sig__verify_once(const sig_request_t *req, const sig_auth_t *auth,
                            const sig_creds_t *creds, const sig_opts_t *opts,
                            const sig_names_t *names, unsigned flags, EVP_PKEY *key)
{
    char sts_stack[SIG__STS_STACK];
    sig_canon_t c;
    sig_buf_t sts;
    sig_str_t amz_date;
    sig_result_t res;
    int rc = 0;

    memset(&c, 0, sizeof(c));
    c.method = req->method;
    sig_target_split(req->target, &c.path, &c.query);
    c.headers = req->headers;
    c.nheaders = req->nheaders;
    c.names = names;
    c.token = sig__no_token;
    c.uri_mode = opts->uri_mode;
    c.payload_hash = opts->payload_hash;
    if (auth->presigned) {
        amz_date = auth->amz_date;
        c.query_flags = SIG_QUERY_SKIP_SIGNATURE;
        if (flags & SIG_OPT_UNSIGNED_TOKEN) {
            c.query_flags |= SIG_QUERY_SKIP_TOKEN;
        }
        c.payload_hash = sig__query_payload(auth, opts, flags);
    } else {
        rc = sig__header_date(req, auth, &amz_date);
        if (rc == 0 && c.payload_hash.base == NULL &&
            sig__find_header(req, "x-amz-content-sha256", &c.payload_hash) != 0) {
            rc = PX_ESIGNING;
        }
        if (rc != 0) {
            return rc;
        }
    }
    sig_buf_init(&sts, sts_stack, sizeof(sts_stack), SIG_CANON_MAX);
    rc = sig__build_sts(&c, auth, amz_date, opts, &sts);
    if (rc == 0 && auth->alg == SIG_ALG_V4) {
        rc = sig__sign(auth, creds, &sts, &res);
        if (rc == 0 && (auth->signature.len != res.signature_len ||
                        CRYPTO_memcmp(auth->signature.base, res.signature, res.signature_len))) {
            rc = PX_ESIGNING;
        }
        OPENSSL_cleanse(&res, sizeof(res));
    } else if (rc == 0) {
        rc = sig_v4a_verify(key, sts.base, sts.len, auth->signature.base, auth->signature.len);
    }
    sig_buf_free(&sts);
    return rc;
}

int sig_verify(const sig_request_t *req, const sig_auth_t *auth, const sig_creds_t *creds,
               const sig_opts_t *opts, unsigned *flags_out)
{
    static const sig_opts_t defaults = {SIG_URI_NORMALIZE, 0, {NULL, 0}, NULL, NULL};
    sig_names_t names;
    EVP_PKEY *key = creds->v4a_key;
    int can_token;
    int can_payload;
    int attempt;
    int rc;

    opts = opts != NULL ? opts : &defaults;
    if (flags_out != NULL) {
        *flags_out = 0;
    }
    rc = sig_names_parse(auth->signed_headers.base, auth->signed_headers.len, &names);
    if (rc != 0) {
        return rc;
    }
    if (auth->alg == SIG_ALG_V4A && key == NULL) {
        rc = sig_v4a_derive_key(creds->access_key_id, creds->secret, &key);
        if (rc != 0) {
            return rc;
        }
    }
    /* Presigned layouts differ between signers: try the alternatives the caller left open. */
    can_token = auth->presigned && auth->has_token && !(opts->flags & SIG_OPT_UNSIGNED_TOKEN);
    can_payload = auth->presigned && opts->payload_hash.base == NULL &&
                  auth->content_sha256.base == NULL && !(opts->flags & SIG_OPT_EMPTY_PAYLOAD);
    for (attempt = 0; attempt < 4; attempt++) {
        unsigned flags = opts->flags;

        if (((attempt & 1) && !can_token) || ((attempt & 2) && !can_payload)) {
            continue;
        }
        flags |= (attempt & 1) ? SIG_OPT_UNSIGNED_TOKEN : 0;
        flags |= (attempt & 2) ? SIG_OPT_EMPTY_PAYLOAD : 0;
        rc = sig__verify_once(req, auth, creds, opts, &names, flags, key);
        if (rc != PX_ESIGNING) {
            if (rc == 0 && flags_out != NULL) {
                *flags_out = flags & (SIG_OPT_UNSIGNED_TOKEN | SIG_OPT_EMPTY_PAYLOAD);
            }
            break;
        }
    }
    if (key != creds->v4a_key) {
        EVP_PKEY_free(key);
    }
    return rc;
}
