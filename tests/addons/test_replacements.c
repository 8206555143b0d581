/* addon_replacements: loading /replacements.json (JSON and YAML), every validation error with
 * its exact file:line:col, real values never in messages or descriptions, a github-app entry
 * whose key is no PEM key (the github-app fields: test_ghapp.c),
 * a missing file, accessors and the describe text. Every real value in these inputs contains
 * "REALSECRET" so that a leak is one strstr away. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_replacements.h"
#include "base/px_err.h"

#define DATA AIRLOCK_TEST_DIR "/addons/data/"
#define SECRET_MARK "REALSECRET"

static int str_is(addon_str_t s, const char *want)
{
    return s.base != NULL && s.len == strlen(want) && memcmp(s.base, want, s.len) == 0;
}

static addon_str_t view(const char *s)
{
    addon_str_t v = {s, strlen(s)};
    return v;
}

/* ---- valid files ---------------------------------------------------------------------------- */

static void check_valid_map(const addon_replacements_t *r)
{
    assert_int_equal(addon_replacements_count(r), 4);

    /* entry 0: masked, every header pattern shape, allow_foreign_credentials */
    assert_int_equal(addon_replacements_kind(r, 0), ADDON_REPLACEMENTS_MASKED);
    assert_true(
        str_is(addon_replacements_surrogate(r, 0), "ghp_SurrogateToken0123456789abcdefghij"));
    assert_true(str_is(addon_replacements_value(r, 0), "ghp_REALSECRETtoken"));
    assert_int_equal(addon_replacements_allow_foreign(r, 0), 1);
    assert_int_equal(addon_replacements_scope_count(r, 0), 3);
    assert_true(str_is(addon_replacements_scope(r, 0, 0), "api.github.com"));
    assert_true(str_is(addon_replacements_scope(r, 0, 1), "*.github.com"));
    assert_true(str_is(addon_replacements_scope(r, 0, 2), "uploads.example.com"));
    assert_int_equal(addon_replacements_header_count(r, 0), 5);
    static const char *const hdrs[] = {"Authorization", "X-*", "X-?-Key", "*-Token", "X-[ab]"};
    static const int exact[] = {1, 0, 0, 0, 0};
    for (size_t k = 0; k < 5; k++) {
        int ex = -1;
        assert_true(str_is(addon_replacements_header(r, 0, k, &ex), hdrs[k]));
        assert_int_equal(ex, exact[k]);
    }
    int ex = -1;
    assert_null(addon_replacements_header(r, 0, 5, &ex).base);
    assert_int_equal(ex, 0);

    /* entry 1: masked, allow_foreign_credentials false */
    assert_int_equal(addon_replacements_kind(r, 1), ADDON_REPLACEMENTS_MASKED);
    assert_true(str_is(addon_replacements_surrogate(r, 1), "sk-ant-surrogate"));
    assert_true(str_is(addon_replacements_value(r, 1), "sk-ant-REALSECRET"));
    assert_int_equal(addon_replacements_allow_foreign(r, 1), 0);

    /* entries 2, 3: aws-sigv4 with and without a session token */
    assert_int_equal(addon_replacements_kind(r, 2), ADDON_REPLACEMENTS_AWS_SIGV4);
    assert_null(addon_replacements_value(r, 2).base);
    assert_int_equal(addon_replacements_header_count(r, 2), 0);
    addon_replacements_aws_t aws;
    assert_int_equal(addon_replacements_aws(r, 2, &aws), 0);
    assert_true(str_is(aws.surrogate_key_id, "AKIASURROGATE0000000"));
    assert_true(str_is(aws.access_key_id, "AKIAREALSECRET000000"));
    assert_true(str_is(aws.secret_access_key, "REALSECRETsecretkey"));
    assert_true(str_is(aws.session_token, "REALSECRETsessiontoken"));
    assert_true(str_is(aws.surrogate_session_token, "SurrogateSessionToken"));
    assert_int_equal(addon_replacements_aws(r, 3, &aws), 0);
    assert_true(str_is(aws.access_key_id, "AKIAREALSECRET111111"));
    assert_null(aws.session_token.base);
    assert_int_equal(aws.session_token.len, 0);
    assert_null(aws.surrogate_session_token.base);
    assert_int_equal(addon_replacements_aws(r, 0, &aws), PX_ENOENT);
    assert_null(aws.access_key_id.base);
    assert_int_equal(addon_replacements_aws(r, 4, &aws), PX_ENOENT);

    assert_int_equal(addon_replacements_find_aws(r, view("AKIASURROGATE1111111")), 3);
    assert_int_equal(addon_replacements_find_aws(r, view("AKIASURROGATE0000000")), 2);
    assert_int_equal(addon_replacements_find_aws(r, view("AKIASURROGATE000000")), -1);
    assert_int_equal(addon_replacements_find_aws(r, view("sk-ant-surrogate")), -1);

    /* out of range */
    assert_int_equal(addon_replacements_kind(r, 4), ADDON_REPLACEMENTS_NONE);
    assert_null(addon_replacements_surrogate(r, 4).base);
    assert_null(addon_replacements_scope(r, 0, 3).base);
}

