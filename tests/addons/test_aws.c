/* addon_aws: the AWS re-signing addon through its hooks, against the known answers of the
 * reference proxy's documented AWS cases (W1, W10, W13, W19,
 * A.6, W23) plus airlock's own behaviour: the real token signed when the client sent none,
 * presigned layouts read from the wire, SigV4A region-set annotation, the key cache, and the
 * failure answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_note.h"
#include <openssl/evp.h>

#include "addons/addon.h"
#include "addons/addon_aws.h"
#include "addons/addon_replacements.h"
#include "base/px_err.h"
#include "signing/sig_auth.h"
#include "signing/sig_encode.h"
#include "signing/sig_resign.h"
#include "signing/sig_v4a.h"

#define ZERO64 "0000000000000000000000000000000000000000000000000000000000000000"
#define REAL_AKID "AKIAIOSFODNN7EXAMPLE"
#define REAL_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define MAP                                                                                        \
    "{\"AKIA_SURROGATE\": {\"type\": \"aws-sigv4\", \"access_key_id\": \"" REAL_AKID "\", "        \
    "\"secret_access_key\": \"" REAL_SECRET "\", \"scopes\": [\"*.amazonaws.com\"]}, "             \
    "\"ASIA_SURROGATE\": {\"type\": \"aws-sigv4\", \"access_key_id\": \"" REAL_AKID "\", "         \
    "\"secret_access_key\": \"" REAL_SECRET "\", \"session_token\": "                              \
    "\"real_session_token_value\", \"surrogate_session_token\": \"surr_session_token\", "          \
    "\"scopes\": [\"*.amazonaws.com\"]}}"
#define W1_AUTH                                                                                    \
    "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "              \
    "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "                                         \
    "Signature=" ZERO64

typedef struct fixture {
    addon_replacements_t *map;
    addon_config_t cfg;
    addon_req_t *req;
    char log[4096];
    size_t loglen;
    char body[4096];
    size_t bodylen;
} fixture_t;

static void on_log(void *data, const addon_note_t *note)
{
    /* the line as the proxy writes it: the note as its audit event, rendered */
    audit_event_t ev = audit_event_from_note(note);
    char line[AUDIT_EVENT_LINE_CAP];
    int rendered = audit_event_render(&ev, line, sizeof(line));
    size_t len = rendered > 0 ? (size_t)rendered : 0;
    fixture_t *f = data;
    if (f->loglen + len + 2 > sizeof(f->log))
        fail_msg("log overflow");
    memcpy(f->log + f->loglen, line, len);
    f->loglen += len;
    f->log[f->loglen++] = '\n';
    f->log[f->loglen] = '\0';
}

static int on_sink(void *data, const char *buf, size_t len)
{
    fixture_t *f = data;
    if (f->bodylen + len > sizeof(f->body))
        return PX_ETOOBIG;
    memcpy(f->body + f->bodylen, buf, len);
    f->bodylen += len;
    return 0;
}

static addon_str_t view(const char *s)
{
    addon_str_t v = {s, strlen(s)};
    return v;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    char err[256];
    assert_non_null(f);
    assert_int_equal(
        addon_replacements_load_buffer("map.json", MAP, strlen(MAP), &f->map, err, sizeof(err)), 0);
    f->cfg.replacements = f->map;
    f->req = calloc(1, sizeof(*f->req));
    assert_non_null(f->req);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    addon_aws()->on_request_end(addon_aws(), f->req);
    addon_req_reset(f->req);
    free(f->req);
    addon_replacements_unref(f->map);
    free(f);
    return 0;
}

