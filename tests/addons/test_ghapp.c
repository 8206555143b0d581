/* addon_ghapp: github-app entries of the replacement map (fields, defaults, errors that never
 * quote the key), the RS256 JWT (claims, and the signature verified with the public key), the
 * token-exchange body and answer, the token cache's expiry rule, and the request side: which
 * entry a request names (Bearer, Basic password, scope), the replacement (reference §10.5 G1,
 * G2, G5-G8), the foreign-credential strip and the refresh-failure answer (G4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "audit/audit_note.h"
#include "addons/addon_ghapp.h"
#include "addons/addon_replacements.h"
#include "base/px_err.h"

#define SURR "ghs_SurrogateTokenValue1234567890abcde"
#define REAL "ghs_real_token_value"

static EVP_PKEY *test_key;
static char *test_pem; /* the private key, PEM, JSON-escaped newlines */
static char *test_pem_raw;

static int setup(void **state)
{
    (void)state;
    test_key = EVP_RSA_gen(2048);
    if (test_key == NULL)
        return -1;
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, test_key, NULL, NULL, 0, NULL, NULL);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    test_pem_raw = malloc((size_t)n + 1); /* the BIO's bytes are not NUL-terminated */
    if (test_pem_raw == NULL)
        return -1;
    memcpy(test_pem_raw, p, (size_t)n);
    test_pem_raw[n] = '\0';
    test_pem = malloc((size_t)n * 2 + 1);
    size_t o = 0;
    for (long i = 0; i < n; i++) {
        if (p[i] == '\n') {
            test_pem[o++] = '\\';
            test_pem[o++] = 'n';
        } else {
            test_pem[o++] = p[i];
        }
    }
    test_pem[o] = '\0';
    BIO_free(b);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    EVP_PKEY_free(test_key);
    free(test_pem);
    free(test_pem_raw);
    return 0;
}

/* A map with one github-app entry: extra is spliced into the entry ("" for none). */
static int load(const char *extra, addon_replacements_t **r, char *err, size_t errlen)
{
    size_t cap = strlen(test_pem) + strlen(extra) + 1024;
    char *doc = malloc(cap);
    snprintf(
        doc, cap,
        "{\"" SURR "\": {\"type\": \"github-app\", \"app_id\": \"12345\", \"private_key\": "
        "\"%s\", \"installation_id\": 678, \"scopes\": [\"api.github.com\", \"github.com\"]%s}}",
        test_pem, extra);
    int rc = addon_replacements_load_buffer("t.json", doc, strlen(doc), r, err, errlen);
    free(doc);
    return rc;
}