static void test_replacements_valid_json(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    char err[512];
    assert_int_equal(addon_replacements_load_file(DATA "repl_valid.json", &r, err, sizeof(err)), 0);
    check_valid_map(r);
    assert_string_equal(addon_replacements_name(r), DATA "repl_valid.json");
    addon_replacements_unref(r);
}

static void test_replacements_valid_yaml(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    char err[512];
    assert_int_equal(addon_replacements_load_file(DATA "repl_valid.yaml", &r, err, sizeof(err)), 0);
    check_valid_map(r);
    addon_replacements_unref(r);
}

static void test_replacements_in_scope(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_file(DATA "repl_valid.json", &r, NULL, 0), 0);
    static const struct {
        size_t entry;
        const char *host;
        int want;
    } cases[] = {
        {0, "api.github.com", 1},
        {0, "API.GITHUB.COM", 1},
        {0, "api.github.com.", 1},
        {0, "uploads.github.com", 1},
        {0, "github.com", 0},
        {0, "api.github.com..", 0},
        {0, "uploads.example.com", 1},
        {0, "Uploads.Example.Com.", 1},
        {0, "example.com", 0},
        {1, "api.anthropic.com", 1},
        {1, "api.github.com", 0},
        {2, "s3.amazonaws.com", 1},
        {2, "amazonaws.com", 0},
        {3, "s3.us-east-1.amazonaws.com", 1},
        {9, "x", 0},
        {0, "", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = addon_replacements_in_scope(r, cases[i].entry, view(cases[i].host));
        if (got != cases[i].want)
            fail_msg("in_scope(%zu, %s) = %d", cases[i].entry, cases[i].host, got);
    }
    addon_replacements_unref(r);
}

static void test_replacements_empty(void **state)
{
    (void)state;
    static const char *const inputs[] = {"", "{}", "# only a comment\n", "~\n", "null", "---\n"};
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        addon_replacements_t *r = NULL;
        char err[256] = "";
        int rc = addon_replacements_load_buffer("e.json", inputs[i], strlen(inputs[i]), &r, err,
                                                sizeof(err));
        if (rc != 0)
            fail_msg("input %zu: %d %s", i, rc, err);
        assert_int_equal(addon_replacements_count(r), 0);
        addon_replacements_unref(r);
    }
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_file(DATA "repl_empty.json", &r, NULL, 0), 0);
    assert_int_equal(addon_replacements_count(r), 0);
    addon_replacements_unref(r);

    r = addon_replacements_new_empty("none");
    assert_non_null(r);
    assert_int_equal(addon_replacements_count(r), 0);
    assert_string_equal(addon_replacements_name(r), "none");
    addon_replacements_unref(r);

    /* A NULL map behaves as an empty one. */
    assert_int_equal(addon_replacements_count(NULL), 0);
    assert_int_equal(addon_replacements_kind(NULL, 0), ADDON_REPLACEMENTS_NONE);
    assert_int_equal(addon_replacements_find_aws(NULL, view("x")), -1);
    assert_int_equal(addon_replacements_in_scope(NULL, 0, view("x")), 0);
    addon_replacements_unref(NULL);
}

