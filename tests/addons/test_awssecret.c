/* addon_awssecret: the Secrets Manager / SSM request airlock signs (body, endpoint, headers,
 * SigV4 signature checked against botocore's for the same inputs), the answer's parser (every
 * documented shape and failure, with the exact message, never holding the value), the
 * credentials (environment, shared credentials file and profile), and the loader asking the
 * store for a value (a fake store registered here). Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "addons/addon_awssecret.h"
#include "addons/addon_replacements.h"
#include "base/px_err.h"

#define NOW 1700000000 /* 20231114T221320Z */

static void clear_env(void)
{
    static const char *const vars[] = {"AWS_ACCESS_KEY_ID",
                                       "AWS_SECRET_ACCESS_KEY",
                                       "AWS_SESSION_TOKEN",
                                       "AWS_SHARED_CREDENTIALS_FILE",
                                       "AWS_PROFILE",
                                       "AWS_REGION",
                                       "AWS_DEFAULT_REGION",
                                       "AWS_ENDPOINT_URL",
                                       "AWS_ENDPOINT_URL_SSM",
                                       "AWS_ENDPOINT_URL_SECRETS_MANAGER",
                                       NULL};
    for (size_t i = 0; vars[i] != NULL; i++)
        unsetenv(vars[i]);
}

/* ---- request building ------------------------------------------------------------------- */

typedef struct req_case {
    const char *name;
    addon_awssecret_src_t src;
    const char *region;
    const char *token;
    const char *endpoint;
    int rc;
    const char *host, *host_header;
    uint16_t port;
    int tls;
    const char *body;
    const char *auth; /* the whole Authorization value, or the error message */
} req_case_t;

/* The signatures are botocore's (SigV4Auth over the same request, timestamp and keys). */
static const req_case_t req_cases[] = {
    {"secrets manager, default endpoint",
     {.id = "prod/api"},
     "us-east-1",
     "",
     NULL,
     0,
     "secretsmanager.us-east-1.amazonaws.com",
     "secretsmanager.us-east-1.amazonaws.com",
     443,
     1,
     "{\"SecretId\":\"prod/api\"}",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/secretsmanager/aws4_request, "
     "SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
     "Signature=09e406ba672d68d85c2cdcfb5888d87a98576877d1c67817cb16227c3cdadc85"},
    {"ssm with a session token",
     {.ssm = 1, .id = "/app/x", .with_decryption = 1},
     "eu-west-1",
     "tok+en/1",
     NULL,
     0,
     "ssm.eu-west-1.amazonaws.com",
     "ssm.eu-west-1.amazonaws.com",
     443,
     1,
     "{\"Name\":\"/app/x\",\"WithDecryption\":true}",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/eu-west-1/ssm/aws4_request, "
     "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, "
     "Signature=d60a401aa43930ee1f3c0639494417aa09afdaa5fc4b899f75dfe8b58fe6460e"},
    {"endpoint override with a port, an id to escape",
     {.id = "a\"b"},
     "us-east-1",
     "",
     "http://LocalHost:4566/",
     0,
     "localhost",
     "localhost:4566",
     4566,
     0,
     "{\"SecretId\":\"a\\\"b\"}",
     "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/secretsmanager/aws4_request, "
     "SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
     "Signature=d39290002697e31e83b6cb28b0c12b8354946026cb4dfb9b5d45963a5b577fc8"},
    {"no region",
     {.id = "x"},
     NULL,
     "",
     NULL,
     PX_ECONFIG,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "no region (give \"region\", or set AWS_REGION)"},
    {"bad region",
     {.id = "x"},
     "EU West",
     "",
     NULL,
     PX_ECONFIG,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "no region (give \"region\", or set AWS_REGION)"},
    {"endpoint with a path",
     {.id = "x"},
     "us-east-1",
     "",
     "https://h.test/v1",
     PX_ECONFIG,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "the endpoint URL is not http[s]://host[:port][/]"},
    {"endpoint of another scheme",
     {.id = "x"},
     "us-east-1",
     "",
     "ftp://h.test",
     PX_ECONFIG,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "the endpoint URL is not http[s]://host[:port][/]"},
    {"endpoint port 0",
     {.id = "x"},
     "us-east-1",
     "",
     "https://h.test:0",
     PX_ECONFIG,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "the endpoint URL is not http[s]://host[:port][/]"},
    {"endpoint with user info",
     {.id = "x"},
     "us-east-1",
     "",
     "https://u@h.test",
     PX_ECONFIG,
     NULL,
     NULL,
     0,
     0,
     NULL,
     "the endpoint URL is not http[s]://host[:port][/]"},
};

