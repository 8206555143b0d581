/* addon_replacements: "value_from", a masked entry's real value read from airlock's environment
 * or from a file (docs/replacements.md, "Where real values come from"), and the AWS source
 * shapes, which are checked and then asked of a store this test does not register (refused).
 * Table-driven: every source, every failure with its exact file:line:col message, both value and
 * value_from given, and no message ever holding the value (every value here contains "REALSECRET").
 * The files live in a temporary directory made and removed by the test; "@D" in a case stands for
 * it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "addons/addon_replacements.h"
#include "base/px_err.h"

#define SECRET_MARK "REALSECRET"

static char g_dir[256]; /* the temporary directory */

/* ---- fixtures --------------------------------------------------------------------------- */

static void write_file(const char *name, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static char *repeat(const char *head, size_t len, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail);
    char *s = malloc(len + tl + 1);
    assert_non_null(s);
    memset(s, 'x', len);
    memcpy(s, head, hl);
    memcpy(s + len, tail, tl + 1);
    return s;
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof(g_dir), "%s/airlock-valfrom-XXXXXX",
             tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    if (mkdtemp(g_dir) == NULL)
        return -1;
    write_file("tok", SECRET_MARK "_file\n", strlen(SECRET_MARK "_file\n"));
    write_file("raw", SECRET_MARK "_raw", strlen(SECRET_MARK "_raw"));
    write_file("crlf", SECRET_MARK "_crlf\r\n", strlen(SECRET_MARK "_crlf\r\n"));
    write_file("two", SECRET_MARK "_two\n\n", strlen(SECRET_MARK "_two\n\n"));
    write_file("inner", SECRET_MARK "\nX-Evil: 1", strlen(SECRET_MARK "\nX-Evil: 1"));
    write_file("nul", SECRET_MARK "\0x", strlen(SECRET_MARK) + 2);
    write_file("empty", "", 0);
    write_file("nl", "\n", 1);
    char *max = repeat(SECRET_MARK, ADDON_REPLACEMENTS_MAX_STRING, "\r\n"); /* at the cap */
    write_file("max", max, strlen(max));
    free(max);
    char *big = repeat(SECRET_MARK, ADDON_REPLACEMENTS_FROM_FILE_MAX + 1, "");
    write_file("big", big, strlen(big));
    free(big);
    char *long1 = repeat(SECRET_MARK, ADDON_REPLACEMENTS_MAX_STRING + 1, "\n");
    write_file("long", long1, strlen(long1));
    free(long1);
    char p[512], q[512];
    snprintf(p, sizeof(p), "%s/dir", g_dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/fifo", g_dir);
    assert_int_equal(mkfifo(p, 0600), 0);
    snprintf(p, sizeof(p), "%s/tok", g_dir);
    snprintf(q, sizeof(q), "%s/link", g_dir); /* Kubernetes secret volumes are symlinks */
    assert_int_equal(symlink(p, q), 0);
    write_file("noperm", SECRET_MARK "_noperm", strlen(SECRET_MARK "_noperm"));
    snprintf(p, sizeof(p), "%s/noperm", g_dir);
    assert_int_equal(chmod(p, 0), 0);

    setenv("AIRLOCK_T_TOKEN", SECRET_MARK "_env", 1);
    setenv("AIRLOCK_T_EMPTY", "", 1);
    setenv("AIRLOCK_T_NL", SECRET_MARK "\r\nX-Evil: 1", 1);
    unsetenv("AIRLOCK_T_UNSET");
    char *env = repeat(SECRET_MARK, ADDON_REPLACEMENTS_MAX_STRING, "");
    setenv("AIRLOCK_T_MAX", env, 1);
    free(env);
    env = repeat(SECRET_MARK, ADDON_REPLACEMENTS_MAX_STRING + 1, "");
    setenv("AIRLOCK_T_LONG", env, 1);
    free(env);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    static const char *const names[] = {"tok",  "raw",   "crlf", "two",    "inner",
                                        "nul",  "empty", "nl",   "max",    "big",
                                        "long", "fifo",  "link", "noperm", "changing"};
    char p[512];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", g_dir, names[i]);
        unlink(p);
    }
    snprintf(p, sizeof(p), "%s/dir", g_dir);
    rmdir(p);
    return rmdir(g_dir) == 0 ? 0 : -1;
}

