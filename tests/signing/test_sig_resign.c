/* The high-level re-signing API on the AWS re-signing cases the reference proxy documents
 * (surrogate key id in, AWS example credentials out), with the reference's session-token
 * bug fixed: the real token is in place before signing, and every re-signed request must
 * verify with the real credentials. Header form, presigned form, SigV4A, verification. */
#include "tests/signing/sig_test_resign.h"

#include "signing/sig_v4a.h"

#define SIG140                                                                                     \
    "3044022003c85b459488bd3d7df2e321e0f40a9d2384034b247f3995253c088967f8aff002201c1eb3d2a50bd"    \
    "30ea98805426a2363fd567844d8c6480552151ec671281b8f36"
#define REAL_AKID "AKIAIOSFODNN7EXAMPLE"
#define REAL_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define REAL_TOKEN "real_session_token_value"
#define SURR_AKID "AKIA_SURROGATE"
#define SURR_SECRET "surrogate-secret-key-value"

#define assert_contains(b, n, lit) assert_non_null(memmem((b), (n), (lit), sizeof(lit) - 1))

static const sig_opts_t *s3_opts(void)
{
    static sig_opts_t o;

    memset(&o, 0, sizeof(o));
    o.uri_mode = SIG_URI_S3;
    return &o;
}

typedef struct req_fixture {
    tu_req_t r;
    sig_request_t sr;
} req_fixture_t;

static void fx_init(req_fixture_t *f, const char *method, const char *target)
{
    memset(f, 0, sizeof(*f));
    f->r.method = tu_s(method);
    f->r.target = tu_s(target);
}

static void fx_add(req_fixture_t *f, const char *name, const char *value)
{
    f->r.headers[f->r.nheaders].name = tu_s(name);
    f->r.headers[f->r.nheaders].value = tu_s(value);
    f->r.nheaders++;
}

static sig_request_t *fx_req(req_fixture_t *f)
{
    f->sr.method = f->r.method;
    f->sr.target = f->r.target;
    f->sr.headers = f->r.headers;
    f->sr.nheaders = f->r.nheaders;
    return &f->sr;
}

static sig_creds_t creds_of(const char *akid, const char *secret, const char *token)
{
    sig_creds_t c;

    memset(&c, 0, sizeof(c));
    c.access_key_id = tu_s(akid);
    c.secret = tu_s(secret);
    if (token != NULL) {
        c.session_token = tu_s(token);
    }
    return c;
}

/* Re-signs the header form; the output replaces the Authorization header in f (which must
 * be the last header) so that the result can be verified with the real credentials. */
static int header_resign(req_fixture_t *f, const sig_creds_t *creds, sig_uri_mode_t mode,
                         const char *payload, char *out, size_t cap, size_t *out_len,
                         sig_buf_t *creq)
{
    sig_auth_t auth;
    sig_opts_t opts;
    sig_result_t res;
    int idx = tu_find(&f->r, "authorization");
    int rc;

    assert_true(idx >= 0);
    assert_int_equal(
        sig_auth_parse_header(f->r.headers[idx].value.base, f->r.headers[idx].value.len, &auth), 0);
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = mode;
    opts.creq = creq;
    if (payload != NULL) {
        opts.payload_hash = tu_s(payload);
    }
    rc = sig_resign_header(fx_req(f), &auth, creds, &opts, out, cap, out_len, &res);
    if (rc == 0) {
        assert_int_equal(res.signature_len, auth.alg == SIG_ALG_V4 ? 64 : res.signature_len);
        assert_memory_equal(out + *out_len - res.signature_len, res.signature, res.signature_len);
    }
    return rc;
}

/* The re-signed header-form request (new Authorization, token header per the contract)
 * verifies with creds. */
