/* The approvals drafts file (proxy/px_drafts.h): its name beside an allowlist, the grant checks,
 * the writer (atomic, mode 0600, IDs, refusing a file it did not write) and the merge into a
 * policy (entries after the allowlist's, with their file:line; a broken file left out). */
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

#include "addons/addon_policy.h"
#include "base/px_err.h"
#include "proxy/px_drafts.h"

static char dir[] = "/tmp/px-drafts-XXXXXX";

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_px_drafts_path_table(void **state)
{
    (void)state;
    static const struct {
        const char *allow, *want;
    } cases[] = {
        {"/etc/airlock/network-allowlist.yaml", "/etc/airlock/network-allowlist.approved.yaml"},
        {"allow.yml", "allow.approved.yaml"},
        {"dir.d/allow", "dir.d/allow.approved.yaml"},
        {"config.toml", "config.approved.yaml"},
        {"/x/.hidden", "/x/.hidden.approved.yaml"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[256];
        assert_int_equal(px_drafts_path(cases[i].allow, buf, sizeof(buf)), 0);
        assert_string_equal(buf, cases[i].want);
    }
    char small[8];
    assert_int_equal(px_drafts_path("allow.yaml", small, sizeof(small)), PX_ETOOBIG);
}

static void test_px_drafts_grant_table(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *methods, *method, *path;
        int rc;
    } cases[] = {
        {NULL, NULL, "GET", "/a", 0},
        {"/a/*", NULL, "GET", "/a/b", 0},
        {"/a", NULL, "GET", "/a?x=1", 0}, /* matched without the query too */
        {"/a/*", "GET,POST", "POST", "/a/b", 0},
        {"/b/*", NULL, "GET", "/a/b", PX_ECONFIG},
        {"a/*", NULL, "GET", "a/b", PX_ECONFIG},
        {"/a b", NULL, "GET", "/a b", PX_ECONFIG},
        {NULL, "POST", "GET", "/a", PX_ECONFIG},
        {NULL, "get", "get", "/a", PX_ECONFIG},
        {NULL, "GET,", "GET", "/a", PX_ECONFIG},
        {NULL, ",GET", "GET", "/a", PX_ECONFIG},
        {NULL, "GET,,POST", "GET", "/a", PX_ECONFIG},
        {NULL, "", "GET", "/a", PX_ECONFIG},
        {NULL, "GETX", "GET", "/a", PX_ECONFIG},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[256] = "";
        int rc = px_drafts_check_grant(cases[i].pattern, cases[i].methods, cases[i].method,
                                       cases[i].path, err, sizeof(err));
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d (%s), expected %d", i, rc, err, cases[i].rc);
    }
}