static addon_ghapp_t *load_ok(const char *extra, addon_replacements_t **r)
{
    char err[512] = "";
    int rc = load(extra, r, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "load: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(addon_replacements_kind(*r, 0), ADDON_REPLACEMENTS_GITHUB_APP);
    addon_ghapp_t *g = addon_replacements_ghapp(*r, 0);
    assert_non_null(g);
    return g;
}

/* ---- parsing ------------------------------------------------------------------------------ */

static void test_ghapp_parse_defaults(void **state)
{
    (void)state;
    addon_replacements_t *r;
    addon_ghapp_t *g = load_ok("", &r);
    assert_string_equal(addon_ghapp_app_id(g), "12345");
    assert_string_equal(addon_ghapp_installation_id(g), "678");
    assert_string_equal(addon_ghapp_host(g), "api.github.com");
    assert_int_equal(addon_ghapp_port(g), 443);
    assert_string_equal(addon_ghapp_token_path(g), "/app/installations/678/access_tokens");
    assert_int_equal(addon_ghapp_timeout(g), 30);
    assert_int_equal(addon_replacements_allow_foreign(r, 0), 0);
    assert_int_equal(addon_replacements_scope_count(r, 0), 2);
    char *body;
    size_t len;
    assert_int_equal(addon_ghapp_mint_body(g, &body, &len), 0);
    assert_string_equal(body, "{}");
    free(body);
    char desc[2048];
    addon_replacements_describe(r, desc, sizeof(desc));
    assert_non_null(strstr(desc, "1 github-app"));
    assert_non_null(strstr(desc, " github-app app_id 12345 installation_id 678 token_url "
                                 "https://api.github.com:443/app/installations/678/"
                                 "access_tokens scopes [api.github.com, github.com]"));
    assert_null(strstr(desc, "PRIVATE"));
    assert_null(strstr(desc, "timeout")); /* the default is not shown */
    assert_null(addon_replacements_ghapp(r, 1));
    addon_replacements_unref(r);
}

static void test_ghapp_parse_all_fields(void **state)
{
    (void)state;
    addon_replacements_t *r;
    addon_ghapp_t *g = load_ok(", \"base_url\": \"https://GHE.example.com:8443/api/v3/\", "
                               "\"permissions\": {\"contents\": \"write\", \"issues\": \"read\"}, "
                               "\"repositories\": [\"my-repo\", \"other\"], "
                               "\"allow_foreign_credentials\": true, \"timeout\": 5",
                               &r);
    assert_int_equal(addon_ghapp_timeout(g), 5);
    char desc[2048];
    addon_replacements_describe(r, desc, sizeof(desc));
    assert_non_null(strstr(desc, " allow_foreign_credentials timeout 5s\n"));
    assert_string_equal(addon_ghapp_host(g), "ghe.example.com");
    assert_int_equal(addon_ghapp_port(g), 8443);
    assert_string_equal(addon_ghapp_token_path(g), "/api/v3/app/installations/678/access_tokens");
    assert_int_equal(addon_replacements_allow_foreign(r, 0), 1);
    char *body;
    size_t len;
    assert_int_equal(addon_ghapp_mint_body(g, &body, &len), 0);
    /* G9: the configured permissions and repositories, in file order */
    assert_string_equal(body, "{\"permissions\":{\"contents\":\"write\",\"issues\":\"read\"},"
                              "\"repositories\":[\"my-repo\",\"other\"]}");
    assert_int_equal(len, strlen(body));
    free(body);
    addon_replacements_unref(r);
}

static const struct {
    const char *name;
    const char *extra; /* spliced after the valid fields: a later duplicate key is an error,
                          so these replace nothing but add or break */
    const char *doc;   /* a whole document instead, when not NULL */
    const char *want;  /* substring of the message */
} parse_errors[] = {
    {"http base_url", ", \"base_url\": \"http://api.github.com\"", NULL,
     "entry[0].base_url: an https:// URL expected"},
    {"base_url with a query", ", \"base_url\": \"https://h.example/x?y\"", NULL,
     "entry[0].base_url: the path holds"},
    {"base_url bad port", ", \"base_url\": \"https://h.example:0\"", NULL,
     "entry[0].base_url: invalid port"},
    {"base_url user info", ", \"base_url\": \"https://u@h.example\"", NULL,
     "entry[0].base_url: the host holds"},
    {"permissions a list", ", \"permissions\": [\"contents\"]", NULL,
     "entry[0].permissions: expected a mapping"},
    {"repositories a string", ", \"repositories\": \"r\"", NULL,
     "entry[0].repositories: expected a sequence"},
    {"unknown key", ", \"value\": \"x\"", NULL, "entry[0]: unknown key"},
    {"timeout 0", ", \"timeout\": 0", NULL, "entry[0].timeout: "},
    {"timeout over the bound", ", \"timeout\": 601", NULL, "entry[0].timeout: "},
    {"timeout a string", ", \"timeout\": \"5s\"", NULL, "entry[0].timeout: "},
    {"allow_foreign not a boolean", ", \"allow_foreign_credentials\": 1", NULL,
     "entry[0].allow_foreign_credentials: expected a boolean"},
    {"missing app_id", NULL,
     "{\"s\": {\"type\": \"github-app\", \"private_key\": \"REALKEY\", \"installation_id\": 1, "
     "\"scopes\": []}}",
     "entry[0]: missing required key 'app_id'"},
    {"installation_id not digits", NULL,
     "{\"s\": {\"type\": \"github-app\", \"app_id\": 1, \"private_key\": \"REALKEY\", "
     "\"installation_id\": \"12a\", \"scopes\": []}}",
     "entry[0].installation_id: a positive integer expected"},
    {"private_key not PEM", NULL,
     "{\"s\": {\"type\": \"github-app\", \"app_id\": 1, \"private_key\": \"REALKEY\", "
     "\"installation_id\": 3, \"scopes\": []}}",
     "t.json:1:58: entry[0].private_key: not an unencrypted PEM private key"},
    {"missing scopes", NULL,
     "{\"s\": {\"type\": \"github-app\", \"app_id\": 1, \"private_key\": \"REALKEY\", "
     "\"installation_id\": 3}}",
     "entry[0]: missing required key 'scopes'"},
};

static void test_ghapp_parse_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(parse_errors) / sizeof(parse_errors[0]); i++) {
        addon_replacements_t *r = NULL;
        char err[512] = "";
        int rc;
        if (parse_errors[i].doc != NULL)
            rc = addon_replacements_load_buffer("t.json", parse_errors[i].doc,
                                                strlen(parse_errors[i].doc), &r, err, sizeof(err));
        else
            rc = load(parse_errors[i].extra, &r, err, sizeof(err));
        if (rc == 0 || strstr(err, parse_errors[i].want) == NULL)
            fail_msg("%s: rc %d, message [%s]", parse_errors[i].name, rc, err);
        assert_null(r);
        assert_null(strstr(err, "REALKEY"));
        assert_null(strstr(err, "PRIVATE KEY"));
        assert_null(strstr(err, "MII")); /* the start of any PEM body */
    }
}