static void header_verify(req_fixture_t *f, const sig_creds_t *creds, sig_uri_mode_t mode,
                          const char *payload, const char *new_auth, size_t new_len)
{
    req_fixture_t g;
    sig_auth_t auth;
    sig_opts_t opts;
    size_t i;

    fx_init(&g, "", "");
    g.r.method = f->r.method;
    g.r.target = f->r.target;
    for (i = 0; i < f->r.nheaders; i++) {
        if (tu_ieq(f->r.headers[i].name, "authorization") ||
            tu_ieq(f->r.headers[i].name, "x-amz-security-token")) {
            continue;
        }
        g.r.headers[g.r.nheaders++] = f->r.headers[i];
    }
    if (creds->session_token.base != NULL) {
        g.r.headers[g.r.nheaders].name = tu_s("X-Amz-Security-Token");
        g.r.headers[g.r.nheaders].value = creds->session_token;
        g.r.nheaders++;
    }
    assert_int_equal(sig_auth_parse_header(new_auth, new_len, &auth), 0);
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = mode;
    if (payload != NULL) {
        opts.payload_hash = tu_s(payload);
    }
    assert_int_equal(sig_verify(fx_req(&g), &auth, creds, &opts, NULL), 0);
}

static void w1_fixture(req_fixture_t *f)
{
    fx_init(f, "GET", "/key");
    fx_add(f, "Host", "mybucket.s3.amazonaws.com");
    fx_add(f, "x-amz-date", "20260101T000000Z");
    fx_add(f, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    fx_add(f, "Authorization",
           "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
           "Signature=aa00bb11cc22dd33ee44ff5500661177aa00bb11cc22dd33ee44ff5500661177");
}

static void test_sig_resign_header_w1(void **state)
{
    req_fixture_t f;
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[SIG_AUTH_VALUE_MAX];
    size_t n = 0;
    sig_buf_t creq;

    (void)state;
    w1_fixture(&f);
    sig_buf_init(&creq, NULL, 0, SIG_CANON_MAX);
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, &creq), 0);
    assert_mem_str(creq.base, creq.len,
                   "GET\n/key\n\nhost:mybucket.s3.amazonaws.com\nx-amz-content-sha256:UNSIGNED-"
                   "PAYLOAD\nx-amz-date:20260101T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n"
                   "UNSIGNED-PAYLOAD");
    assert_mem_str(out, n,
                   "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/"
                   "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                   "Signature=a7c49e8e3a070db0d3500ea086383c7a36cc7a953f7058b63e3f0f59e21620e5");
    header_verify(&f, &real, SIG_URI_S3, NULL, out, n);
    assert_null(memmem(out, n, REAL_SECRET, strlen(REAL_SECRET)));
    sig_buf_free(&creq);

    /* the output buffer cap is honoured */
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, 100, &n, NULL), PX_ETOOBIG);
}

static void test_sig_resign_header_token_signed(void **state)
{
    req_fixture_t f;
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, REAL_TOKEN);
    char out[SIG_AUTH_VALUE_MAX];
    size_t n = 0;

    (void)state;
    /* appendix A.6 with the reference bug fixed: signed over the real token */
    fx_init(&f, "GET", "/key");
    fx_add(&f, "Host", "mybucket.s3.amazonaws.com");
    fx_add(&f, "x-amz-date", "20260101T000000Z");
    fx_add(&f, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    fx_add(&f, "x-amz-security-token", "surr_session_token");
    fx_add(&f, "Authorization",
           "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
           "Signature=aa00bb11cc22dd33ee44ff5500661177aa00bb11cc22dd33ee44ff5500661177");
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL), 0);
    assert_mem_str(out, n,
                   "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/"
                   "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-"
                   "security-token, Signature=bcfff962cd7fdb3db20eab14555c67ab56e70fcf8735ecc9a4fa"
                   "16de500846f7");
    header_verify(&f, &real, SIG_URI_S3, NULL, out, n);
}