/* A request; headers are "Name", "value" pairs ending with NULL (borrowed). */
static addon_req_t *req_make(fixture_t *f, const char *method, const char *host, const char *path,
                             ...)
{
    addon_req_t *r = f->req;
    addon_aws()->on_request_end(addon_aws(), r);
    addon_req_reset(r);
    memset(r, 0, sizeof(*r));
    f->loglen = 0;
    f->log[0] = '\0';
    f->bodylen = 0;
    r->log_cb = on_log;
    r->log_data = f;
    r->method = view(method);
    r->target = view(path);
    r->path = view(path);
    r->host = view(host);
    r->port = 443;
    r->tls = 1;
    r->config = &f->cfg;
    va_list ap;
    va_start(ap, path);
    for (const char *n = va_arg(ap, const char *); n != NULL; n = va_arg(ap, const char *)) {
        r->headers[r->nheaders].name = view(n);
        r->headers[r->nheaders].value = view(va_arg(ap, const char *));
        r->nheaders++;
    }
    va_end(ap);
    return r;
}

/* The value of the only live header named name ("" when absent; fails on duplicates). */
static const char *hdr(addon_req_t *r, const char *name)
{
    static char buf[2048];
    int i = addon_req_find(r, name, 0);
    if (i < 0)
        return "";
    if (addon_req_find(r, name, (size_t)i + 1) >= 0)
        fail_msg("duplicate %s", name);
    snprintf(buf, sizeof(buf), "%.*s", (int)r->headers[i].value.len, r->headers[i].value.base);
    return buf;
}

static int head(addon_req_t *r, addon_answer_t *ans)
{
    memset(ans, 0, sizeof(*ans));
    int rc = addon_aws()->on_request_head(addon_aws(), r, ans);
    if (rc == ADDON_ANSWER && getenv("TEST_AWS_DEBUG"))
        fprintf(stderr, "answer: %s\n", ans->message);
    return rc;
}