static void test_ghapp_parse_not_rsa(void **state)
{
    (void)state;
    EVP_PKEY *ec = EVP_EC_gen("P-256");
    BIO *b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, ec, NULL, NULL, 0, NULL, NULL);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char doc[4096];
    size_t o = (size_t)snprintf(doc, sizeof(doc),
                                "{\"s\": {\"type\": \"github-app\", \"app_id\": 1, "
                                "\"installation_id\": 3, \"scopes\": [], \"private_key\": \"");
    for (long i = 0; i < n; i++) {
        if (p[i] == '\n') {
            doc[o++] = '\\';
            doc[o++] = 'n';
        } else {
            doc[o++] = p[i];
        }
    }
    snprintf(doc + o, sizeof(doc) - o, "\"}}");
    addon_replacements_t *r = NULL;
    char err[512];
    int rc = addon_replacements_load_buffer("t.json", doc, strlen(doc), &r, err, sizeof(err));
    assert_int_equal(rc, PX_ECONFIG);
    assert_non_null(strstr(err, "entry[0].private_key: not an RSA key"));
    BIO_free(b);
    EVP_PKEY_free(ec);
}

/* ---- the JWT ------------------------------------------------------------------------------- */

static size_t b64url_decode(const char *s, size_t len, unsigned char *out)
{
    char buf[4096];
    size_t o = 0;
    for (size_t i = 0; i < len; i++)
        buf[o++] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
    size_t pad = (4 - o % 4) % 4;
    for (size_t i = 0; i < pad; i++)
        buf[o++] = '=';
    int n = EVP_DecodeBlock(out, (unsigned char *)buf, (int)o);
    assert_true(n >= 0);
    return (size_t)n - pad;
}