static void test_sig_resign_header_token_added_removed(void **state)
{
    req_fixture_t f;
    sig_creds_t with = creds_of(REAL_AKID, REAL_SECRET, REAL_TOKEN);
    sig_creds_t without = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[SIG_AUTH_VALUE_MAX];
    size_t n = 0;

    (void)state;
    /* real creds carry a token, the client sent none: the token is added, signed */
    w1_fixture(&f);
    assert_int_equal(header_resign(&f, &with, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL), 0);
    assert_contains(out, n, "x-amz-date;x-amz-security-token, Signature=");
    header_verify(&f, &with, SIG_URI_S3, NULL, out, n);
    assert_mem_str(out, n,
                   "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/"
                   "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-"
                   "security-token, Signature=bcfff962cd7fdb3db20eab14555c67ab56e70fcf8735ecc9a4fa"
                   "16de500846f7");

    /* the client signed a surrogate token, the real creds have none: it leaves the list */
    fx_init(&f, "GET", "/key");
    fx_add(&f, "Host", "mybucket.s3.amazonaws.com");
    fx_add(&f, "x-amz-date", "20260101T000000Z");
    fx_add(&f, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
    fx_add(&f, "X-Amz-Security-Token", "surr_session_token");
    fx_add(&f, "Authorization",
           "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "
           "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
           "Signature=aa00bb11cc22dd33ee44ff5500661177aa00bb11cc22dd33ee44ff5500661177");
    assert_int_equal(header_resign(&f, &without, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL), 0);
    assert_mem_str(out, n,
                   "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/"
                   "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                   "Signature=a7c49e8e3a070db0d3500ea086383c7a36cc7a953f7058b63e3f0f59e21620e5");

    /* a token the client sent unsigned stays unsigned */
    f.r.headers[4].value = tu_s("AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/"
                                "s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-"
                                "date, Signature=aa00bb11cc22dd33ee44ff5500661177aa00bb11cc22dd"
                                "33ee44ff5500661177");
    assert_int_equal(header_resign(&f, &with, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL), 0);
    assert_contains(out, n, "SignedHeaders=host;x-amz-content-sha256;x-amz-date, ");
    header_verify(&f, &with, SIG_URI_S3, NULL, out, n);
}

static void test_sig_resign_header_bedrock(void **state)
{
    req_fixture_t f;
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[SIG_AUTH_VALUE_MAX];
    char hash[65];
    size_t n = 0;
    const char body[] = "{\"prompt\": \"hello\"}";

    (void)state;
    /* W13: deferred signing over sha256(body) */
    assert_int_equal(sig_sha256_hex(body, strlen(body), hash), 0);
    hash[64] = '\0';
    assert_string_equal(hash, "341c57448e531310fbbe83f44cea2a5e838bd9e8a6b82b269f01d0dbbc23c3cc");
    fx_init(&f, "POST", "/model/anthropic.claude-3-haiku-v1/invoke");
    fx_add(&f, "Host", "bedrock-runtime.eu-central-1.amazonaws.com");
    fx_add(&f, "Content-Type", "application/json");
    fx_add(&f, "X-Amz-Date", "20260101T000000Z");
    fx_add(&f, "Authorization",
           "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/eu-central-1/bedrock-runtime/"
           "aws4_request, SignedHeaders=content-type;host;x-amz-date, "
           "Signature=aa00bb11cc22dd33ee44ff5500661177aa00bb11cc22dd33ee44ff5500661177");
    /* without a payload hash and without x-amz-content-sha256 there is nothing to sign */
    assert_int_equal(header_resign(&f, &real, SIG_URI_NORMALIZE, NULL, out, sizeof(out), &n, NULL),
                     PX_ESIGNING);
    assert_int_equal(header_resign(&f, &real, SIG_URI_NORMALIZE, hash, out, sizeof(out), &n, NULL),
                     0);
    assert_contains(out, n,
                    "Signature=450b0e8bfb5489fd1e9e3be6378740de0205444a5ff7656456bf11e599283"
                    "91a");
    header_verify(&f, &real, SIG_URI_NORMALIZE, hash, out, n);

    /* W14: a %3A in the path is encoded again (%253A) for non-S3 services */
    f.r.target = tu_s("/model/eu.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke");
    assert_int_equal(header_resign(&f, &real, SIG_URI_NORMALIZE, hash, out, sizeof(out), &n, NULL),
                     0);
    assert_contains(out, n,
                    "SignedHeaders=content-type;host;x-amz-date, Signature=bd5ee62691e3b651"
                    "6999c6228a349a720f0c97303491e78769bdb01e1113090a");
}

static void test_sig_resign_header_errors(void **state)
{
    req_fixture_t f;
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[SIG_AUTH_VALUE_MAX];
    size_t n = 0;

    (void)state;
    w1_fixture(&f);
    f.r.headers[1].value = tu_s("20260102T000000Z"); /* another day than the scope */
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL),
                     PX_EPARSE);
    f.r.headers[1].value = tu_s("2026-01-01");
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL),
                     PX_EPARSE);
    f.r.headers[1].name = tu_s("x-amz-datum"); /* no X-Amz-Date at all */
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL),
                     PX_EPARSE);
    w1_fixture(&f);
    f.r.target = tu_s("/bad%zzkey"); /* S3 paths must decode */
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL),
                     PX_EPARSE);
    w1_fixture(&f);
    real.access_key_id = tu_s("");
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL),
                     PX_EPARSE);
}