/* W1: S3 GET, header form: the known signature, the annotation, the clock-skew warning. */
static void test_aws_w1_header(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    addon_req_t *r = req_make(f, "GET", "mybucket.s3.amazonaws.com", "/key", "Host",
                              "mybucket.s3.amazonaws.com", "Authorization", W1_AUTH, "x-amz-date",
                              "20260101T000000Z", "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_string_equal(
        hdr(r, "authorization"),
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=a7c49e8e3a070db0d3500ea086383c7a36cc7a953f7058b63e3f0f59e21620e5");
    assert_string_equal(r->annot, " [masked: 1] [region: us-east-1]");
    assert_int_equal(r->body_mode, ADDON_BODY_PASS);
    assert_non_null(strstr(f->log, "WARNING: Container clock skew detected: "
                                   "x-amz-date=20260101T000000Z, proxy-time="));
    assert_null(strstr(f->log, REAL_AKID));
}

/* W2/W3/W6: unknown key id, out of scope, not AWS: untouched. */
static void test_aws_not_ours(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    const char *other = "AWS4-HMAC-SHA256 Credential=AKIA_UNKNOWN/20260101/us-east-1/s3/"
                        "aws4_request, SignedHeaders=host, Signature=" ZERO64;
    addon_req_t *r = req_make(f, "GET", "b.s3.amazonaws.com", "/k", "Authorization", other,
                              "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_string_equal(hdr(r, "authorization"), other);
    assert_int_equal(r->credentials_done, 0);
    r = req_make(f, "GET", "other.example.com", "/k", "Authorization", W1_AUTH, "x-amz-date",
                 "20260101T000000Z", "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_string_equal(hdr(r, "authorization"), W1_AUTH);
    assert_string_equal(r->annot, "");
    r = req_make(f, "GET", "b.s3.amazonaws.com", "/k", "Authorization", "Bearer x", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_int_equal(r->credentials_done, 0);
}

/* A.6: the real token is in place before signing; W11: duplicate Authorization removed. */
static void test_aws_session_token(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    const char *auth =
        "AWS4-HMAC-SHA256 Credential=ASIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, "
        "Signature=" ZERO64;
    addon_req_t *r =
        req_make(f, "GET", "mybucket.s3.amazonaws.com", "/key", "Host", "mybucket.s3.amazonaws.com",
                 "Authorization", auth, "x-amz-date", "20260101T000000Z", "x-amz-content-sha256",
                 "UNSIGNED-PAYLOAD", "x-amz-security-token", "surr_session_token", "Authorization",
                 "Bearer attacker_value", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_non_null(
        strstr(hdr(r, "authorization"),
               "Signature=bcfff962cd7fdb3db20eab14555c67ab56e70fcf8735ecc9a4fa16de500846f7"));
    assert_string_equal(hdr(r, "x-amz-security-token"), "real_session_token_value");
}

/* Plain http: a session credential is refused (its real token would cross the network in
 * clear); a key without a session token is still re-signed (the signature reveals no secret). */
static void test_aws_plain_http(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    const char *auth =
        "AWS4-HMAC-SHA256 Credential=ASIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" ZERO64;
    addon_req_t *r = req_make(f, "GET", "mybucket.s3.amazonaws.com", "/key", "Host",
                              "mybucket.s3.amazonaws.com", "Authorization", auth, "x-amz-date",
                              "20260101T000000Z", "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
    r->tls = 0;
    r->port = 80;
    assert_int_equal(head(r, &ans), ADDON_ANSWER);
    assert_int_equal(ans.status, 403);
    assert_string_equal(ans.error, "credentials_require_https");
    assert_string_equal(hdr(r, "x-amz-security-token"), "");
    assert_non_null(strstr(hdr(r, "authorization"), "ASIA_SURROGATE"));
}

/* Session credentials, no token from the client: the real one is added AND signed (S3
 * rejects unsigned x-amz-* headers). Checked by verifying the output with the real creds. */
static void test_aws_token_added_signed(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    const char *auth =
        "AWS4-HMAC-SHA256 Credential=ASIA_SURROGATE/20260101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" ZERO64;
    addon_req_t *r = req_make(f, "GET", "mybucket.s3.amazonaws.com", "/key", "Host",
                              "mybucket.s3.amazonaws.com", "Authorization", auth, "x-amz-date",
                              "20260101T000000Z", "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    char copy[4096];
    snprintf(copy, sizeof(copy), "%s", hdr(r, "authorization"));
    assert_non_null(
        strstr(copy, "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,"));
    assert_string_equal(hdr(r, "x-amz-security-token"), "real_session_token_value");

    sig_auth_t a;
    assert_int_equal(sig_auth_parse_header(copy, strlen(copy), &a), 0);
    sig_header_t h[ADDON_MAX_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < r->nheaders; i++) {
        if (r->headers[i].removed)
            continue;
        h[n].name = (sig_str_t){r->headers[i].name.base, r->headers[i].name.len};
        h[n].value = (sig_str_t){r->headers[i].value.base, r->headers[i].value.len};
        n++;
    }
    sig_request_t sr = {SIG_STR("GET"), SIG_STR("/key"), h, n};
    sig_creds_t c = {SIG_STR(REAL_AKID), SIG_STR(REAL_SECRET), SIG_STR("real_session_token_value"),
                     NULL};
    sig_opts_t o = {SIG_URI_S3, 0, {NULL, 0}, NULL, NULL};
    assert_int_equal(sig_verify(&sr, &a, &c, &o, NULL), 0);
}

/* W13: no x-amz-content-sha256: buffered, then signed over the body's hash. */
static void test_aws_w13_deferred(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    addon_sink_t sink = {on_sink, f};
    const char *auth = "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/eu-central-1/"
                       "bedrock-runtime/aws4_request, SignedHeaders=content-type;host;x-amz-date, "
                       "Signature=" ZERO64;
    addon_req_t *r =
        req_make(f, "POST", "bedrock-runtime.eu-central-1.amazonaws.com",
                 "/model/anthropic.claude-3-haiku-v1/invoke", "Host",
                 "bedrock-runtime.eu-central-1.amazonaws.com", "Authorization", auth,
                 "Content-Type", "application/json", "x-amz-date", "20260101T000000Z", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_int_equal(r->body_mode, ADDON_BODY_BUFFER);
    assert_int_equal(r->body_cap, ADDON_AWS_BODY_CAP);
    assert_string_equal(hdr(r, "authorization"), auth); /* not yet */
    const char *body = "{\"prompt\": \"hello\"}";
    assert_int_equal(addon_aws()->on_request_body(addon_aws(), r, body, strlen(body), &sink), 0);
    assert_int_equal(addon_aws()->on_request_body_end(addon_aws(), r, &sink, &ans), ADDON_NEXT);
    assert_non_null(
        strstr(hdr(r, "authorization"),
               "Signature=450b0e8bfb5489fd1e9e3be6378740de0205444a5ff7656456bf11e59928391a"));
    assert_int_equal(f->bodylen, strlen(body));
    assert_string_equal(r->annot, " [masked: 1] [region: eu-central-1]");
}

/* W19: presigned; the query is rewritten byte for byte except credential and signature. */
static void test_aws_w19_presigned(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    addon_req_t *r =
        req_make(f, "GET", "mybucket.s3.amazonaws.com",
                 "/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/"
                 "us-east-1/s3/aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&"
                 "X-Amz-SignedHeaders=host&X-Amz-Signature=" ZERO64,
                 "Host", "mybucket.s3.amazonaws.com", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    char got[1024];
    snprintf(got, sizeof(got), "%.*s", (int)r->path.len, r->path.base);
    assert_string_equal(
        got, "/key?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F"
             "20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&"
             "X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature="
             "276c4153f5a39e63f415b8e78032212e31c3761eb4c60216efa4f3de51d02b9f");
    assert_string_equal(r->annot, " [masked: 1] [region: us-east-1]");
    assert_string_equal(f->log, ""); /* no skew warning for presigned */
}

/* Presigned layouts from the wire: a token after X-Amz-Signature stays unsigned; non-S3 signs
 * SHA-256("") as the payload. Each output verifies with the real creds under that layout. */
static void test_aws_presigned_layouts(void **state)
{
    fixture_t *f = *state;
    static const struct {
        const char *host;
        const char *path;
        unsigned flags;
    } cases[] = {
        {"b.s3.amazonaws.com",
         "/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIA_SURROGATE%2F20260101%2F"
         "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&"
         "X-Amz-SignedHeaders=host&X-Amz-Signature=" ZERO64
         "&X-Amz-Security-Token=surr_session_token",
         SIG_OPT_UNSIGNED_TOKEN},
        {"b.s3.amazonaws.com",
         "/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIA_SURROGATE%2F20260101%2F"
         "us-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&"
         "X-Amz-SignedHeaders=host&X-Amz-Security-Token=surr_session_token&X-Amz-Signature=" ZERO64,
         0},
        {"sts.amazonaws.com",
         "/?Action=GetCallerIdentity&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
         "AKIA_SURROGATE%2F20260101%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date="
         "20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=" ZERO64,
         SIG_OPT_EMPTY_PAYLOAD},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        addon_answer_t ans;
        addon_req_t *r =
            req_make(f, "GET", cases[i].host, cases[i].path, "Host", cases[i].host, NULL);
        assert_int_equal(head(r, &ans), ADDON_NEXT);
        char path[1024];
        snprintf(path, sizeof(path), "%.*s", (int)r->path.len, r->path.base);
        assert_null(strstr(path, "SURROGATE"));
        assert_null(strstr(path, "surr_session_token"));
        const char *q = strchr(path, '?') + 1;
        sig_auth_t *a = malloc(sizeof(*a));
        assert_int_equal(sig_auth_parse_query(q, strlen(q), a), 0);
        sig_header_t h = {SIG_STR("Host"), {cases[i].host, strlen(cases[i].host)}};
        sig_request_t sr = {SIG_STR("GET"), {path, strlen(path)}, &h, 1};
        sig_creds_t c = {SIG_STR(REAL_AKID), SIG_STR(REAL_SECRET), {NULL, 0}, NULL};
        sig_opts_t o = {strstr(cases[i].host, "s3") ? SIG_URI_S3 : SIG_URI_NORMALIZE,
                        cases[i].flags,
                        {NULL, 0},
                        NULL,
                        NULL};
        unsigned got = 99;
        /* pinned to the expected layout: only that one is tried */
        assert_int_equal(sig_verify(&sr, a, &c, &o, &got), 0);
        assert_int_equal(got, cases[i].flags);
        if (cases[i].flags & SIG_OPT_UNSIGNED_TOKEN)
            assert_non_null(strstr(path, "X-Amz-Signature="));
        free(a);
        addon_aws()->on_request_end(addon_aws(), r);
    }
}

/* W10: aws-chunked re-signing, seed and chunk signatures of the reference. */
static void test_aws_w10_chunked(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    addon_sink_t sink = {on_sink, f};
    addon_req_t *r =
        req_make(f, "PUT", "mybucket.s3.amazonaws.com", "/key", "Host", "mybucket.s3.amazonaws.com",
                 "Authorization", W1_AUTH, "x-amz-date", "20260101T000000Z", "x-amz-content-sha256",
                 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_int_equal(r->body_mode, ADDON_BODY_STREAM);
    assert_non_null(
        strstr(hdr(r, "authorization"),
               "Signature=14c06298e158719addf5b62b8fdfa54dfc5844821b879258f475e268ae902aed"));
    char body[512];
    snprintf(body, sizeof(body),
             "d;chunk-signature=%064d\r\nHello, world!\r\n0;chunk-signature=%064d\r\n\r\n", 0, 0);
    size_t len = strlen(body);
    for (size_t i = 0; i < len; i += 7) /* in odd pieces */
        assert_int_equal(addon_aws()->on_request_body(addon_aws(), r, body + i,
                                                      len - i < 7 ? len - i : 7, &sink),
                         0);
    assert_int_equal(addon_aws()->on_request_body_end(addon_aws(), r, &sink, &ans), ADDON_NEXT);
    f->body[f->bodylen] = '\0';
    assert_int_equal(f->bodylen, len);
    assert_string_equal(
        f->body,
        "d;chunk-signature=25fae9fa796aba3c86e4d1ce1b7c97e14a7d4d4d24c24539d440e5c1589d137a\r\n"
        "Hello, world!\r\n"
        "0;chunk-signature=95ef509d267b77fbbeea2ae230f4ee1d61c6d5fc4237b76c7751815c3f973159\r\n"
        "\r\n");
}

/* W23 shape, SigV4A header form: DER signature verified with the real public key (the
 * spec-correct Q of the reference), region-set annotation, one key derivation for two
 * requests. */
static void test_aws_v4a_header(void **state)
{
    fixture_t *f = *state;
    addon_aws_key_cache_clear();
    unsigned long d0 = 0;
    addon_aws_key_cache_stats(NULL, &d0);
    for (int round = 0; round < 2; round++) {
        addon_answer_t ans;
        const char *auth = "AWS4-ECDSA-P256-SHA256 Credential=AKIA_SURROGATE/20260101/s3/"
                           "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;"
                           "x-amz-region-set, Signature=3045" ZERO64;
        addon_req_t *r = req_make(f, "GET", "mybucket.s3.amazonaws.com", "/key", "Host",
                                  "mybucket.s3.amazonaws.com", "Authorization", auth, "x-amz-date",
                                  "20260101T000000Z", "x-amz-content-sha256", "UNSIGNED-PAYLOAD",
                                  "X-Amz-Region-Set", "us-east-1,eu-west-1", NULL);
        assert_int_equal(head(r, &ans), ADDON_NEXT);
        const char *out = hdr(r, "authorization");
        assert_non_null(strstr(out, "AWS4-ECDSA-P256-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/"
                                    "20260101/s3/aws4_request, SignedHeaders=host;"
                                    "x-amz-content-sha256;x-amz-date;x-amz-region-set, "));
        assert_string_equal(r->annot, " [masked: 1] [region: us-east-1,eu-west-1]");
        const char *sig = strstr(out, "Signature=") + 10;
        char sts[512];
        snprintf(sts, sizeof(sts),
                 "AWS4-ECDSA-P256-SHA256\n20260101T000000Z\n20260101/s3/aws4_request\n");
        char creq[512];
        snprintf(creq, sizeof(creq),
                 "GET\n/key\n\nhost:mybucket.s3.amazonaws.com\nx-amz-content-sha256:UNSIGNED-"
                 "PAYLOAD\nx-amz-date:20260101T000000Z\nx-amz-region-set:us-east-1,eu-west-1\n\n"
                 "host;x-amz-content-sha256;x-amz-date;x-amz-region-set\nUNSIGNED-PAYLOAD");
        char hash[SIG_SHA256_HEX_LEN + 1] = {0};
        assert_int_equal(sig_sha256_hex(creq, strlen(creq), hash), 0);
        strcat(sts, hash);
        unsigned char x[32], y[32];
        size_t xl = 0, yl = 0;
        assert_int_equal(
            sig_hex_decode("085eb287ba9b2cc7711896efeda87fed3afc231d7578d5ec055baa4f569958c3", 64,
                           x, 32, &xl),
            0);
        assert_int_equal(
            sig_hex_decode("123e9f409bcbfab4d60fea84372c256d24f42543ecb7d9c43425a4b3ef6a38a5", 64,
                           y, 32, &yl),
            0);
        EVP_PKEY *pub = NULL;
        assert_int_equal(sig_v4a_pubkey_from_xy(x, y, &pub), 0);
        assert_int_equal(sig_v4a_verify(pub, sts, strlen(sts), sig, strlen(sig)), 0);
        EVP_PKEY_free(pub);
        addon_aws()->on_request_end(addon_aws(), r);
    }
    unsigned long d1 = 0;
    size_t held = 0;
    addon_aws_key_cache_stats(&held, &d1);
    assert_int_equal(d1 - d0, 1);
    assert_int_equal(held, 1);
}

/* The cache holds at most ADDON_AWS_KEY_CACHE keys. */
static void test_aws_key_cache_cap(void **state)
{
    fixture_t *f = *state;
    (void)f;
    addon_aws_key_cache_clear();
    char map[ADDON_AWS_KEY_CACHE * 2 * 200 + 16];
    size_t o = 0;
    o += (size_t)snprintf(map + o, sizeof(map) - o, "{");
    for (int i = 0; i < ADDON_AWS_KEY_CACHE * 2; i++)
        o += (size_t)snprintf(
            map + o, sizeof(map) - o,
            "%s\"S%02d\": {\"type\": \"aws-sigv4\", \"access_key_id\": "
            "\"AKIA%02d\", \"secret_access_key\": \"s\", \"scopes\": [\"h.test\"]}",
            i ? ", " : "", i, i);
    snprintf(map + o, sizeof(map) - o, "}");
    addon_replacements_t *m = NULL;
    char err[256];
    assert_int_equal(addon_replacements_load_buffer("m", map, strlen(map), &m, err, sizeof(err)),
                     0);
    addon_config_t cfg = {NULL, m};
    for (int i = 0; i < ADDON_AWS_KEY_CACHE * 2; i++) {
        char auth[200];
        snprintf(auth, sizeof(auth),
                 "AWS4-ECDSA-P256-SHA256 Credential=S%02d/20260101/s3/aws4_request, "
                 "SignedHeaders=host;x-amz-date, Signature=30" ZERO64,
                 i);
        addon_answer_t ans;
        addon_req_t *r =
            req_make(f, "GET", "h.test", "/", "Host", "h.test", "Authorization", auth, "x-amz-date",
                     "20260101T000000Z", "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
        r->config = &cfg;
        assert_int_equal(head(r, &ans), ADDON_NEXT);
        addon_aws()->on_request_end(addon_aws(), r);
    }
    size_t held = 0;
    addon_aws_key_cache_stats(&held, NULL);
    assert_int_equal(held, ADDON_AWS_KEY_CACHE);
    addon_aws_key_cache_clear();
    addon_aws_key_cache_stats(&held, NULL);
    assert_int_equal(held, 0);
    addon_replacements_unref(m);
}

/* Known surrogate, unusable request: 403 signing_failed, nothing rewritten. Toward a host
 * outside the entry's scopes the same request goes out untouched. */
static void test_aws_failures(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    const char *bad = "AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
                      "aws4_request, SignedHeaders=host, Signature=NOT-HEX";
    addon_req_t *r = req_make(f, "GET", "b.s3.amazonaws.com", "/k", "Authorization", bad, NULL);
    assert_int_equal(head(r, &ans), ADDON_ANSWER);
    assert_int_equal(ans.status, 403);
    assert_string_equal(ans.error, "signing_failed");
    assert_string_equal(ans.verdict, "ERROR");
    assert_string_equal(ans.log_tail, " (signing failed: malformed Authorization)");
    r = req_make(f, "GET", "outside.example", "/k", "Authorization", bad, NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);

    /* a bad X-Amz-Date */
    r = req_make(f, "GET", "b.s3.amazonaws.com", "/k", "Authorization", W1_AUTH, "x-amz-date",
                 "2026-01-01", "x-amz-content-sha256", "UNSIGNED-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_ANSWER);
    assert_string_equal(hdr(r, "authorization"), W1_AUTH);
    addon_aws()->on_request_end(addon_aws(), r);

    /* an ECDSA streaming body under an HMAC signature */
    r = req_make(f, "PUT", "b.s3.amazonaws.com", "/k", "Authorization", W1_AUTH, "x-amz-date",
                 "20260101T000000Z", "x-amz-content-sha256",
                 "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", NULL);
    assert_int_equal(head(r, &ans), ADDON_ANSWER);
    assert_non_null(strstr(ans.message, "does not match the signing algorithm"));
    addon_aws()->on_request_end(addon_aws(), r);

    /* a malformed presigned URL naming a surrogate */
    r = req_make(f, "GET", "b.s3.amazonaws.com",
                 "/k?X-Amz-Credential=AKIA_SURROGATE%2Fbad&X-Amz-Signature=" ZERO64, NULL);
    assert_int_equal(head(r, &ans), ADDON_ANSWER);
    assert_string_equal(ans.log_tail, " (signing failed: malformed presigned URL)");
}

/* The region text comes from the client: only plain bytes reach the access line. */
static void test_aws_region_sanitized(void **state)
{
    fixture_t *f = *state;
    addon_answer_t ans;
    addon_req_t *r = req_make(
        f, "GET", "b.s3.amazonaws.com",
        "/k?X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&X-Amz-Credential=AKIA_SURROGATE%2F20260101%2F"
        "s3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&"
        "X-Amz-Region-Set=us-east-1%0A%5D%20x&X-Amz-Signature=" ZERO64,
        "Host", "b.s3.amazonaws.com", NULL);
    assert_int_equal(head(r, &ans), ADDON_NEXT);
    assert_string_equal(r->annot, " [masked: 1] [region: us-east-1?? x]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_aws_w1_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_not_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_session_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_plain_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_token_added_signed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_w13_deferred, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_w19_presigned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_presigned_layouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_w10_chunked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_v4a_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_key_cache_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aws_region_sanitized, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    addon_aws_key_cache_clear();
    return rc;
}