static void test_px_drafts_add_remove(void **state)
{
    (void)state;
    char path[256], err[512];
    snprintf(path, sizeof(path), "%s/allow.approved.yaml", dir);
    px_draft_t d;
    memset(&d, 0, sizeof(d));
    snprintf(d.who, sizeof(d.who), "uid 7");
    snprintf(d.when, sizeof(d.when), "2026-01-02T03:04:05Z");
    snprintf(d.hold, sizeof(d.hold), "h3");
    snprintf(d.methods, sizeof(d.methods), "GET,POST");
    d.host = "api.test";
    d.path = "/v1/\"q\"*";
    unsigned id = 0;
    assert_int_equal(px_drafts_add(path, &d, &id, err, sizeof(err)), 0);
    assert_int_equal(id, 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    d.path = "";
    snprintf(d.methods, sizeof(d.methods), "%s", "");
    assert_int_equal(px_drafts_add(path, &d, &id, err, sizeof(err)), 0);
    assert_int_equal(id, 2);
    /* what was written reads back the same */
    px_drafts_t set;
    assert_int_equal(px_drafts_read(path, &set, err, sizeof(err)), 0);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.v[0].who, "uid 7");
    assert_string_equal(set.v[0].when, "2026-01-02T03:04:05Z");
    assert_string_equal(set.v[0].hold, "h3");
    assert_string_equal(set.v[0].methods, "GET,POST");
    assert_string_equal(set.v[0].host, "api.test");
    assert_string_equal(set.v[0].path, "/v1/\"q\"*");
    assert_string_equal(set.v[1].path, "");
    assert_string_equal(set.v[1].methods, "");
    px_drafts_free(&set);
    /* and loads as an allowlist merged after the allowlist's own entries */
    char allow[256];
    snprintf(allow, sizeof(allow), "%s/allow.yaml", dir);
    put(allow, "url_prefixes:\n  - host: own.test\n");
    addon_policy_t *p = NULL;
    assert_int_equal(addon_policy_load_file(allow, &p, err, sizeof(err)), 0);
    assert_int_equal(px_drafts_merge(p, allow, err, sizeof(err)), 0);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_URL_PREFIXES), 3);
    char want[300];
    snprintf(want, sizeof(want), "%s:6", path);
    assert_string_equal(addon_policy_entry_src(p, ADDON_POLICY_URL_PREFIXES, 1), want);
    addon_policy_unref(p);
    /* removing: the other entry stays, IDs are not reused */
    px_draft_t gone;
    assert_int_equal(px_drafts_remove(path, 1, &gone, err, sizeof(err)), 0);
    assert_string_equal(gone.host, "api.test");
    free(gone.host);
    free(gone.path);
    assert_int_equal(px_drafts_remove(path, 1, NULL, err, sizeof(err)), PX_ENOENT);
    assert_int_equal(px_drafts_add(path, &d, &id, err, sizeof(err)), 0);
    assert_int_equal(id, 3);
    assert_int_equal(px_drafts_remove(path, 2, NULL, err, sizeof(err)), 0);
    assert_int_equal(px_drafts_remove(path, 3, NULL, err, sizeof(err)), 0);
    assert_int_equal(px_drafts_read(path, &set, err, sizeof(err)), 0);
    assert_int_equal(set.n, 0); /* "url_prefixes: []" */
    /* an entry the file cannot hold is refused and the file is left as it was */
    d.host = "bad host";
    assert_true(px_drafts_add(path, &d, &id, err, sizeof(err)) < 0);
    assert_int_equal(px_drafts_read(path, &set, err, sizeof(err)), 0);
    assert_int_equal(set.n, 0);
    unlink(path);
    unlink(allow);
}

static void test_px_drafts_broken_table(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *read_err; /* px_drafts_read's "file:line" suffix; NULL: reads */
        int merges;           /* px_drafts_merge takes it */
    } cases[] = {
        {"url_prefixes:\n  - host: [\n", ":2", 0},
        {"mode: warn\nurl_prefixes: []\n", ":1", 0},
        {"url_prefixes:\n  # approval a1 by uid 1 at T (hold h1)\n  - host: \"a.test\"\n", NULL, 1},
        {"url_prefixes:\n  # hand-written note\n  - host: \"a.test\"\n", ":2", 1},
        {"block:\n  - host: a.test\n", ":1", 0},
    };
    char path[256], allow[256];
    snprintf(path, sizeof(path), "%s/b.approved.yaml", dir);
    snprintf(allow, sizeof(allow), "%s/b.yaml", dir);
    put(allow, "domains: [own.test]\n");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        put(path, cases[i].text);
        char err[512] = "";
        px_drafts_t set;
        int rc = px_drafts_read(path, &set, err, sizeof(err));
        if (cases[i].read_err == NULL) {
            assert_int_equal(rc, 0);
            px_drafts_free(&set);
        } else {
            assert_int_equal(rc, PX_ECONFIG);
            char want[300];
            snprintf(want, sizeof(want), "%s%s:", path, cases[i].read_err);
            if (strstr(err, want) == NULL)
                fail_msg("case %zu: '%s' does not name %s", i, err, want);
            /* and it is not rewritten */
            assert_true(px_drafts_remove(path, 1, NULL, err, sizeof(err)) < 0);
        }
        addon_policy_t *p = NULL;
        assert_int_equal(addon_policy_load_file(allow, &p, err, sizeof(err)), 0);
        rc = px_drafts_merge(p, allow, err, sizeof(err));
        if (cases[i].merges) {
            assert_int_equal(rc, 0);
        } else {
            assert_true(rc < 0);
            assert_non_null(strstr(err, path));
            /* left unchanged: the allowlist alone */
            assert_int_equal(addon_policy_count(p, ADDON_POLICY_URL_PREFIXES), 0);
            assert_int_equal(addon_policy_count(p, ADDON_POLICY_DOMAINS), 1);
        }
        addon_policy_unref(p);
    }
    unlink(path);
    unlink(allow);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_drafts_path_table),
        cmocka_unit_test(test_px_drafts_grant_table),
        cmocka_unit_test(test_px_drafts_add_remove),
        cmocka_unit_test(test_px_drafts_broken_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