static void test_awssecret_request(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
        const req_case_t *c = &req_cases[i];
        addon_awssecret_creds_t cr;
        memset(&cr, 0, sizeof(cr));
        strcpy(cr.akid, "AKIDEXAMPLE");
        strcpy(cr.secret, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
        strcpy(cr.token, c->token);
        addon_awssecret_req_t rq;
        char err[256] = "";
        int rc = addon_awssecret_request(&c->src, c->region, &cr, c->endpoint, NOW, &rq, err,
                                         sizeof(err));
        if (rc != c->rc)
            fail_msg("%s: rc %d, want %d (%s)", c->name, rc, c->rc, err);
        if (rc != 0) {
            if (strcmp(err, c->auth) != 0)
                fail_msg("%s: message\n  got  '%s'\n  want '%s'", c->name, err, c->auth);
            continue;
        }
        assert_string_equal(rq.host, c->host);
        assert_string_equal(rq.host_header, c->host_header);
        assert_int_equal(rq.port, c->port);
        assert_int_equal(rq.tls, c->tls);
        assert_string_equal(rq.amz_date, "20231114T221320Z");
        assert_int_equal(rq.blen, strlen(c->body));
        assert_memory_equal(rq.body, c->body, rq.blen);
        assert_string_equal(rq.target, c->src.ssm ? "AmazonSSM.GetParameter"
                                                  : "secretsmanager.GetSecretValue");
        if (rq.alen != strlen(c->auth) || memcmp(rq.auth, c->auth, rq.alen) != 0)
            fail_msg("%s: Authorization\n  got  '%.*s'\n  want '%s'", c->name, (int)rq.alen,
                     rq.auth, c->auth);
    }
}

/* ---- the answer ------------------------------------------------------------------------- */

typedef struct parse_case {
    const char *name;
    int ssm;
    const char *json_key;
    int status;
    const char *body;
    int rc;
    int retry;
    const char *out; /* the value, or the message */
} parse_case_t;

#define SM_OK(s)                                                                                   \
    "{\"ARN\":\"arn:aws:secretsmanager:us-east-1:1:secret:x\",\"Name\":\"x\","                     \
    "\"SecretString\":" s ",\"VersionStages\":[\"AWSCURRENT\"]}"

static const parse_case_t parse_cases[] = {
    {"secret string", 0, NULL, 200, SM_OK("\"REALSECRET-1\""), 0, 0, "REALSECRET-1"},
    {"json_key", 0, "token", 200,
     SM_OK("\"{\\\"user\\\":\\\"u\\\",\\\"token\\\":\\\"REALSECRET-2\\\"}\""), 0, 0,
     "REALSECRET-2"},
    {"json_key absent", 0, "nope", 200, SM_OK("\"{\\\"token\\\":\\\"REALSECRET\\\"}\""), PX_ENOENT,
     0, "the SecretString has no key named by json_key"},
    {"json_key, not an object", 0, "token", 200, SM_OK("\"REALSECRET not json\""), PX_EPARSE, 0,
     "json_key is given but the SecretString is not a JSON object"},
    {"json_key, a number", 0, "n", 200, SM_OK("\"{\\\"n\\\":5}\""), PX_EPARSE, 0,
     "the answer has no json_key's value string"},
    {"binary secret", 0, NULL, 200, "{\"Name\":\"x\",\"SecretBinary\":\"UkVBTFNFQ1JFVA==\"}",
     PX_EPARSE, 0, "the secret is binary (SecretBinary); only SecretString is supported"},
    {"empty secret", 0, NULL, 200, SM_OK("\"\""), PX_EPARSE, 0, "the SecretString is empty"},
    {"ssm parameter", 1, NULL, 200,
     "{\"Parameter\":{\"Name\":\"/a\",\"Type\":\"SecureString\",\"Value\":\"REALSECRET-3\","
     "\"Version\":1}}",
     0, 0, "REALSECRET-3"},
    {"ssm, no Parameter", 1, NULL, 200, "{\"Value\":\"REALSECRET\"}", PX_EPARSE, 0,
     "the answer has no Parameter.Value string"},
    {"throttled", 0, NULL, 400,
     "{\"__type\":\"ThrottlingException\",\"message\":\"Rate exceeded\"}", PX_EPARSE, 1,
     "AWS answered HTTP 400, ThrottlingException"},
    {"throttled, namespaced type", 1, NULL, 400,
     "{\"__type\":\"com.amazon.coral.availability#ThrottlingException\"}", PX_EPARSE, 1,
     "AWS answered HTTP 400, ThrottlingException"},
    {"not found", 0, NULL, 400, "{\"__type\":\"ResourceNotFoundException\",\"Message\":\"x\"}",
     PX_EPARSE, 0, "AWS answered HTTP 400, ResourceNotFoundException"},
    {"server error", 0, NULL, 500, "{\"__type\":\"InternalServiceError\"}", PX_EPARSE, 1,
     "AWS answered HTTP 500, InternalServiceError"},
    {"error type that could be anything", 0, NULL, 403, "{\"__type\":\"REAL SECRET!\"}", PX_EPARSE,
     0, "AWS answered HTTP 403, an error"},
    {"error without JSON", 0, NULL, 502, "<html>bad gateway</html>", PX_EPARSE, 1,
     "AWS answered HTTP 502, an error"},
    {"malformed", 0, NULL, 200, "{\"SecretString\": \"REALSECRET", PX_EPARSE, 0,
     "HTTP 200 but the answer is not a JSON object"},
    {"not an object", 0, NULL, 200, "[\"REALSECRET\"]", PX_EPARSE, 0,
     "HTTP 200 but the answer is not a JSON object"},
    {"duplicate key", 0, NULL, 200, "{\"SecretString\":\"a\",\"SecretString\":\"REALSECRET\"}",
     PX_EPARSE, 0, "HTTP 200 but the answer is not a JSON object"},
};