static void test_ghapp_jwt_verifies(void **state)
{
    (void)state;
    addon_replacements_t *r;
    addon_ghapp_t *g = load_ok("", &r);
    char jwt[ADDON_GHAPP_JWT_MAX];
    size_t len = 0;
    int64_t now = 1764190000;
    assert_int_equal(addon_ghapp_jwt(g, now, jwt, sizeof(jwt), &len), 0);
    assert_int_equal(len, strlen(jwt));
    char *d1 = strchr(jwt, '.');
    assert_non_null(d1);
    char *d2 = strchr(d1 + 1, '.');
    assert_non_null(d2);
    assert_null(strchr(d2 + 1, '='));
    unsigned char dec[4096];
    size_t n = b64url_decode(jwt, (size_t)(d1 - jwt), dec);
    dec[n] = '\0';
    assert_string_equal((char *)dec, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
    n = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), dec);
    json_t *claims = json_loadb((char *)dec, n, 0, NULL);
    assert_non_null(claims);
    assert_int_equal(json_integer_value(json_object_get(claims, "iat")), now - 60);
    assert_int_equal(json_integer_value(json_object_get(claims, "exp")), now + 540);
    assert_string_equal(json_string_value(json_object_get(claims, "iss")), "12345");
    json_decref(claims);
    /* the signature, with the public key */
    size_t siglen = b64url_decode(d2 + 1, strlen(d2 + 1), dec);
    assert_int_equal(siglen, 256);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, test_key), 1);
    assert_int_equal(EVP_DigestVerify(md, dec, siglen, (unsigned char *)jwt, (size_t)(d2 - jwt)),
                     1);
    /* one flipped byte of the signed part: no longer valid */
    jwt[3] ^= 1;
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, test_key), 1);
    assert_int_not_equal(
        EVP_DigestVerify(md, dec, siglen, (unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
    EVP_MD_CTX_free(md);
    /* too small a buffer */
    assert_int_equal(addon_ghapp_jwt(g, now, jwt, 100, &len), PX_ETOOBIG);
    addon_replacements_unref(r);
}

/* ---- the token answer and the cache ---------------------------------------------------------- */

static void test_ghapp_parse_token(void **state)
{
    (void)state;
    char tok[ADDON_GHAPP_TOKEN_MAX + 1];
    int64_t exp = 0;
    const char *why = NULL;
    const char *ok = "{\"token\": \"ghs_real_token_value\", \"expires_at\": "
                     "\"2026-11-26T22:00:00Z\", \"permissions\": {}}";
    assert_int_equal(addon_ghapp_parse_token(ok, strlen(ok), tok, sizeof(tok), &exp, &why), 0);
    assert_string_equal(tok, REAL);
    assert_int_equal(exp, 1795730400);
    assert_null(why);
    static const char *const bad[] = {
        "",
        "[]",
        "{\"expires_at\": \"2026-11-26T22:00:00Z\"}",
        "{\"token\": \"a b\", \"expires_at\": \"2026-11-26T22:00:00Z\"}",
        "{\"token\": \"\", \"expires_at\": \"2026-11-26T22:00:00Z\"}",
        "{\"token\": \"t\"}",
        "{\"token\": \"t\", \"expires_at\": \"2026-11-26 22:00:00\"}",
        "{\"token\": \"t\", \"expires_at\": \"2026-13-26T22:00:00Z\"}",
        "{\"token\": 5, \"expires_at\": \"2026-11-26T22:00:00Z\"}",
        "{\"token\": \"t\", \"token\": \"u\", \"expires_at\": \"2026-11-26T22:00:00Z\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        if (addon_ghapp_parse_token(bad[i], strlen(bad[i]), tok, sizeof(tok), &exp, &why) !=
            PX_EPARSE)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(why);
    }
    const char *frac = "{\"token\":\"t\",\"expires_at\":\"2026-11-26T22:00:00.123Z\"}";
    assert_int_equal(addon_ghapp_parse_token(frac, strlen(frac), tok, sizeof(tok), &exp, &why), 0);
    assert_int_equal(exp, 1795730400);
}

static void test_ghapp_cache_expiry(void **state)
{
    (void)state;
    addon_replacements_t *r;
    addon_ghapp_t *g = load_ok("", &r);
    int64_t now = 1764190000;
    assert_false(addon_ghapp_cache_valid(g, now)); /* nothing yet */
    addon_ghapp_cache_set(g, "ghs_cached_token", 16, now + 3600);
    assert_true(addon_ghapp_cache_valid(g, now)); /* G2 */
    size_t len;
    assert_string_equal(addon_ghapp_cache_token(g, &len), "ghs_cached_token");
    assert_int_equal(len, 16);
    assert_true(addon_ghapp_cache_valid(g, now + 3600 - 301));
    assert_false(addon_ghapp_cache_valid(g, now + 3600 - 300)); /* the refresh margin */
    assert_false(addon_ghapp_cache_valid(g, now + 4000));       /* G3: expired */
    addon_ghapp_cache_set(g, "ghs_new", 7, now + 7200);         /* G3: the cache is updated */
    assert_true(addon_ghapp_cache_valid(g, now + 4000));
    assert_string_equal(addon_ghapp_cache_token(g, NULL), "ghs_new");
    addon_ghapp_cache_clear(g);
    assert_false(addon_ghapp_cache_valid(g, now));
    assert_int_equal(addon_ghapp_cache_expires(g), 0);
    addon_replacements_unref(r);
}

/* ---- the request side ----------------------------------------------------------------------- */

static char logged[4096];

static void on_log(void *data, const addon_note_t *note)
{
    /* the line as the proxy writes it: the note as its audit event, rendered */
    audit_event_t ev = audit_event_from_note(note);
    char line[AUDIT_EVENT_LINE_CAP];
    int rendered = audit_event_render(&ev, line, sizeof(line));
    size_t len = rendered > 0 ? (size_t)rendered : 0;
    (void)data;
    size_t o = strlen(logged);
    snprintf(logged + o, sizeof(logged) - o, "%.*s\n", (int)len, line);
}

static addon_req_t *req_new(const char *host, const char *const *auth, size_t n)
{
    addon_req_t *q = calloc(1, sizeof(*q));
    q->method.base = "GET";
    q->method.len = 3;
    q->host.base = host;
    q->host.len = strlen(host);
    q->tls = 1;
    q->url = "https://api.github.com/user";
    q->log_cb = on_log;
    q->headers[q->nheaders].name.base = "Accept";
    q->headers[q->nheaders].name.len = 6;
    q->headers[q->nheaders].value.base = "*/*";
    q->headers[q->nheaders++].value.len = 3;
    for (size_t i = 0; i < n; i++) {
        addon_header_t *h = &q->headers[q->nheaders++];
        h->name.base = "Authorization";
        h->name.len = 13;
        h->value.base = auth[i];
        h->value.len = strlen(auth[i]);
    }
    logged[0] = '\0';
    return q;
}

static void req_free(addon_req_t *q)
{
    addon_req_reset(q);
    free(q);
}

/* The live Authorization values joined with '|'. */
static const char *auth_of(const addon_req_t *q)
{
    static char out[1024];
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < q->nheaders; i++) {
        const addon_header_t *h = &q->headers[i];
        if (h->removed || h->name.len != 13 || strncmp(h->name.base, "Authorization", 13) != 0)
            continue;
        o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%.*s", o ? "|" : "", (int)h->value.len,
                              h->value.base);
    }
    return out;
}

