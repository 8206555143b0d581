/* The canonical request (addons/addon.h): the view's derived parts are made once after parsing
 * (addon_req_view), and every feature reads them: the normalized host, the path's readings, and
 * the allowlist's decision. Made or not, the accessors answer the same (the unmade view derives
 * again), and the readings are exactly base/px_path's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon.h"
#include "addons/addon_allowlist.h"
#include "addons/addon_policy.h"
#include "base/px_path.h"

static void req_init(addon_req_t *r, const char *host, const char *path)
{
    addon_req_reset(r);
    r->method = (addon_str_t){"POST", 4};
    r->host = (addon_str_t){host, strlen(host)};
    r->path = (addon_str_t){path, strlen(path)};
    r->target = r->path;
    r->port = 443;
    r->tls = 1;
}

/* Collects the distinct readings a walk passes, in order, as one "|"-joined string. */
typedef struct walk {
    char out[1024];
    size_t n;
} walk_t;

static int collect(const char *path, size_t len, void *ctx)
{
    walk_t *w = ctx;
    char one[512];
    snprintf(one, sizeof(one), "|%.*s|", (int)len, path);
    char all[1100];
    snprintf(all, sizeof(all), "|%s|", w->out);
    if (strstr(all, one) != NULL)
        return 0; /* listed once (px_path_any may pass a reading twice) */
    int k =
        snprintf(w->out + w->n, sizeof(w->out) - w->n, "%s%.*s", w->n ? "|" : "", (int)len, path);
    if (k > 0)
        w->n += (size_t)k;
    return 0;
}

static const struct {
    const char *path;
    const char *readings; /* the view's, in order ("|"-joined) */
    int borrowed;         /* reading 0 is the raw path part itself (no copy) */
} view_cases[] = {
    {"/v1/messages", "/v1/messages", 1},
    {"/v1/messages?beta=true", "/v1/messages", 1},
    {"/", "/", 1},
    {"/v1//messages", "/v1//messages|/v1/messages", 1},
    {"/v1/./messages", "/v1/./messages|/v1/messages", 1},
    {"/v1;x/messages", "/v1;x/messages|/v1/messages", 1},
    {"/v1%2fmessages", "/v1/messages", 0},
    {"/a%3Bb/./c//d?x=%2F",
     "/a;b/./c//d|/a/./c//d|/a;b/c//d|/a/c//d|/a;b/./c/d|/a/./c/d|/a;b/c/d|/a/c/d", 0},
};

static void test_view_readings(void **state)
{
    (void)state;
    addon_req_t *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    for (size_t i = 0; i < sizeof(view_cases) / sizeof(view_cases[0]); i++) {
        req_init(r, "example.test", view_cases[i].path);
        walk_t before = {0}, made = {0};
        addon_req_path_any(r, collect, &before); /* unmade: derived again */
        assert_int_equal(addon_req_view(r), 0);
        assert_int_equal(r->view, 1);
        addon_req_path_any(r, collect, &made);
        walk_t raw = {0};
        px_path_any(r->path.base, r->path.len, collect, &raw);
        if (strcmp(made.out, view_cases[i].readings) != 0 || strcmp(made.out, raw.out) != 0 ||
            strcmp(before.out, raw.out) != 0)
            fail_msg("%s: view %s, unmade %s, px_path_any %s, want %s", view_cases[i].path,
                     made.out, before.out, raw.out, view_cases[i].readings);
        assert_int_equal(r->readings[0].base == r->path.base, view_cases[i].borrowed);
    }
    addon_req_reset(r);
    free(r);
}

/* A feature path matches the same with and without the view; an over-long path is unreadable
 * and every feature applies (fail-secure), as px_path_under() says. */
static void test_view_under(void **state)
{
    (void)state;
    static const char *const paths[] = {"/v1/messages",  "/V1/Messages.json", "/v1//messages/x",
                                        "/v1/messagesx", "/x/v1/messages",    "/v1%2Fmessages"};
    addon_req_t *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        req_init(r, "api.anthropic.com", paths[i]);
        int unmade = addon_req_path_under(r, "/v1/messages");
        assert_int_equal(addon_req_view(r), 0);
        int made = addon_req_path_under(r, "/v1/messages");
        int want = px_path_under(paths[i], strlen(paths[i]), "/v1/messages");
        if (unmade != want || made != want)
            fail_msg("%s: unmade %d, made %d, want %d", paths[i], unmade, made, want);
    }
    size_t n = PX_PATH_ANY_MAX + 10;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'a', n);
    big[0] = '/';
    big[n] = '\0';
    req_init(r, "api.anthropic.com", big);
    assert_int_equal(addon_req_view(r), 0);
    assert_int_equal(r->nreadings, 0);
    assert_int_equal(addon_req_path_under(r, "/v1/messages"), 1);
    addon_req_reset(r);
    free(big);
    free(r);
}