static void test_sig_resign_verify_mismatch(void **state)
{
    req_fixture_t f;
    sig_creds_t surr = creds_of(SURR_AKID, SURR_SECRET, NULL);
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[SIG_AUTH_VALUE_MAX];
    size_t n = 0;
    sig_auth_t auth;

    (void)state;
    /* a client request signed with the surrogate secret verifies with it, not with others */
    w1_fixture(&f);
    assert_int_equal(header_resign(&f, &surr, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL), 0);
    f.r.headers[3].value.base = out;
    f.r.headers[3].value.len = n;
    assert_int_equal(sig_auth_parse_header(out, n, &auth), 0);
    assert_int_equal(sig_verify(fx_req(&f), &auth, &surr, s3_opts(), NULL), 0);
    assert_int_equal(sig_verify(fx_req(&f), &auth, &real, s3_opts(), NULL), PX_ESIGNING);
    f.r.target = tu_s("/other-key");
    assert_int_equal(sig_verify(fx_req(&f), &auth, &surr, s3_opts(), NULL), PX_ESIGNING);
}

static void test_sig_resign_header_v4a(void **state)
{
    req_fixture_t f;
    sig_creds_t surr = creds_of(SURR_AKID, SURR_SECRET, "surr_session_token");
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, REAL_TOKEN);
    const char want[] = "AWS4-ECDSA-P256-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/s3/"
                        "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-"
                        "region-set;x-amz-security-token, Signature=30";
    char out[SIG_AUTH_VALUE_MAX];
    char client[SIG_AUTH_VALUE_MAX];
    size_t n = 0;
    size_t cn = 0;
    sig_auth_t auth;

    (void)state;
    fx_init(&f, "PUT", "/bucket/key");
    fx_add(&f, "Host", "s3.amazonaws.com");
    fx_add(&f, "X-Amz-Date", "20260101T000000Z");
    fx_add(&f, "X-Amz-Region-Set", "us-east-1,us-west-2");
    fx_add(&f, "X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD");
    fx_add(&f, "x-amz-security-token", "surr_session_token");
    fx_add(&f, "Authorization",
           "AWS4-ECDSA-P256-SHA256 Credential=AKIA_SURROGATE/20260101/s3/aws4_request, "
           "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-region-set;x-amz-security-"
           "token, Signature=" SIG140);
    /* the client signs with the surrogate key, which verifies */
    assert_int_equal(header_resign(&f, &surr, SIG_URI_S3, NULL, client, sizeof(client), &cn, NULL),
                     0);
    assert_int_equal(sig_auth_parse_header(client, cn, &auth), 0);
    f.r.headers[5].value = (sig_str_t){client, cn};
    assert_int_equal(sig_verify(fx_req(&f), &auth, &surr, s3_opts(), NULL), 0);
    /* the proxy re-signs with the real key and token: verifies with the real credentials */
    assert_int_equal(header_resign(&f, &real, SIG_URI_S3, NULL, out, sizeof(out), &n, NULL), 0);
    assert_true(n > sizeof(want) - 1);
    assert_memory_equal(out, want, sizeof(want) - 1);
    header_verify(&f, &real, SIG_URI_S3, NULL, out, n);
}