static void test_replacements_missing_file(void **state)
{
    (void)state;
    addon_replacements_t *r = (addon_replacements_t *)&r;
    char err[256];
    int rc = addon_replacements_load_file(DATA "repl_does_not_exist.json", &r, err, sizeof(err));
    assert_int_equal(rc, PX_ENOENT);
    assert_null(r);
    assert_string_equal(err, DATA "repl_does_not_exist.json: No such file or directory");
    /* A directory is not a readable file. */
    rc = addon_replacements_load_file(DATA, &r, err, sizeof(err));
    assert_int_equal(rc, PX_EIO);
    assert_null(r);
}

static void test_replacements_refcount(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_file(DATA "repl_valid.yaml", &r, NULL, 0), 0);
    assert_ptr_equal(addon_replacements_ref(r), r);
    assert_ptr_equal(addon_replacements_ref(r), r);
    addon_replacements_unref(r);
    addon_replacements_unref(r);
    /* still alive: one reference left */
    assert_int_equal(addon_replacements_count(r), 4);
    addon_replacements_unref(r);
}

/* ---- errors ----------------------------------------------------------------------------- */

typedef struct err_case {
    const char *name; /* what the case checks */
    const char *doc;
    int rc;
    const char *err; /* the exact message */
} err_case_t;

/* The masked entry's fields, one per line, so that line numbers stay readable. */
#define M_VALUE "\"value\": \"" SECRET_MARK "_v\""
#define M_SCOPES "\"scopes\": [\"example.com\"]"
#define M_HEADERS "\"headers\": [\"Authorization\"]"