/* in with every "@D" replaced by the temporary directory, into out. */
static void expand(const char *in, char *out, size_t outlen)
{
    size_t o = 0;
    for (const char *s = in; *s != '\0';) {
        const char *piece = s;
        size_t plen = 1;
        if (s[0] == '@' && s[1] == 'D') {
            piece = g_dir;
            plen = strlen(g_dir);
            s += 2;
        } else {
            s++;
        }
        assert_true(o + plen < outlen);
        memcpy(out + o, piece, plen);
        o += plen;
    }
    out[o] = '\0';
}

/* A masked entry whose line 3 is `    "value_from": FROM,` (the value_from node at 3:19). */
#define DOC(from)                                                                                  \
    "{\n  \"s\": {\n    \"value_from\": " from ",\n    \"scopes\": [\"example.com\"],\n"           \
    "    \"headers\": [\"Authorization\"]\n  }\n}"

static int load(const char *tmpl, addon_replacements_t **r, char *err, size_t errlen)
{
    char doc[4096];
    expand(tmpl, doc, sizeof(doc));
    *r = (addon_replacements_t *)r;
    return addon_replacements_load_buffer("t.json", doc, strlen(doc), r, err, errlen);
}

/* ---- sources that load -------------------------------------------------------------------- */

typedef struct ok_case {
    const char *name;
    const char *doc;
    const char *value;    /* the real value the entry gets; NULL: ADDON_REPLACEMENTS_MAX_STRING
                           * bytes, REALSECRET then 'x' */
    const char *describe; /* the entry's describe line */
} ok_case_t;

static const ok_case_t ok_cases[] = {
    {"env", DOC("{\"env\": \"AIRLOCK_T_TOKEN\"}"), SECRET_MARK "_env",
     "entry[0] \xe2\x80\xa6(1) masked scopes [example.com] headers [Authorization] value_from "
     "env AIRLOCK_T_TOKEN\n"},
    {"env at the cap", DOC("{\"env\": \"AIRLOCK_T_MAX\"}"), NULL, NULL},
    {"file, one trailing newline stripped", DOC("{\"file\": \"@D/tok\"}"), SECRET_MARK "_file",
     "entry[0] \xe2\x80\xa6(1) masked scopes [example.com] headers [Authorization] value_from "
     "file @D/tok\n"},
    {"file without a newline", DOC("{\"file\": \"@D/raw\"}"), SECRET_MARK "_raw", NULL},
    {"file ending in CR LF", DOC("{\"file\": \"@D/crlf\"}"), SECRET_MARK "_crlf", NULL},
    {"file through a symlink", DOC("{\"file\": \"@D/link\"}"), SECRET_MARK "_file", NULL},
    {"file at the cap (and CR LF)", DOC("{\"file\": \"@D/max\"}"), NULL, NULL},
    {"YAML", "s:\n  value_from:\n    file: @D/tok\n  scopes: [example.com]\n  headers: [X]\n",
     SECRET_MARK "_file", NULL},
};