/* ------------------------------------------------------------------ presigned */

#define W19_QUERY                                                                                  \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"      \
    "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"        \
    "X-Amz-Signature=oldsig"
#define W19_OUT                                                                                    \
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101%2Fus-"      \
    "east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-"             \
    "SignedHeaders=host&X-Amz-Signature=276c4153f5a39e63f415b8e78032212e31c3761eb4c60216efa4f"     \
    "3de51d02b9f"

/* Re-signs a presigned target; with auth parsing done on a valid copy of the signature. */
static int query_resign(const char *target, const sig_creds_t *creds, unsigned flags, char *out,
                        size_t cap, size_t *out_len)
{
    req_fixture_t f;
    sig_auth_t auth;
    sig_opts_t opts;
    sig_result_t res;
    char fixed[2048];
    char *p;
    sig_str_t path;
    sig_str_t query;

    /* the reference vectors use "oldsig" as the client signature: make it well-formed */
    snprintf(fixed, sizeof(fixed), "%s", target);
    p = strstr(fixed, "X-Amz-Signature=oldsig");
    if (p != NULL) {
        memmove(p + 16 + 64, p + 16 + 6, strlen(p + 16 + 6) + 1);
        memset(p + 16, 'a', 64);
    }
    fx_init(&f, "GET", fixed);
    fx_add(&f, "Host", "mybucket.s3.amazonaws.com");
    sig_target_split(f.r.target, &path, &query);
    assert_int_equal(sig_auth_parse_query(query.base, query.len, &auth), 0);
    memset(&opts, 0, sizeof(opts));
    opts.uri_mode = SIG_URI_S3;
    opts.flags = flags;
    return sig_resign_query(fx_req(&f), &auth, creds, &opts, out, cap, out_len, &res);
}

/* The re-signed presigned request verifies with creds; returns the detected flags. */
static unsigned query_verify(const char *path, const char *q, size_t qlen, const sig_creds_t *creds)
{
    char target[4096];
    req_fixture_t f;
    sig_auth_t auth;
    unsigned flags = 99;

    snprintf(target, sizeof(target), "%s?%.*s", path, (int)qlen, q);
    fx_init(&f, "GET", target);
    fx_add(&f, "Host", "mybucket.s3.amazonaws.com");
    assert_int_equal(sig_auth_parse_query(q, qlen, &auth), 0);
    assert_int_equal(sig_verify(fx_req(&f), &auth, creds, s3_opts(), &flags), 0);
    return flags;
}

static void test_sig_resign_presigned_w19(void **state)
{
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[4096];
    size_t n = 0;
    size_t full;

    (void)state;
    assert_int_equal(query_resign("/key?" W19_QUERY, &real, 0, out, sizeof(out), &n), 0);
    assert_mem_str(out, n, W19_OUT);
    assert_int_equal(query_verify("/key", out, n, &real), 0);
    /* W22: an encoded surrogate credential gives the same output */
    assert_int_equal(query_resign("/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
                                  "AKIA_SURROGATE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&"
                                  "X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-"
                                  "SignedHeaders=host&X-Amz-Signature=oldsig",
                                  &real, 0, out, sizeof(out), &n),
                     0);
    assert_mem_str(out, n, W19_OUT);
    assert_null(memmem(out, n, SURR_AKID, strlen(SURR_AKID)));
    /* too small an output buffer */
    full = n;
    assert_int_equal(query_resign("/key?" W19_QUERY, &real, 0, out, 200, &n), PX_ETOOBIG);
    assert_int_equal(query_resign("/key?" W19_QUERY, &real, 0, out, full - 1, &n), PX_ETOOBIG);
    assert_int_equal(query_resign("/key?" W19_QUERY, &real, 0, out, full, &n), 0);
}