static void test_awssecret_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const parse_case_t *c = &parse_cases[i];
        addon_awssecret_src_t src = {.ssm = c->ssm, .id = "x", .json_key = c->json_key};
        char value[64], err[256] = "";
        size_t vlen = 99;
        int retry = -1;
        int rc = addon_awssecret_parse(&src, c->status, c->body, strlen(c->body), value,
                                       sizeof(value), &vlen, &retry, err, sizeof(err));
        if (rc != c->rc || retry != c->retry)
            fail_msg("%s: rc %d retry %d, want %d %d (%s)", c->name, rc, retry, c->rc, c->retry,
                     err);
        if (rc == 0 && (vlen != strlen(c->out) || memcmp(value, c->out, vlen) != 0))
            fail_msg("%s: value '%.*s'", c->name, (int)vlen, value);
        if (rc != 0 && strcmp(err, c->out) != 0)
            fail_msg("%s: message\n  got  '%s'\n  want '%s'", c->name, err, c->out);
        if (strstr(err, "REALSECRET") != NULL)
            fail_msg("%s: the message holds the value", c->name);
    }
    /* a value over the caller's cap */
    addon_awssecret_src_t src = {.id = "x"};
    char small[4], err[256];
    size_t vlen;
    int retry;
    const char *b = SM_OK("\"REALSECRET\"");
    assert_int_equal(addon_awssecret_parse(&src, 200, b, strlen(b), small, sizeof(small), &vlen,
                                           &retry, err, sizeof(err)),
                     PX_ETOOBIG);
    assert_string_equal(err, "the SecretString is longer than 4 bytes");
}

/* ---- credentials ------------------------------------------------------------------------ */

typedef struct cred_case {
    const char *name;
    const char *akid, *secret, *token; /* environment, NULL: unset */
    const char *file;                  /* credentials file content, NULL: none */
    const char *profile;
    int rc;
    const char *want_akid, *want_token; /* or the message's start */
} cred_case_t;

static const cred_case_t cred_cases[] = {
    {"environment", "AKIDENV", "sk", "tok", NULL, NULL, 0, "AKIDENV", "tok"},
    {"environment without token", "AKIDENV", "sk", NULL, NULL, NULL, 0, "AKIDENV", ""},
    {"file, default profile", NULL, NULL, NULL,
     "# comment\n[other]\naws_access_key_id=AKIDOTHER\naws_secret_access_key=x\n"
     "[default]\n aws_access_key_id = AKIDFILE \r\naws_secret_access_key=sk\n",
     NULL, 0, "AKIDFILE", ""},
    {"file, named profile with token", NULL, NULL, NULL,
     "[default]\naws_access_key_id=AKIDDEF\naws_secret_access_key=x\n[ci]\n"
     "aws_access_key_id=AKIDCI\naws_secret_access_key=sk\naws_session_token=T0k=\n",
     "ci", 0, "AKIDCI", "T0k="},
    {"file, profile missing", NULL, NULL, NULL, "[default]\naws_access_key_id=A\n", "gone",
     PX_ENOENT, "the credentials file ", NULL},
    {"half the environment falls back to the file", "AKIDENV", NULL, NULL,
     "[default]\naws_access_key_id=AKIDFILE\naws_secret_access_key=sk\n", NULL, 0, "AKIDFILE", ""},
    {"token with a newline", "AKIDENV", "sk", "a\nb", NULL, NULL, PX_EPARSE,
     "the AWS access key id or session token holds a byte", NULL},
    {"no credentials at all", NULL, NULL, NULL, NULL, NULL, PX_ENOENT,
     "no AWS credentials: AWS_ACCESS_KEY_ID is not set and the credentials file ", NULL},
};