static void test_ghapp_bearer(void **state)
{
    (void)state;
    addon_replacements_t *r;
    load_ok("", &r);
    const char *a[] = {"Bearer " SURR};
    addon_req_t *q = req_new("api.github.com", a, 1); /* G1 */
    assert_int_equal(addon_ghapp_match(r, q), 0);
    assert_int_equal(addon_ghapp_apply(q, r, 0, REAL, strlen(REAL), 1), 0);
    assert_string_equal(auth_of(q), "Bearer " REAL);
    assert_string_equal(q->annot, " [github-app: refreshed] [masked: 1]");
    assert_int_equal(q->credentials_done, 1);
    assert_string_equal(logged, "");
    req_free(q);

    q = req_new("API.GitHub.com.", a, 1); /* G2, any case, a trailing dot */
    assert_int_equal(addon_ghapp_match(r, q), 0);
    assert_int_equal(addon_ghapp_apply(q, r, 0, "ghs_cached_token", 16, 0), 0);
    assert_string_equal(auth_of(q), "Bearer ghs_cached_token");
    assert_string_equal(q->annot, " [github-app: cached] [masked: 1]");
    req_free(q);

    q = req_new("other-api.example.com", a, 1); /* G5: out of scope, forwarded as is */
    assert_int_equal(addon_ghapp_match(r, q), -1);
    assert_int_equal(addon_ghapp_strip_foreign(q, r), 0);
    assert_string_equal(auth_of(q), "Bearer " SURR);
    req_free(q);

    q = req_new("api.github.com", NULL, 0); /* no Authorization at all */
    assert_int_equal(addon_ghapp_match(r, q), -1);
    assert_int_equal(addon_ghapp_strip_foreign(q, r), 0);
    assert_string_equal(logged, "");
    req_free(q);
    addon_replacements_unref(r);
}