static void test_replacements_from_sources(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ok_cases) / sizeof(ok_cases[0]); i++) {
        const ok_case_t *c = &ok_cases[i];
        addon_replacements_t *r;
        char err[512] = "";
        int rc = load(c->doc, &r, err, sizeof(err));
        if (rc != 0)
            fail_msg("case '%s': rc %d: %s", c->name, rc, err);
        assert_int_equal(addon_replacements_count(r), 1);
        assert_int_equal(addon_replacements_kind(r, 0), ADDON_REPLACEMENTS_MASKED);
        addon_str_t v = addon_replacements_value(r, 0);
        if (c->value != NULL) {
            if (v.len != strlen(c->value) || memcmp(v.base, c->value, v.len) != 0)
                fail_msg("case '%s': value of %zu bytes, not the expected one", c->name, v.len);
        } else {
            assert_int_equal(v.len, ADDON_REPLACEMENTS_MAX_STRING);
            assert_memory_equal(v.base, SECRET_MARK, strlen(SECRET_MARK));
            assert_int_equal(v.base[v.len - 1], 'x');
        }
        assert_int_equal(v.base[v.len], '\0');
        char text[1024];
        addon_replacements_describe(r, text, sizeof(text));
        assert_null(strstr(text, SECRET_MARK));
        if (c->describe != NULL) {
            char want[1024];
            expand(c->describe, want, sizeof(want));
            if (strstr(text, want) == NULL)
                fail_msg("case '%s': describe\n%s\nlacks\n%s", c->name, text, want);
        }
        addon_replacements_unref(r);
    }
    /* value_from never changes a literal value's entry. */
    static const char lit[] = "{\"s\": {\"value\": \"" SECRET_MARK "_lit\", \"scopes\": [], "
                              "\"headers\": [\"X\"]}}";
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_buffer("t.json", lit, strlen(lit), &r, NULL, 0), 0);
    addon_str_t v = addon_replacements_value(r, 0);
    assert_int_equal(v.len, strlen(SECRET_MARK "_lit"));
    char text[1024];
    addon_replacements_describe(r, text, sizeof(text));
    assert_null(strstr(text, "value_from"));
    addon_replacements_unref(r);
}

/* A reload reads the source again: the file's new content replaces the old one. */
static void test_replacements_from_reread(void **state)
{
    (void)state;
    write_file("changing", SECRET_MARK "_one\n", strlen(SECRET_MARK "_one\n"));
    addon_replacements_t *r1, *r2;
    char err[512] = "";
    assert_int_equal(load(DOC("{\"file\": \"@D/changing\"}"), &r1, err, sizeof(err)), 0);
    write_file("changing", SECRET_MARK "_two\n", strlen(SECRET_MARK "_two\n"));
    assert_int_equal(load(DOC("{\"file\": \"@D/changing\"}"), &r2, err, sizeof(err)), 0);
    assert_string_equal(addon_replacements_value(r1, 0).base, SECRET_MARK "_one");
    assert_string_equal(addon_replacements_value(r2, 0).base, SECRET_MARK "_two");
    addon_replacements_unref(r1);
    addon_replacements_unref(r2);
}

/* ---- failures ----------------------------------------------------------------------------- */

typedef struct err_case {
    const char *name;
    const char *doc;
    int rc;
    const char *err; /* the exact message, "@D" expanded */
} err_case_t;

#define SM_SHAPE                                                                                   \
    "{\"secret_id\": \"prod/github\", \"region\": \"eu-west-1\", \"json_key\": \"token\", "        \
    "\"refresh_seconds\": 900}"