static void test_awssecret_creds(void **state)
{
    (void)state;
    char dir[] = "/tmp/airlock-awssecret.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/credentials", dir);
    for (size_t i = 0; i < sizeof(cred_cases) / sizeof(cred_cases[0]); i++) {
        const cred_case_t *c = &cred_cases[i];
        clear_env();
        if (c->akid != NULL)
            setenv("AWS_ACCESS_KEY_ID", c->akid, 1);
        if (c->secret != NULL)
            setenv("AWS_SECRET_ACCESS_KEY", c->secret, 1);
        if (c->token != NULL)
            setenv("AWS_SESSION_TOKEN", c->token, 1);
        if (c->profile != NULL)
            setenv("AWS_PROFILE", c->profile, 1);
        unlink(path);
        if (c->file != NULL) {
            FILE *f = fopen(path, "w");
            assert_non_null(f);
            fputs(c->file, f);
            fclose(f);
        }
        setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
        addon_awssecret_creds_t cr;
        char err[512] = "";
        int rc = addon_awssecret_creds_load(&cr, err, sizeof(err));
        if (rc != c->rc)
            fail_msg("%s: rc %d, want %d (%s)", c->name, rc, c->rc, err);
        if (rc == 0) {
            assert_string_equal(cr.akid, c->want_akid);
            assert_string_equal(cr.token, c->want_token);
        } else if (strncmp(err, c->want_akid, strlen(c->want_akid)) != 0) {
            fail_msg("%s: message '%s'", c->name, err);
        }
        addon_awssecret_creds_wipe(&cr);
    }
    unlink(path);
    rmdir(dir);
    clear_env();
}

static void test_awssecret_env(void **state)
{
    (void)state;
    clear_env();
    addon_awssecret_src_t src = {.id = "x"};
    assert_null(addon_awssecret_region(&src));
    assert_null(addon_awssecret_endpoint_env(0));
    setenv("AWS_DEFAULT_REGION", "eu-north-1", 1);
    assert_string_equal(addon_awssecret_region(&src), "eu-north-1");
    setenv("AWS_REGION", "us-west-2", 1);
    assert_string_equal(addon_awssecret_region(&src), "us-west-2");
    src.region = "ap-south-1";
    assert_string_equal(addon_awssecret_region(&src), "ap-south-1");
    setenv("AWS_ENDPOINT_URL", "https://all.test", 1);
    setenv("AWS_ENDPOINT_URL_SSM", "https://ssm.test", 1);
    assert_string_equal(addon_awssecret_endpoint_env(0), "https://all.test");
    assert_string_equal(addon_awssecret_endpoint_env(1), "https://ssm.test");
    clear_env();
}

/* ---- the loader asks the store ---------------------------------------------------------- */

static int g_asked;
static addon_awssecret_src_t g_last;
static unsigned g_refresh;

static int fake_lookup(void *arg, const addon_awssecret_src_t *src, unsigned refresh,
                       const char **value, size_t *vlen, char *why, size_t whylen)
{
    (void)arg;
    g_asked++;
    /* src's strings live in the loader's frame: copied, so the checks after the load read ours */
    static char id[256], region[64], key[256];
    g_last = *src;
    snprintf(id, sizeof(id), "%s", src->id != NULL ? src->id : "");
    snprintf(region, sizeof(region), "%s", src->region != NULL ? src->region : "");
    snprintf(key, sizeof(key), "%s", src->json_key != NULL ? src->json_key : "");
    g_last.id = src->id != NULL ? id : NULL;
    g_last.region = src->region != NULL ? region : NULL;
    g_last.json_key = src->json_key != NULL ? key : NULL;
    g_refresh = refresh;
    if (strcmp(src->id, "broken") == 0) {
        snprintf(why, whylen, "AWS answered HTTP 400, AccessDeniedException");
        return PX_EIO;
    }
    *value = strcmp(src->id, "ctl") == 0 ? "REAL\nSECRET" : "REALSECRET-fetched";
    *vlen = strlen(*value);
    return 0;
}