static void test_ghapp_foreign(void **state)
{
    (void)state;
    addon_replacements_t *r;
    load_ok("", &r);
    const char *a[] = {"Bearer foreign-token"};
    addon_req_t *q = req_new("api.github.com", a, 1); /* G6 */
    assert_int_equal(addon_ghapp_match(r, q), -1);
    assert_int_equal(addon_ghapp_strip_foreign(q, r), 1);
    assert_string_equal(auth_of(q), "");
    assert_string_equal(logged, "STRIPPED header 'authorization' from GET "
                                "https://api.github.com/user (foreign credential blocked)\n");
    assert_string_equal(q->annot, ""); /* not counted as dropped */
    req_free(q);
    addon_replacements_unref(r);

    load_ok(", \"allow_foreign_credentials\": true", &r); /* G6 with allow_foreign */
    q = req_new("api.github.com", a, 1);
    assert_int_equal(addon_ghapp_match(r, q), -1);
    assert_int_equal(addon_ghapp_strip_foreign(q, r), 0);
    assert_string_equal(auth_of(q), "Bearer foreign-token");
    req_free(q);
    addon_replacements_unref(r);
}

static void test_ghapp_basic(void **state)
{
    (void)state;
    addon_replacements_t *r;
    load_ok("", &r);
    /* G7: Basic x-access-token:<surr> on github.com */
    const char *a[] = {
        "Basic eC1hY2Nlc3MtdG9rZW46Z2hzX1N1cnJvZ2F0ZVRva2VuVmFsdWUxMjM0NTY3ODkwYWJjZGU="};
    addon_req_t *q = req_new("github.com", a, 1);
    assert_int_equal(addon_ghapp_match(r, q), 0);
    assert_int_equal(addon_ghapp_apply(q, r, 0, REAL, strlen(REAL), 1), 0);
    /* base64("x-access-token:ghs_real_token_value") */
    assert_string_equal(auth_of(q), "Basic eC1hY2Nlc3MtdG9rZW46Z2hzX3JlYWxfdG9rZW5fdmFsdWU=");
    req_free(q);
    /* the surrogate as the user name: not a github-app credential (the password only) */
    const char *u[] = {"Basic Z2hzX1N1cnJvZ2F0ZVRva2VuVmFsdWUxMjM0NTY3ODkwYWJjZGU6eA=="};
    q = req_new("github.com", u, 1);
    assert_int_equal(addon_ghapp_match(r, q), -1);
    req_free(q);
    /* not Basic: lowercase scheme, bad base64 */
    const char *nb[] = {
        "basic eC1hY2Nlc3MtdG9rZW46Z2hzX1N1cnJvZ2F0ZVRva2VuVmFsdWUxMjM0NTY3ODkwYWJjZGU=",
        "Basic not-valid!!!"};
    q = req_new("github.com", nb, 2);
    assert_int_equal(addon_ghapp_match(r, q), -1);
    req_free(q);
    addon_replacements_unref(r);
}