static const err_case_t err_cases[] = {
    /* the entry */
    {"both value and value_from",
     "{\n  \"s\": {\n    \"value\": \"" SECRET_MARK "\",\n    \"value_from\": {\"env\": "
     "\"AIRLOCK_T_TOKEN\"},\n    \"scopes\": [],\n    \"headers\": [\"X\"]\n  }\n}",
     PX_ECONFIG, "t.json:4:5: entry[0]: 'value' and 'value_from' both given (give one of them)"},
    {"neither value nor value_from", "{\n  \"s\": {\"scopes\": [], \"headers\": [\"X\"]}\n}",
     PX_ECONFIG, "t.json:2:8: entry[0]: missing required key 'value' (or 'value_from')"},
    {"value_from on an aws-sigv4 entry",
     "{\n  \"AKIAS\": {\n    \"type\": \"aws-sigv4\",\n    \"value_from\": {\"env\": \"X\"}\n  "
     "}\n}",
     PX_ECONFIG,
     "t.json:4:5: entry[0]: unknown key (expected type, access_key_id, secret_access_key, "
     "session_token, surrogate_session_token, scopes or allow_plain_http)"},
    /* value_from itself */
    {"not a mapping", DOC("\"AIRLOCK_T_TOKEN\""), PX_ECONFIG,
     "t.json:3:19: entry[0].value_from: expected a mapping, got a string"},
    {"no source", DOC("{}"), PX_ECONFIG,
     "t.json:3:19: entry[0].value_from: give exactly one source (env, file, "
     "aws_secrets_manager or aws_ssm), got 0"},
    {"two sources", DOC("{\"env\": \"AIRLOCK_T_TOKEN\", \"file\": \"@D/tok\"}"), PX_ECONFIG,
     "t.json:3:19: entry[0].value_from: give exactly one source (env, file, "
     "aws_secrets_manager or aws_ssm), got 2"},
    {"unknown source (not quoted)", DOC("{\"" SECRET_MARK "\": \"x\"}"), PX_ECONFIG,
     "t.json:3:20: entry[0].value_from: unknown key (expected env, file, aws_secrets_manager or "
     "aws_ssm)"},
    /* env */
    {"env: not a string", DOC("{\"env\": 12}"), PX_ECONFIG,
     "t.json:3:27: entry[0].value_from.env: expected a string, got an integer"},
    {"env: not a name (not quoted)", DOC("{\"env\": \"" SECRET_MARK "=x\"}"), PX_ECONFIG,
     "t.json:3:27: entry[0].value_from.env: not an environment variable name (letters, digits "
     "and '_', not starting with a digit, at most 255 bytes)"},
    {"env: empty name", DOC("{\"env\": \"\"}"), PX_ECONFIG,
     "t.json:3:27: entry[0].value_from.env: not an environment variable name (letters, digits "
     "and '_', not starting with a digit, at most 255 bytes)"},
    {"env: unset", DOC("{\"env\": \"AIRLOCK_T_UNSET\"}"), PX_ECONFIG,
     "t.json:3:27: entry[0].value_from.env: AIRLOCK_T_UNSET is not set in airlock's environment"},
    {"env: empty", DOC("{\"env\": \"AIRLOCK_T_EMPTY\"}"), PX_ECONFIG,
     "t.json:3:27: entry[0].value_from.env: AIRLOCK_T_EMPTY is empty"},
    {"env: CR LF in the value", DOC("{\"env\": \"AIRLOCK_T_NL\"}"), PX_ECONFIG,
     "t.json:3:27: entry[0].value_from.env: the value of AIRLOCK_T_NL contains a control "
     "character (a header value cannot carry CR, LF or NUL)"},
    {"env: over the cap", DOC("{\"env\": \"AIRLOCK_T_LONG\"}"), PX_ETOOBIG,
     "t.json:3:27: entry[0].value_from.env: the value of AIRLOCK_T_LONG is longer than 8192 "
     "bytes"},
    /* file */
    {"file: not a string", DOC("{\"file\": [\"@D/tok\"]}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: expected a string, got a sequence"},
    {"file: relative", DOC("{\"file\": \"secrets/x\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: not an absolute path"},
    {"file: control character in the path", DOC("{\"file\": \"/run/a\\nb\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: the path contains a control character"},
    {"file: missing (not PX_ENOENT: that means no replacements file)",
     DOC("{\"file\": \"@D/nope\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: cannot open @D/nope: No such file or directory"},
    /* skipped as root, which reads a mode-000 file */
    {"file: unreadable", DOC("{\"file\": \"@D/noperm\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: cannot open @D/noperm: Permission denied"},
    {"file: a directory", DOC("{\"file\": \"@D/dir\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: @D/dir is not a regular file"},
    {"file: a FIFO (never blocks)", DOC("{\"file\": \"@D/fifo\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: @D/fifo is not a regular file"},
    {"file: a device (refused before it is opened)", DOC("{\"file\": \"/dev/null\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: /dev/null is not a regular file"},
    {"file: over the size cap", DOC("{\"file\": \"@D/big\"}"), PX_ETOOBIG,
     "t.json:3:28: entry[0].value_from.file: @D/big is larger than 8194 bytes"},
    {"file: value over the cap", DOC("{\"file\": \"@D/long\"}"), PX_ETOOBIG,
     "t.json:3:28: entry[0].value_from.file: the content of @D/long is longer than 8192 bytes "
     "(one trailing newline is not counted)"},
    {"file: empty", DOC("{\"file\": \"@D/empty\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: @D/empty is empty"},
    {"file: only a newline", DOC("{\"file\": \"@D/nl\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: @D/nl is empty"},
    {"file: two trailing newlines", DOC("{\"file\": \"@D/two\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: the content of @D/two contains a control character "
     "(one trailing newline is stripped; a header value cannot carry CR, LF or NUL)"},
    {"file: a newline inside", DOC("{\"file\": \"@D/inner\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: the content of @D/inner contains a control character "
     "(one trailing newline is stripped; a header value cannot carry CR, LF or NUL)"},
    {"file: a NUL inside", DOC("{\"file\": \"@D/nul\"}"), PX_ECONFIG,
     "t.json:3:28: entry[0].value_from.file: the content of @D/nul contains a control character "
     "(one trailing newline is stripped; a header value cannot carry CR, LF or NUL)"},
    /* aws_secrets_manager: the shape is checked, then the value is asked of the proxy's store
     * of fetched values, which this test has not registered (test_awssecret.c does) */
    {"secrets manager: no store", DOC("{\"aws_secrets_manager\": " SM_SHAPE "}"), PX_ECONFIG,
     "t.json:3:20: entry[0].value_from.aws_secrets_manager: cannot fetch prod/github: only "
     "`airlock run` without --sandboxes fetches from AWS"},
    {"secrets manager: minimal shape", DOC("{\"aws_secrets_manager\": {\"secret_id\": \"x\"}}"),
     PX_ECONFIG,
     "t.json:3:20: entry[0].value_from.aws_secrets_manager: cannot fetch x: only `airlock run` "
     "without --sandboxes fetches from AWS"},
    {"secrets manager: not a mapping", DOC("{\"aws_secrets_manager\": \"prod/github\"}"),
     PX_ECONFIG,
     "t.json:3:43: entry[0].value_from.aws_secrets_manager: expected a mapping, got a string"},
    {"secrets manager: no secret_id", DOC("{\"aws_secrets_manager\": {\"region\": \"eu-west-1\"}}"),
     PX_ECONFIG,
     "t.json:3:43: entry[0].value_from.aws_secrets_manager: missing required key 'secret_id'"},
    {"secrets manager: empty secret_id", DOC("{\"aws_secrets_manager\": {\"secret_id\": \"\"}}"),
     PX_ECONFIG, "t.json:3:57: entry[0].value_from.aws_secrets_manager.secret_id: empty string"},
    {"secrets manager: unknown key (not quoted)",
     DOC("{\"aws_secrets_manager\": {\"secret_id\": \"x\", \"" SECRET_MARK "\": 1}}"), PX_ECONFIG,
     "t.json:3:62: entry[0].value_from.aws_secrets_manager: unknown key (expected secret_id, "
     "region, json_key or refresh_seconds)"},
    {"secrets manager: bad region",
     DOC("{\"aws_secrets_manager\": {\"secret_id\": \"x\", \"region\": \"EU West\"}}"), PX_ECONFIG,
     "t.json:3:72: entry[0].value_from.aws_secrets_manager.region: not a region name (a-z, 0-9 "
     "and '-', at most 32 bytes)"},
    {"secrets manager: json_key not a string",
     DOC("{\"aws_secrets_manager\": {\"secret_id\": \"x\", \"json_key\": 3}}"), PX_ECONFIG,
     "t.json:3:74: entry[0].value_from.aws_secrets_manager.json_key: expected a string, got an "
     "integer"},
    {"secrets manager: refresh too often",
     DOC("{\"aws_secrets_manager\": {\"secret_id\": \"x\", \"refresh_seconds\": 5}}"), PX_ECONFIG,
     "t.json:3:81: entry[0].value_from.aws_secrets_manager.refresh_seconds: must be between 60 "
     "and 86400, got 5"},
    /* aws_ssm */
    {"ssm: no store", DOC("{\"aws_ssm\": {\"name\": \"/prod/token\", \"with_decryption\": true}}"),
     PX_ECONFIG,
     "t.json:3:20: entry[0].value_from.aws_ssm: cannot fetch /prod/token: only `airlock run` "
     "without --sandboxes fetches from AWS"},
    {"ssm: no name", DOC("{\"aws_ssm\": {\"with_decryption\": true}}"), PX_ECONFIG,
     "t.json:3:31: entry[0].value_from.aws_ssm: missing required key 'name'"},
    {"ssm: with_decryption not a boolean",
     DOC("{\"aws_ssm\": {\"name\": \"/p\", \"with_decryption\": \"yes\"}}"), PX_ECONFIG,
     "t.json:3:65: entry[0].value_from.aws_ssm.with_decryption: expected a boolean, got a string"},
    {"ssm: unknown key", DOC("{\"aws_ssm\": {\"name\": \"/p\", \"json_key\": \"a\"}}"), PX_ECONFIG,
     "t.json:3:46: entry[0].value_from.aws_ssm: unknown key (expected name, with_decryption, "
     "region or refresh_seconds)"},
};

static void test_replacements_from_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
        const err_case_t *c = &err_cases[i];
        if (strstr(c->doc, "noperm") != NULL && geteuid() == 0)
            continue;
        addon_replacements_t *r;
        char err[512] = "";
        char want[1024];
        expand(c->err, want, sizeof(want));
        int rc = load(c->doc, &r, err, sizeof(err));
        if (rc != c->rc || strcmp(err, want) != 0)
            fail_msg("case '%s': rc %d (want %d)\n  got  '%s'\n  want '%s'", c->name, rc, c->rc,
                     err, want);
        assert_null(r);
        if (strstr(err, SECRET_MARK) != NULL)
            fail_msg("case '%s': the message holds a real value: %s", c->name, err);
    }
}

/* load_file: a value_from failure is a configuration error, never PX_ENOENT (which the proxy
 * reads as "no replacements file": masking off). */
static void test_replacements_from_load_file(void **state)
{
    (void)state;
    char doc[1024], path[512], err[512];
    expand(DOC("{\"file\": \"@D/nope\"}"), doc, sizeof(doc));
    write_file("changing", doc, strlen(doc));
    snprintf(path, sizeof(path), "%s/changing", g_dir);
    addon_replacements_t *r = NULL;
    assert_int_equal(addon_replacements_load_file(path, &r, err, sizeof(err)), PX_ECONFIG);
    assert_null(r);
    char want[1024];
    expand("@D/changing:3:28: entry[0].value_from.file: cannot open @D/nope: No such file or "
           "directory",
           want, sizeof(want));
    assert_string_equal(err, want);
    expand(DOC("{\"env\": \"AIRLOCK_T_TOKEN\"}"), doc, sizeof(doc));
    write_file("changing", doc, strlen(doc));
    assert_int_equal(addon_replacements_load_file(path, &r, err, sizeof(err)), 0);
    assert_string_equal(addon_replacements_value(r, 0).base, SECRET_MARK "_env");
    addon_replacements_unref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replacements_from_sources),
        cmocka_unit_test(test_replacements_from_reread),
        cmocka_unit_test(test_replacements_from_errors),
        cmocka_unit_test(test_replacements_from_load_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