typedef struct load_case {
    const char *name;
    const char *from;
    int rc;
    const char *out; /* the value, or the message */
} load_case_t;

static const load_case_t load_cases[] = {
    {"secrets manager",
     "{\"aws_secrets_manager\": {\"secret_id\": \"prod/a\", \"json_key\": "
     "\"k\", \"region\": \"eu-west-1\", \"refresh_seconds\": 120}}",
     0, "REALSECRET-fetched"},
    {"ssm", "{\"aws_ssm\": {\"name\": \"/p\", \"with_decryption\": false}}", 0,
     "REALSECRET-fetched"},
    {"fetch failed", "{\"aws_secrets_manager\": {\"secret_id\": \"broken\"}}", PX_ECONFIG,
     "t.json:1:26: entry[0].value_from.aws_secrets_manager: cannot fetch broken: AWS answered "
     "HTTP 400, AccessDeniedException"},
    {"value with a newline", "{\"aws_ssm\": {\"name\": \"ctl\"}}", PX_ECONFIG,
     "t.json:1:37: entry[0].value_from.aws_ssm: the value fetched for ctl contains a control "
     "character (a header value cannot carry CR, LF or NUL)"},
};

static void test_awssecret_loader(void **state)
{
    (void)state;
    addon_awssecret_set_lookup(fake_lookup, NULL);
    for (size_t i = 0; i < sizeof(load_cases) / sizeof(load_cases[0]); i++) {
        const load_case_t *c = &load_cases[i];
        char doc[1024], err[512] = "";
        snprintf(doc, sizeof(doc),
                 "{\"SURR\": {\"value_from\": %s, \"scopes\": [\"a.test\"], \"headers\": [\"X\"]}}",
                 c->from);
        addon_replacements_t *r = NULL;
        g_asked = 0;
        int rc = addon_replacements_load_buffer("t.json", doc, strlen(doc), &r, err, sizeof(err));
        if (rc != c->rc)
            fail_msg("%s: rc %d, want %d (%s)", c->name, rc, c->rc, err);
        assert_int_equal(g_asked, 1);
        if (rc == 0) {
            addon_str_t v = addon_replacements_value(r, 0);
            assert_int_equal(v.len, strlen(c->out));
            assert_memory_equal(v.base, c->out, v.len);
            char desc[1024];
            addon_replacements_describe(r, desc, sizeof(desc));
            assert_null(strstr(desc, "REALSECRET"));
            addon_replacements_unref(r);
        } else if (strcmp(err, c->out) != 0) {
            fail_msg("%s: message\n  got  '%s'\n  want '%s'", c->name, err, c->out);
        }
        assert_null(strstr(err, "REALSECRET"));
    }
    /* what the store was asked, for the first two */
    char err[512];
    addon_replacements_t *r = NULL;
    const char *doc = "{\"S\": {\"value_from\": {\"aws_secrets_manager\": {\"secret_id\": \"p\", "
                      "\"json_key\": \"k\", \"region\": \"eu-west-1\", \"refresh_seconds\": 120}},"
                      " \"scopes\": [\"a.test\"], \"headers\": [\"X\"]}}";
    assert_int_equal(
        addon_replacements_load_buffer("t.json", doc, strlen(doc), &r, err, sizeof(err)), 0);
    assert_int_equal(g_last.ssm, 0);
    assert_string_equal(g_last.id, "p");
    assert_string_equal(g_last.json_key, "k");
    assert_string_equal(g_last.region, "eu-west-1");
    assert_int_equal(g_refresh, 120);
    addon_replacements_unref(r);
    doc = "{\"S\": {\"value_from\": {\"aws_ssm\": {\"name\": \"/n\"}}, \"scopes\": [\"a.test\"], "
          "\"headers\": [\"X\"]}}";
    assert_int_equal(
        addon_replacements_load_buffer("t.json", doc, strlen(doc), &r, err, sizeof(err)), 0);
    assert_int_equal(g_last.ssm, 1);
    assert_int_equal(g_last.with_decryption, 1); /* decrypted unless told not to */
    assert_null(g_last.region);
    assert_null(g_last.json_key);
    assert_int_equal(g_refresh, 300);
    addon_replacements_unref(r);
    addon_awssecret_set_lookup(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awssecret_request), cmocka_unit_test(test_awssecret_parse),
        cmocka_unit_test(test_awssecret_creds),   cmocka_unit_test(test_awssecret_env),
        cmocka_unit_test(test_awssecret_loader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