static const err_case_t err_cases[] = {
    {"root is a sequence", "[1, 2]", PX_ECONFIG,
     "t.json:1:1: the replacement map must be a mapping keyed by surrogate, got a sequence"},
    {"root is a string", "\"" SECRET_MARK "\"", PX_ECONFIG,
     "t.json:1:1: the replacement map must be a mapping keyed by surrogate, got a string"},
    {"syntax error", "{\"s\": {\"value\": \"" SECRET_MARK "\",,}}", PX_EPARSE,
     "t.json:1:30: did not find expected node content (while parsing a flow node at line 1, "
     "column 30)"},
    {"entry not a mapping", "{\n  \"s1\": \"" SECRET_MARK "\"\n}", PX_ECONFIG,
     "t.json:2:9: entry[0]: expected a mapping, got a string"},
    {"empty surrogate", "{\n  \"\": {" M_VALUE ", " M_SCOPES ", " M_HEADERS "}\n}", PX_ECONFIG,
     "t.json:2:3: entry[0]: empty surrogate"},
    {"surrogate not a string (YAML)", "123:\n  value: x\n", PX_ECONFIG,
     "t.json:1:1: entry[0]: the surrogate (the key) must be a string, got an integer"},
    {"surrogate with a control character", "{\"a\\u0001b\": {}}", PX_ECONFIG,
     "t.json:1:2: entry[0]: the surrogate contains a control character"},
    {"missing value",
     "{\n  \"ok\": {" M_VALUE ", " M_SCOPES ", " M_HEADERS "},\n"
     "  \"s2\": {" M_SCOPES ", " M_HEADERS "}\n}",
     PX_ECONFIG, "t.json:3:9: entry[1]: missing required key 'value' (or 'value_from')"},
    {"missing scopes", "{\n  \"s\": {\n    " M_VALUE ",\n    " M_HEADERS "\n  }\n}", PX_ECONFIG,
     "t.json:2:8: entry[0]: missing required key 'scopes'"},
    {"missing headers", "{\n  \"s\": {\n    " M_VALUE ",\n    " M_SCOPES "\n  }\n}", PX_ECONFIG,
     "t.json:2:8: entry[0]: missing required key 'headers'"},
    {"value not a string",
     "{\n  \"s\": {\n    \"value\": 12345,\n    " M_SCOPES ",\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG, "t.json:3:14: entry[0].value: expected a string, got an integer"},
    {"value null",
     "{\n  \"s\": {\n    \"value\": null,\n    " M_SCOPES ",\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG, "t.json:3:14: entry[0].value: expected a string, got null"},
    {"value with CR LF",
     "{\n  \"s\": {\n    \"value\": \"" SECRET_MARK "\\r\\nX-Evil: 1\",\n    " M_SCOPES
     ",\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG,
     "t.json:3:14: entry[0].value: contains a control character (a header value cannot carry "
     "CR, LF or NUL)"},
    {"value with NUL",
     "{\n  \"s\": {\n    \"value\": \"" SECRET_MARK "\\u0000\",\n    " M_SCOPES ",\n    " M_HEADERS
     "\n  }\n}",
     PX_ECONFIG,
     "t.json:3:14: entry[0].value: contains a control character (a header value cannot carry "
     "CR, LF or NUL)"},
    {"unknown key",
     "{\n  \"s\": {\n    " M_VALUE ",\n    " M_SCOPES ",\n    " M_HEADERS
     ",\n    \"header\": [\"X\"]\n  }\n}",
     PX_ECONFIG,
     "t.json:6:5: entry[0]: unknown key (expected value, value_from, scopes, headers, "
     "allow_foreign_credentials or allow_plain_http)"},
    {"a real value in key position (damaged file)",
     "{\n  \"s\": {\"value\", \"" SECRET_MARK "\", " M_SCOPES ", " M_HEADERS "}\n}", PX_ECONFIG,
     "t.json:2:18: entry[0]: unknown key (expected value, value_from, scopes, headers, "
     "allow_foreign_credentials or allow_plain_http)"},
    {"scopes not a list",
     "{\n  \"s\": {\n    " M_VALUE ",\n    \"scopes\": \"example.com\",\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG, "t.json:4:15: entry[0].scopes: expected a sequence, got a string"},
    {"scope not a string",
     "{\n  \"s\": {\n    " M_VALUE ",\n    \"scopes\": [\"a.com\", 7],\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG, "t.json:4:25: entry[0].scopes[1]: expected a string, got an integer"},
    {"empty scope",
     "{\n  \"s\": {\n    " M_VALUE ",\n    \"scopes\": [\".\"],\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG, "t.json:4:16: entry[0].scopes[0]: empty host pattern"},
    {"scope with a path",
     "{\n  \"s\": {\n    " M_VALUE ",\n    \"scopes\": [\"a.com/x\"],\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG, "t.json:4:16: entry[0].scopes[0]: host pattern contains '/' (a scope is a host)"},
    {"scope with a space",
     "{\n  \"s\": {\n    " M_VALUE ",\n    \"scopes\": [\"a .com\"],\n    " M_HEADERS "\n  }\n}",
     PX_ECONFIG,
     "t.json:4:16: entry[0].scopes[0]: host pattern contains a space or control character"},
    {"headers not a list",
     "{\n  \"s\": {\n    " M_VALUE ",\n    " M_SCOPES ",\n    \"headers\": {}\n  }\n}", PX_ECONFIG,
     "t.json:5:16: entry[0].headers: expected a sequence, got a mapping"},
    {"empty header pattern",
     "{\n  \"s\": {\n    " M_VALUE ",\n    " M_SCOPES ",\n    \"headers\": [\"X-A\", \"\"]\n  }\n}",
     PX_ECONFIG, "t.json:5:24: entry[0].headers[1]: empty header pattern"},
    {"header pattern with a colon",
     "{\n  \"s\": {\n    " M_VALUE ",\n    " M_SCOPES ",\n    \"headers\": [\"X-A: b\"]\n  }\n}",
     PX_ECONFIG,
     "t.json:5:17: entry[0].headers[0]: a header name pattern cannot hold a space, ':' or a "
     "control character"},
    {"allow_foreign_credentials not a boolean",
     "{\n  \"s\": {\n    " M_VALUE ",\n    " M_SCOPES ",\n    " M_HEADERS
     ",\n    \"allow_foreign_credentials\": \"yes\"\n  }\n}",
     PX_ECONFIG,
     "t.json:6:34: entry[0].allow_foreign_credentials: expected a boolean, got a string"},
    {"type not a string", "{\n  \"s\": {\"type\": 1}\n}", PX_ECONFIG,
     "t.json:2:17: entry[0].type: expected a string, got an integer"},
    {"unknown type", "{\n  \"s\": {\"type\": \"azure-ad\", " M_VALUE "}\n}", PX_ECONFIG,
     "t.json:2:17: entry[0].type: unknown type (expected 'aws-sigv4', 'github-app', or no "
     "'type' for a masked secret)"},
    {"github-app",
     "{\n  \"ghs_x\": {\n    \"type\": \"github-app\",\n    \"app_id\": \"1\",\n"
     "    \"private_key\": \"" SECRET_MARK "\",\n    \"installation_id\": 2,\n"
     "    \"scopes\": [\"api.github.com\"]\n  }\n}",
     PX_ECONFIG,
     "t.json:5:20: entry[0].private_key: not an unencrypted PEM private key"},
    {"aws: missing access_key_id",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"secret_access_key\": \"" SECRET_MARK
     "\",\n    \"scopes\": [\"*.amazonaws.com\"]\n  }\n}",
     PX_ECONFIG, "t.json:2:12: entry[0]: missing required key 'access_key_id'"},
    {"aws: missing secret_access_key",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"" SECRET_MARK
     "\",\n    \"scopes\": [\"*.amazonaws.com\"]\n  }\n}",
     PX_ECONFIG, "t.json:2:12: entry[0]: missing required key 'secret_access_key'"},
    {"aws: missing scopes",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"" SECRET_MARK
     "1\",\n    \"secret_access_key\": \"" SECRET_MARK "2\"\n  }\n}",
     PX_ECONFIG, "t.json:2:12: entry[0]: missing required key 'scopes'"},
    {"aws: empty secret",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"" SECRET_MARK
     "\",\n    \"secret_access_key\": \"\",\n    \"scopes\": []\n  }\n}",
     PX_ECONFIG, "t.json:5:26: entry[0].secret_access_key: empty string"},
    {"aws: session_token not a string",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"" SECRET_MARK
     "1\",\n    \"secret_access_key\": \"" SECRET_MARK "2\",\n    \"session_token\": true,\n"
     "    \"scopes\": []\n  }\n}",
     PX_ECONFIG, "t.json:6:22: entry[0].session_token: expected a string, got a boolean"},
    {"aws: surrogate token without a real one",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"" SECRET_MARK
     "1\",\n    \"secret_access_key\": \"" SECRET_MARK "2\",\n    \"session_token\": null,\n"
     "    \"surrogate_session_token\": \"SurrTok\",\n    \"scopes\": []\n  }\n}",
     PX_ECONFIG, "t.json:7:5: entry[0]: 'surrogate_session_token' given without 'session_token'"},
    {"aws: headers is a masked-only key",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"" SECRET_MARK
     "1\",\n    \"secret_access_key\": \"" SECRET_MARK "2\",\n    \"headers\": [\"X\"],\n"
     "    \"scopes\": []\n  }\n}",
     PX_ECONFIG,
     "t.json:6:5: entry[0]: unknown key (expected type, access_key_id, "
     "secret_access_key, session_token, surrogate_session_token, scopes or allow_plain_http)"},
    {"aws: secret with a newline",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"access_key_id\": \"AKIAR\",\n"
     "    \"secret_access_key\": \"" SECRET_MARK "\\n\",\n    \"scopes\": []\n  }\n}",
     PX_ECONFIG,
     "t.json:5:26: entry[0].secret_access_key: contains a control character (a header value "
     "cannot carry CR, LF or NUL)"},
    /* YAML-level problems whose text could quote a real value are redacted. */
    {"YAML tag where a value was meant",
     "s:\n  value: !" SECRET_MARK "\n  scopes: [a.com]\n  headers: [X]\n", PX_EPARSE,
     "t.json:2:10: unsupported tag '...'"},
    {"duplicate surrogate",
     "{\n  \"dup\": {" M_VALUE ", " M_SCOPES ", " M_HEADERS "},\n"
     "  \"dup\": {" M_VALUE ", " M_SCOPES ", " M_HEADERS "}\n}",
     PX_EPARSE, "t.json:3:3: duplicate key '...' (first at line 2, column 3)"},
    {"duplicate field", "{\n  \"s\": {" M_VALUE ", " M_VALUE ", " M_SCOPES ", " M_HEADERS "}\n}",
     PX_EPARSE, "t.json:2:34: duplicate key '...' (first at line 2, column 9)"},
    {"alias", "a: &x {value: v}\nb: *x\n", PX_EPARSE, "t.json:2:4: aliases are not supported"},
};

static void test_replacements_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
        const err_case_t *c = &err_cases[i];
        addon_replacements_t *r = (addon_replacements_t *)&r;
        char err[512] = "";
        int rc =
            addon_replacements_load_buffer("t.json", c->doc, strlen(c->doc), &r, err, sizeof(err));
        if (rc != c->rc || strcmp(err, c->err) != 0)
            fail_msg("case '%s': rc %d (want %d)\n  got  '%s'\n  want '%s'", c->name, rc, c->rc,
                     err, c->err);
        assert_null(r);
        if (strstr(err, SECRET_MARK) != NULL)
            fail_msg("case '%s': the message holds a real value: %s", c->name, err);
    }
}

/* Loads one damaged copy; fails when the message holds a piece of a real value. 1 when the
 * copy was refused. */
static int sweep_one(const char *what, const char *doc, size_t len, size_t pos)
{
    addon_replacements_t *r = NULL;
    char err[512] = "";
    int rc = addon_replacements_load_buffer("t.json", doc, len, &r, err, sizeof(err));
    if (rc == 0) {
        addon_replacements_unref(r);
        return 0;
    }
    static const char *const pieces[] = {SECRET_MARK, "ETtoken", "ETsecret",
                                         "ETsession", "ECRET0",  "ECRET1"};
    for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
        if (strstr(err, pieces[k]) != NULL)
            fail_msg("%s at byte %zu: %s", what, pos, err);
    }
    return 1;
}

/* Every error message never holds a real value, whatever the damage: a sweep over single-byte
 * substitutions and deletions of both valid files (JSON and YAML). */
static void test_replacements_errors_never_leak(void **state)
{
    (void)state;
    static const char *const files[] = {DATA "repl_valid.json", DATA "repl_valid.yaml"};
    static const char subst[] = {'"', '{',  '}',  ',', ':', '!', '\x01', '[', ']', '&',
                                 '*', '\\', '\n', ' ', '-', '#', '\'',   '|', '>', '\xff'};
    for (size_t fi = 0; fi < 2; fi++) {
        FILE *f = fopen(files[fi], "rb");
        assert_non_null(f);
        char doc[4096];
        size_t len = fread(doc, 1, sizeof(doc), f);
        fclose(f);
        assert_true(len > 0 && len < sizeof(doc));
        size_t refused = 0;
        char copy[4096];
        for (size_t pos = 0; pos < len; pos++) {
            for (size_t s = 0; s < sizeof(subst); s++) {
                memcpy(copy, doc, len);
                copy[pos] = subst[s];
                refused += (size_t)sweep_one("substitution", copy, len, pos);
            }
            memcpy(copy, doc, pos);
            memcpy(copy + pos, doc + pos + 1, len - pos - 1);
            refused += (size_t)sweep_one("deletion", copy, len - 1, pos);
            /* cut short at pos */
            refused += (size_t)sweep_one("truncation", doc, pos, pos);
        }
        assert_true(refused > len); /* most damage is an error */
    }
}

static void test_replacements_files_with_errors(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    char err[512];
    int rc = addon_replacements_load_file(DATA "repl_github_app.json", &r, err, sizeof(err));
    assert_int_equal(rc, PX_ECONFIG);
    assert_string_equal(err, DATA "repl_github_app.json:5:20: entry[0].private_key: not an "
                                  "unencrypted PEM private key");
    assert_null(strstr(err, SECRET_MARK));
    assert_null(r);

    rc = addon_replacements_load_file(DATA "repl_bad_value.yaml", &r, err, sizeof(err));
    assert_int_equal(rc, PX_EPARSE);
    assert_string_equal(err, DATA "repl_bad_value.yaml:3:10: unsupported tag '...'");
    assert_null(strstr(err, SECRET_MARK));
}

static void test_replacements_caps(void **state)
{
    (void)state;
    /* one entry too many */
    size_t n = ADDON_REPLACEMENTS_MAX_ENTRIES + 1;
    size_t cap = n * 64 + 16;
    char *doc = malloc(cap);
    assert_non_null(doc);
    size_t o = 0;
    o += (size_t)snprintf(doc + o, cap - o, "{");
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(doc + o, cap - o,
                              "%s\"s%zu\": {\"value\": \"v\", \"scopes\": [], "
                              "\"headers\": []}",
                              i ? "," : "", i);
    o += (size_t)snprintf(doc + o, cap - o, "}");
    addon_replacements_t *r = NULL;
    char err[512];
    assert_int_equal(addon_replacements_load_buffer("t.json", doc, o, &r, err, sizeof(err)),
                     PX_ETOOBIG);
    assert_string_equal(err, "t.json:1:1: more than 1024 entries");
    /* exactly the cap is fine */
    o = (size_t)snprintf(doc, cap, "{");
    for (size_t i = 0; i + 1 < n; i++)
        o += (size_t)snprintf(doc + o, cap - o,
                              "%s\"s%zu\": {\"value\": \"v\", \"scopes\": [], "
                              "\"headers\": []}",
                              i ? "," : "", i);
    o += (size_t)snprintf(doc + o, cap - o, "}");
    assert_int_equal(addon_replacements_load_buffer("t.json", doc, o, &r, err, sizeof(err)), 0);
    assert_int_equal(addon_replacements_count(r), ADDON_REPLACEMENTS_MAX_ENTRIES);
    addon_replacements_unref(r);
    free(doc);

    /* a value one byte over the string cap */
    size_t vlen = ADDON_REPLACEMENTS_MAX_STRING + 1;
    cap = vlen + 128;
    doc = malloc(cap);
    assert_non_null(doc);
    o = (size_t)snprintf(doc, cap, "{\"s\": {\"value\": \"");
    memset(doc + o, 'R', vlen);
    o += vlen;
    o += (size_t)snprintf(doc + o, cap - o, "\", \"scopes\": [], \"headers\": []}}");
    assert_int_equal(addon_replacements_load_buffer("t.json", doc, o, &r, err, sizeof(err)),
                     PX_ETOOBIG);
    assert_string_equal(err, "t.json:1:17: entry[0].value: longer than 8192 bytes");
    free(doc);

    /* too many scope patterns */
    cap = (ADDON_REPLACEMENTS_MAX_PATTERNS + 1) * 8 + 128;
    doc = malloc(cap);
    assert_non_null(doc);
    o = (size_t)snprintf(doc, cap, "{\"s\": {\"value\": \"v\", \"headers\": [], \"scopes\": [");
    for (size_t i = 0; i <= ADDON_REPLACEMENTS_MAX_PATTERNS; i++)
        o += (size_t)snprintf(doc + o, cap - o, "%s\"h%zu\"", i ? "," : "", i);
    o += (size_t)snprintf(doc + o, cap - o, "]}}");
    assert_int_equal(addon_replacements_load_buffer("t.json", doc, o, &r, err, sizeof(err)),
                     PX_ETOOBIG);
    assert_string_equal(err, "t.json:1:47: entry[0].scopes: more than 256 patterns");
    free(doc);
}

/* A NULL or zero-length err buffer is allowed. */
static void test_replacements_no_err_buffer(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_buffer("t.json", "[1]", 3, &r, NULL, 0), PX_ECONFIG);
    assert_int_equal(addon_replacements_load_buffer(NULL, "[", 1, &r, NULL, 0), PX_EPARSE);
    char one[1] = {'x'};
    assert_int_equal(addon_replacements_load_buffer("t.json", "[1]", 3, &r, one, 0), PX_ECONFIG);
    assert_int_equal(one[0], 'x');
    char small[8];
    assert_int_equal(addon_replacements_load_buffer("t.json", "[1]", 3, &r, small, sizeof(small)),
                     PX_ECONFIG);
    assert_string_equal(small, "t.json:");
}

/* ---- describe --------------------------------------------------------------------------- */

static char *describe(const addon_replacements_t *r)
{
    size_t need = addon_replacements_describe(r, NULL, 0);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    assert_int_equal(addon_replacements_describe(r, buf, need + 1), need);
    assert_int_equal(strlen(buf), need);
    return buf;
}

static void test_replacements_describe(void **state)
{
    (void)state;
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_file(DATA "repl_valid.json", &r, NULL, 0), 0);
    char *text = describe(r);
    const char *want =
        DATA "repl_valid.json: 4 replacements (2 masked, 2 aws-sigv4)\n"
             "entry[0] ghp_\xe2\x80\xa6(38) masked scopes [api.github.com, *.github.com, "
             "uploads.example.com] headers [Authorization, X-*, X-?-Key, *-Token, X-[ab]] "
             "allow_foreign_credentials\n"
             "entry[1] sk-a\xe2\x80\xa6(16) masked scopes [api.anthropic.com] headers [x-api-key]\n"
             "entry[2] AKIA\xe2\x80\xa6(20) aws-sigv4 scopes [*.amazonaws.com] session_token "
             "surrogate_session_token\n"
             "entry[3] AKIA\xe2\x80\xa6(20) aws-sigv4 scopes [s3.us-east-1.amazonaws.com]\n";
    assert_string_equal(text, want);
    assert_null(strstr(text, SECRET_MARK));
    assert_null(strstr(text, "ghp_Surrogate"));
    assert_null(strstr(text, "SurrogateSessionToken"));
    free(text);

    /* Truncation: snprintf-style, always NUL-terminated. */
    char small[16];
    size_t full = addon_replacements_describe(r, small, sizeof(small));
    assert_true(full > sizeof(small));
    assert_int_equal(strlen(small), sizeof(small) - 1);
    addon_replacements_unref(r);

    /* Empty and NULL maps; a short surrogate shows at most half of itself; substring notes. */
    text = describe(NULL);
    assert_string_equal(text, "<none>: 0 replacements (0 masked, 0 aws-sigv4) (nothing is "
                              "masked)\n");
    free(text);
    static const char doc[] =
        "{\"ab\": {\"value\": \"" SECRET_MARK "1\", \"scopes\": [], \"headers\": [\"X\"]},\n"
        " \"abcdef\": {\"value\": \"" SECRET_MARK "2\", \"scopes\": [\"a.com\"], "
        "\"headers\": [\"X\"]},\n"
        " \"b\\u0001\": {\"value\": \"v\", \"scopes\": [\"a.com\"], \"headers\": [\"X\"]}}";
    char err[256] = "";
    int rc = addon_replacements_load_buffer("n.json", doc, strlen(doc), &r, err, sizeof(err));
    /* the control character in the third surrogate is refused */
    assert_int_equal(rc, PX_ECONFIG);
    assert_string_equal(err, "n.json:3:2: entry[2]: the surrogate contains a control character");
    static const char doc2[] =
        "{\"ab\": {\"value\": \"" SECRET_MARK "1\", \"scopes\": [], \"headers\": [\"X\"]},\n"
        " \"abcdef\": {\"value\": \"" SECRET_MARK "2\", \"scopes\": [\"a.com\"], "
        "\"headers\": [\"X\"]},\n"
        " \"xyz\": {\"value\": \"ab\", \"scopes\": [\"a.com\"], \"headers\": [\"X\"]}}";
    assert_int_equal(
        addon_replacements_load_buffer("n.json", doc2, strlen(doc2), &r, err, sizeof(err)), 0);
    text = describe(r);
    assert_string_equal(text,
                        "n.json: 3 replacements (3 masked, 0 aws-sigv4)\n"
                        "entry[0] a\xe2\x80\xa6(2) masked scopes [] headers [X] (no scopes: "
                        "never applies)\n"
                        "entry[1] abc\xe2\x80\xa6(6) masked scopes [a.com] headers [X]\n"
                        "entry[2] x\xe2\x80\xa6(3) masked scopes [a.com] headers [X]\n"
                        "note: entry[1]'s surrogate contains entry[0]'s, which is applied first "
                        "(file order); list the longer surrogate first\n");
    assert_null(strstr(text, SECRET_MARK));
    free(text);
    addon_replacements_unref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replacements_valid_json),
        cmocka_unit_test(test_replacements_valid_yaml),
        cmocka_unit_test(test_replacements_in_scope),
        cmocka_unit_test(test_replacements_empty),
        cmocka_unit_test(test_replacements_missing_file),
        cmocka_unit_test(test_replacements_refcount),
        cmocka_unit_test(test_replacements_errors),
        cmocka_unit_test(test_replacements_errors_never_leak),
        cmocka_unit_test(test_replacements_files_with_errors),
        cmocka_unit_test(test_replacements_caps),
        cmocka_unit_test(test_replacements_no_err_buffer),
        cmocka_unit_test(test_replacements_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