static void test_sig_resign_presigned_token(void **state)
{
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, "real/token+value=");
    sig_creds_t none = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[4096];
    size_t n = 0;

    (void)state;
    /* W20 with the reference bug fixed: the real token is in place before signing */
    assert_int_equal(query_resign("/key?" W19_QUERY "&X-Amz-Security-Token=surr_session_token",
                                  &real, 0, out, sizeof(out), &n),
                     0);
    assert_contains(out, n, "&X-Amz-Security-Token=real%2Ftoken%2Bvalue%3D");
    assert_null(memmem(out, n, "surr_session_token", 18));
    assert_int_equal(query_verify("/key", out, n, &real), 0);

    /* real creds have a token, the URL has none: added (signed) before X-Amz-Signature */
    assert_int_equal(query_resign("/key?" W19_QUERY, &real, 0, out, sizeof(out), &n), 0);
    assert_contains(out, n,
                    "X-Amz-SignedHeaders=host&X-Amz-Security-Token=real%2Ftoken%2Bvalue%3D&"
                    "X-Amz-Signature=");
    assert_int_equal(query_verify("/key", out, n, &real), 0);

    /* the URL has a surrogate token, the real creds none: the parameter is removed */
    assert_int_equal(
        query_resign("/key?X-Amz-Security-Token=surr&" W19_QUERY, &none, 0, out, sizeof(out), &n),
        0);
    assert_mem_str(out, n, W19_OUT);

    /* unsigned token layout (aws-c-auth omit_session_token): kept unsigned, detected */
    assert_int_equal(query_resign("/key?" W19_QUERY "&X-Amz-Security-Token=surr", &real,
                                  SIG_OPT_UNSIGNED_TOKEN, out, sizeof(out), &n),
                     0);
    assert_int_equal(query_verify("/key", out, n, &real), SIG_OPT_UNSIGNED_TOKEN);
}

static void test_sig_resign_presigned_other_params(void **state)
{
    sig_creds_t real = creds_of(REAL_AKID, REAL_SECRET, NULL);
    char out[4096];
    size_t n = 0;

    (void)state;
    /* other parameters, empty pieces and their order survive byte for byte */
    assert_int_equal(query_resign("/key?z=%7E1&&response-content-type=text%2Fplain&" W19_QUERY "&a",
                                  &real, 0, out, sizeof(out), &n),
                     0);
    assert_memory_equal(out, "z=%7E1&&response-content-type=text%2Fplain&X-Amz-Algorithm=", 59);
    assert_memory_equal(out + n - 2, "&a", 2);
    assert_int_equal(query_verify("/key", out, n, &real), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sig_resign_header_w1),
        cmocka_unit_test(test_sig_resign_header_token_signed),
        cmocka_unit_test(test_sig_resign_header_token_added_removed),
        cmocka_unit_test(test_sig_resign_header_bedrock),
        cmocka_unit_test(test_sig_resign_header_errors),
        cmocka_unit_test(test_sig_resign_verify_mismatch),
        cmocka_unit_test(test_sig_resign_header_v4a),
        cmocka_unit_test(test_sig_resign_presigned_w19),
        cmocka_unit_test(test_sig_resign_presigned_token),
        cmocka_unit_test(test_sig_resign_presigned_other_params),
    };

    return cmocka_run_group_tests_name("sig_resign", tests, NULL, NULL);
}