static void test_ghapp_duplicates(void **state)
{
    (void)state;
    addon_replacements_t *r;
    load_ok("", &r);
    /* G8: [surr, attacker] -> one Bearer with the real token */
    const char *a[] = {"Bearer " SURR, "Bearer attacker"};
    addon_req_t *q = req_new("api.github.com", a, 2);
    assert_int_equal(addon_ghapp_match(r, q), 0);
    assert_int_equal(addon_ghapp_apply(q, r, 0, REAL, strlen(REAL), 0), 0);
    assert_string_equal(auth_of(q), "Bearer " REAL);
    assert_string_equal(logged, "COLLAPSED 2 duplicate 'authorization' headers in GET "
                                "https://api.github.com/user (duplicate credential headers "
                                "removed)\n");
    req_free(q);
    /* [attacker, surr]: the surrogate in the second; the first place keeps the real one */
    const char *b[] = {"Bearer attacker", "Bearer " SURR};
    q = req_new("api.github.com", b, 2);
    assert_int_equal(addon_ghapp_match(r, q), 0);
    assert_int_equal(addon_ghapp_apply(q, r, 0, REAL, strlen(REAL), 0), 0);
    assert_string_equal(auth_of(q), "Bearer " REAL);
    assert_true(q->headers[1].value.len == strlen("Bearer " REAL));
    req_free(q);
    addon_replacements_unref(r);
}

static void test_ghapp_refresh_failed(void **state)
{
    (void)state;
    const char *a[] = {"Bearer " SURR};
    addon_req_t *q = req_new("api.github.com", a, 1);
    q->method.base = "POST";
    q->method.len = 4;
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    addon_ghapp_refresh_failed(q, &ans, "the token endpoint answered HTTP 500");
    assert_int_equal(ans.status, 502);
    assert_string_equal(ans.error, "github_app_token_refresh_failed");
    assert_string_equal(ans.message, "Failed to refresh GitHub App installation token");
    assert_string_equal(ans.verdict, "allowed");
    assert_int_equal(ans.with_request, 0);
    assert_string_equal(q->annot, " [github-app: refresh-failed]");
    assert_string_equal(logged, "GitHub App token refresh failed for POST "
                                "https://api.github.com/user: the token endpoint answered HTTP "
                                "500\n");
    assert_string_equal(auth_of(q), "Bearer " SURR); /* masked 0 */
    req_free(q);
}

static void test_ghapp_graphql_query(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        int refused;
    } cases[] = {{"/graphql?x=1", 1}, {"/graphql?", 1},   {"/api/graphql?a", 1},
                 {"/graphql", 0},     {"/repos?x=1", 0},  {"/graphqlx?y", 0},
                 {"/graph%71l?x", 1}, {"/GraphQL/?x", 1}, {"/graphql%2F?x", 1},
                 {"/graphq?x", 0},    {"/xgraphql?x", 0}, {"/a/graphql", 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        addon_req_t *q = req_new("api.github.com", NULL, 0);
        q->path.base = cases[i].path;
        q->path.len = strlen(cases[i].path);
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        assert_int_equal(addon_ghapp_graphql_query(q, &ans), cases[i].refused);
        if (cases[i].refused) {
            assert_int_equal(ans.status, 403);
            assert_string_equal(ans.error, "graphql_repo_scope_blocked");
            assert_string_equal(ans.detail, "query-params");
            assert_int_equal(ans.with_detail, 1);
            assert_string_equal(q->annot, " [github-app: query-params]");
        }
        req_free(q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ghapp_parse_defaults), cmocka_unit_test(test_ghapp_parse_all_fields),
        cmocka_unit_test(test_ghapp_parse_errors),   cmocka_unit_test(test_ghapp_parse_not_rsa),
        cmocka_unit_test(test_ghapp_jwt_verifies),   cmocka_unit_test(test_ghapp_parse_token),
        cmocka_unit_test(test_ghapp_cache_expiry),   cmocka_unit_test(test_ghapp_bearer),
        cmocka_unit_test(test_ghapp_foreign),        cmocka_unit_test(test_ghapp_basic),
        cmocka_unit_test(test_ghapp_duplicates),     cmocka_unit_test(test_ghapp_refresh_failed),
        cmocka_unit_test(test_ghapp_graphql_query),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