static void test_view_host(void **state)
{
    (void)state;
    addon_req_t *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    req_init(r, "Api.Anthropic.COM.", "/");
    assert_true(addon_req_host_is(r, "api.anthropic.com")); /* unmade */
    assert_int_equal(addon_req_view(r), 0);
    assert_int_equal(r->host_norm.len, 17);
    assert_memory_equal(r->host_norm.base, "api.anthropic.com", 17);
    assert_true(addon_req_host_is(r, "api.anthropic.com"));
    assert_false(addon_req_host_is(r, "api.anthropic.co"));
    /* the caller's normalized host is kept (the proxy's pre-check made it the same way) */
    req_init(r, "Example.Test", "/");
    r->host_norm = (addon_str_t){"example.test", 12};
    assert_int_equal(addon_req_view(r), 0);
    assert_true(addon_req_host_is(r, "example.test"));
    addon_req_reset(r);
    assert_int_equal(r->view, 0); /* a reset view is unmade */
    free(r);
}

/* The allowlist addon records its decision in the view; the GraphQL filter reads it there
 * instead of deciding again. */
static void test_view_decision(void **state)
{
    (void)state;
    static const char yaml[] = "url_prefixes:\n"
                               "  - host: api.github.com\n"
                               "    path: /graphql\n"
                               "    graphql:\n"
                               "      queries: [viewer]\n"
                               "  - host: api.github.com\n"
                               "    path: /repos/*\n";
    char err[256];
    addon_policy_t *p = NULL;
    assert_int_equal(addon_policy_load_buffer("al.yaml", yaml, strlen(yaml), &p, err, sizeof(err)),
                     0);
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_allowlist();
    addon_req_t *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    addon_answer_t ans;
    static const struct {
        const char *path;
        int allowed, graphql;
    } cases[] = {{"/graphql", 1, 1}, {"/repos/x", 1, 0}, {"/gists", 0, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        req_init(r, "api.github.com", cases[i].path);
        r->config = &cfg;
        r->url = "https://api.github.com/";
        memset(&ans, 0, sizeof(ans));
        assert_int_equal(addon_req_view(r), 0);
        a->on_request_head(a, r, &ans);
        assert_int_equal(r->decided, 1);
        assert_int_equal(r->allowed, cases[i].allowed);
        assert_int_equal(r->graphql != NULL, cases[i].graphql);
    }
    addon_req_reset(r);
    free(r);
    addon_policy_unref(p);
}

/* addon_req_new(): a view as addon_req_reset() leaves one (the header slots and the annotation
 * past its end are not cleared: only nheaders and annot_len say what is there). */
static void test_view_new(void **state)
{
    (void)state;
    for (int round = 0; round < 2; round++) {
        addon_req_t *r = addon_req_new();
        assert_non_null(r);
        assert_int_equal(r->view, 0);
        assert_int_equal(r->decided, 0);
        assert_int_equal(r->allowed, 0);
        assert_int_equal(r->nreadings, 0);
        assert_null(r->host.base);
        assert_int_equal(r->port, 0);
        assert_int_equal(r->nheaders, 0);
        assert_null(r->arena);
        assert_string_equal(r->annot, "");
        assert_int_equal(r->annot_len, 0);
        assert_null(r->log_cb);
        assert_null(r->config);
        assert_null(r->url);
        assert_int_equal(r->body_mode, ADDON_BODY_PASS);
        assert_int_equal(r->body_cap, 0);
        assert_int_equal(r->filter_cap, 0);
        assert_null(r->state);
        assert_null(r->state_owner);
        assert_non_null(addon_req_dup(r, "secret", 6)); /* an arena, freed below */
        memset(r->headers, 0xa5, sizeof(r->headers));   /* the next one may get this memory */
        r->nheaders = 3;
        addon_req_reset(r);
        free(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_readings), cmocka_unit_test(test_view_under),
        cmocka_unit_test(test_view_host),     cmocka_unit_test(test_view_decision),
        cmocka_unit_test(test_view_new),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
