/* The GraphQL operation allowlist (addons/addon_graphql.c) and the graphql block of the
 * allowlist: the reference's catalogue rows L12 and L13, §3.2's graphql_operation_blocked
 * details, §11.4's fail-secure cases, and the deliberate differences of docs/graphql.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_gqlreq.h"
#include "addons/addon_graphql.h"
#include "addons/addon_policy.h"
#include "base/px_err.h"

#define DATA_DIR AIRLOCK_TEST_DIR "/addons/data/"

static const char *const allow_yaml = "url_prefixes:\n"
                                      "  - host: api.github.com\n"
                                      "    path: /graphql\n"
                                      "    methods: [POST]\n"
                                      "    graphql:\n"
                                      "      queries: [viewer, \"repository*\", \"[rn]ode\"]\n"
                                      "      mutations: [addComment, \"add*Reaction\"]\n"
                                      "  - host: api.github.com\n"
                                      "    path: /graphql2\n"
                                      "    graphql: {}\n"
                                      "  - host: api.github.com\n"
                                      "    path: /repos/*\n";

typedef struct gq_case {
    const char *method;
    const char *path;
    const char *body;   /* NULL: over the cap (data NULL) */
    int rc;             /* ADDON_NEXT or ADDON_ANSWER */
    const char *detail; /* when answered */
    const char *annot;  /* the access-line annotations after the call */
} gq_case_t;

#define Q(s) "{\"query\": \"" s "\"}"

static const gq_case_t cases[] = {
    /* L12: allowed, tagged */
    {"POST", "/graphql", Q("{ viewer { login } }"), ADDON_NEXT, NULL,
     " [graphql-op: query/viewer]"},
    {"POST", "/graphql",
     Q("query Q($o: String!) { repository(owner: $o, name: \\\"r\\\") { id } }"), ADDON_NEXT, NULL,
     " [graphql-op: query/repository]"},
    /* L13: a mutation not listed */
    {"POST", "/graphql", Q("mutation { deleteRepository(input: {}) { clientMutationId } }"),
     ADDON_ANSWER, "deleteRepository", " [graphql-op: mutation/deleteRepository]"},
    /* every top-level field must match; the first that does not is named */
    {"POST", "/graphql", Q("{ viewer { login } rateLimit { cost } }"), ADDON_ANSWER, "rateLimit",
     " [graphql-op: query/rateLimit]"},
    /* aliases do not hide the field */
    {"POST", "/graphql", Q("{ viewer: organization(login: \\\"x\\\") { id } }"), ADDON_ANSWER,
     "organization", " [graphql-op: query/organization]"},
    /* fnmatch: globs and classes, case-sensitive */
    {"POST", "/graphql", Q("{ node(id: 1) { id } }"), ADDON_NEXT, NULL,
     " [graphql-op: query/node]"},
    {"POST", "/graphql", Q("{ Viewer { login } }"), ADDON_ANSWER, "Viewer",
     " [graphql-op: query/Viewer]"},
    {"POST", "/graphql", Q("mutation { addPullRequestReviewReaction { id } }"), ADDON_NEXT, NULL,
     " [graphql-op: mutation/addPullRequestReviewReaction]"},
    /* a type with no patterns: default deny */
    {"POST", "/graphql", Q("subscription { issues { id } }"), ADDON_ANSWER,
     "subscription:<blocked>", " [graphql-op: subscription/issues]"},
    {"POST", "/graphql2", Q("{ viewer { login } }"), ADDON_ANSWER, "query:<blocked>",
     " [graphql-op: query/viewer]"},
    /* inline fragments at the root are resolved two levels deep */
    {"POST", "/graphql", Q("{ ... on Query { viewer { id } ... { node(id: 1) { id } } } }"),
     ADDON_NEXT, NULL, " [graphql-op: query/viewer]"},
    {"POST", "/graphql", Q("{ ... on Query { ... { rateLimit { cost } } } }"), ADDON_ANSWER,
     "rateLimit", " [graphql-op: query/rateLimit]"},
    /* fail-secure: fragment spreads at the root, deeper inline nesting */
    {"POST", "/graphql", Q("{ ...F } fragment F on Query { viewer { id } }"), ADDON_ANSWER,
     "<fragment-spread>", ""},
    {"POST", "/graphql", Q("{ ... { ...F } } fragment F on Query { viewer { id } }"), ADDON_ANSWER,
     "<fragment-spread>", ""},
    {"POST", "/graphql", Q("{ ... { ... { ... { viewer { id } } } } }"), ADDON_ANSWER,
     "<fragment-spread>", ""},
    /* ... but a spread below a top-level field is fine */
    {"POST", "/graphql", Q("{ viewer { ...U } } fragment U on User { login }"), ADDON_NEXT, NULL,
     " [graphql-op: query/viewer]"},
    /* batched, unparseable */
    {"POST", "/graphql", "[" Q("{ viewer { login } }") "]", ADDON_ANSWER, "<batched>", ""},
    {"POST", "/graphql", "{\"query\": ", ADDON_ANSWER, "<unparseable>", ""},
    {"POST", "/graphql", "", ADDON_ANSWER, "<unparseable>", ""},
    {"POST", "/graphql", "\"{ viewer { login } }\"", ADDON_ANSWER, "<unparseable>", ""},
    {"POST", "/graphql", "{\"query\": 1}", ADDON_ANSWER, "<unparseable>", ""},
    {"POST", "/graphql", "{\"variables\": {}}", ADDON_ANSWER, "<unparseable>", ""},
    {"POST", "/graphql", Q("{ viewer { login }"), ADDON_ANSWER, "<unparseable>", ""},
    {"POST", "/graphql", Q("fragment F on Query { viewer { id } }"), ADDON_ANSWER, "<unparseable>",
     ""},
    {"POST", "/graphql", Q("type Query { viewer: User } { viewer { id } }"), ADDON_ANSWER,
     "<unparseable>", ""},
    /* several operations: operationName picks the executing one */
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } query B { node(id: 1) { id } }\"}", ADDON_ANSWER,
     "<operation-name-invalid>", ""},
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } query B { node(id: 1) { id } }\", "
     "\"operationName\": \"B\"}",
     ADDON_NEXT, NULL, " [graphql-op: query/node]"},
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } query A { node(id: 1) { id } }\", "
     "\"operationName\": \"A\"}",
     ADDON_ANSWER, "<operation-name-invalid>", ""},
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } query B { viewer { id } }\", \"operationName\": "
     "\"C\"}",
     ADDON_ANSWER, "<operation-name-invalid>", ""},
    /* deliberate difference: the operations that do not execute are checked too */
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } mutation B { deleteRepository { id } }\", "
     "\"operationName\": \"A\"}",
     ADDON_ANSWER, "deleteRepository",
     " [graphql-op: query/viewer] [graphql-op: mutation/deleteRepository]"},
    /* over the cap */
    {"POST", "/graphql", NULL, ADDON_ANSWER, "<too-large>", ""},
    /* a key twice: the filter read the last, an upstream keeping the first ran the other */
    {"POST", "/graphql",
     "{\"query\": \"mutation { deleteRepository { id } }\", \"query\": \"{ viewer { id } }\"}",
     ADDON_ANSWER, "<duplicate-key>", ""},
    {"POST", "/graphql",
     "{\"\\u0071uery\": \"mutation { deleteRepository { id } }\", \"query\": \"{ viewer { id } "
     "}\"}",
     ADDON_ANSWER, "<duplicate-key>", ""},
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } query B { node(id: 1) { id } }\", "
     "\"operationName\": \"A\", \"operationName\": \"B\"}",
     ADDON_ANSWER, "<duplicate-key>", ""},
    {"POST", "/graphql",
     "{\"query\": \"{ viewer { id } }\", \"variables\": {\"a\": [{\"b\": 1, \"b\": 2}]}}",
     ADDON_ANSWER, "<duplicate-key>", ""},
    {"POST", "/graphql", "[{\"query\": \"{ viewer { id } }\", \"query\": \"{ viewer { id } }\"}]",
     ADDON_ANSWER, "<duplicate-key>", ""},
    /* another spelling a server folding case would read as query or operationName */
    {"POST", "/graphql",
     "{\"query\": \"{ viewer { id } }\", \"Query\": \"mutation { deleteRepository { id } }\"}",
     ADDON_ANSWER, "<ambiguous-key>", ""},
    {"POST", "/graphql",
     "{\"query\": \"query A { viewer { id } } query B { node(id: 1) { id } }\", "
     "\"operationName\": \"A\", \"OPERATIONNAME\": \"B\"}",
     ADDON_ANSWER, "<ambiguous-key>", ""},
    {"POST", "/graphql",
     "{\"query\": \"{ viewer { id } }\", \"queryX\": 1, \"variables\": "
     "{\"Query\": 1}}",
     ADDON_NEXT, NULL, " [graphql-op: query/viewer]"},
    /* nesting past the cap */
    {"POST", "/graphql",
     "{\"query\": \"{ viewer { id } }\", \"variables\": {\"a\": "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
     ADDON_ANSWER, "<too-deep>", ""},
    /* any method of the entry: a GET with no body is unparseable */
    {"GET", "/graphql2", "", ADDON_ANSWER, "<unparseable>", ""},
};

static addon_policy_t *gq_policy(void)
{
    char err[512];
    addon_policy_t *p = NULL;
    int rc =
        addon_policy_load_buffer("al.yaml", allow_yaml, strlen(allow_yaml), &p, err, sizeof(err));
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    return p;
}

static void gq_req(addon_req_t *r, const addon_config_t *cfg, const char *method, const char *path)
{
    addon_req_reset(r);
    r->method = (addon_str_t){method, strlen(method)};
    r->host = (addon_str_t){"api.github.com", 14};
    r->path = (addon_str_t){path, strlen(path)};
    r->target = r->path;
    r->port = 443;
    r->tls = 1;
    r->config = cfg;
    r->url = "https://api.github.com/graphql";
}

static int gq_sink(void *data, const char *buf, size_t len)
{
    (void)data;
    (void)buf;
    (void)len;
    return PX_ESTATE; /* the GraphQL filter never rewrites */
}

static void test_graphql_catalogue(void **state)
{
    (void)state;
    addon_policy_t *p = gq_policy();
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_graphql();
    addon_req_t *r = calloc(1, sizeof(*r));
    addon_sink_t sink = {gq_sink, NULL};
    int failures = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const gq_case_t *c = &cases[i];
        gq_req(r, &cfg, c->method, c->path);
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        assert_int_equal(a->on_request_head(a, r, &ans), ADDON_NEXT);
        assert_int_equal(r->filter_cap, ADDON_GRAPHQL_BODY_CAP);
        size_t len = c->body != NULL ? strlen(c->body) : ADDON_GRAPHQL_BODY_CAP + 1;
        int rc = a->on_request_body_filter(a, r, c->body, len, &sink, &ans);
        int ok = rc == c->rc && strcmp(r->annot, c->annot) == 0;
        if (ok && rc == ADDON_ANSWER)
            ok = ans.status == 403 && strcmp(ans.error, "graphql_operation_blocked") == 0 &&
                 ans.with_detail && strcmp(ans.detail, c->detail) == 0 &&
                 strncmp(ans.message, "GraphQL operation '", 19) == 0 &&
                 strstr(ans.message, c->detail) != NULL && strcmp(ans.verdict, "BLOCKED") == 0;
        if (!ok) {
            print_error("case %zu (%s): rc %d detail [%s] annot [%s]\n", i,
                        c->body ? c->body : "(over)", rc, rc == ADDON_ANSWER ? ans.detail : "",
                        r->annot);
            failures++;
        }
    }
    addon_req_reset(r);
    free(r);
    addon_policy_unref(p);
    assert_int_equal(failures, 0);
}

/* Entries without a graphql block and other hosts are left alone; a Content-Encoding cannot
 * be read and is refused. */
static void test_graphql_scope(void **state)
{
    (void)state;
    addon_policy_t *p = gq_policy();
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_graphql();
    addon_req_t *r = calloc(1, sizeof(*r));
    addon_sink_t sink = {gq_sink, NULL};
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    gq_req(r, &cfg, "POST", "/repos/o/r");
    assert_int_equal(a->on_request_head(a, r, &ans), ADDON_NEXT);
    assert_int_equal(r->filter_cap, 0);
    assert_int_equal(a->on_request_body_filter(a, r, "x", 1, &sink, &ans), ADDON_NEXT);

    gq_req(r, &cfg, "POST", "/graphql");
    assert_int_equal(addon_req_add_header(r, "Content-Encoding", 16, "gzip", 4), 0);
    const char *body = Q("{ viewer { login } }");
    assert_int_equal(a->on_request_body_filter(a, r, body, strlen(body), &sink, &ans),
                     ADDON_ANSWER);
    assert_string_equal(ans.detail, "<content-encoding>");
    addon_req_reset(r);
    free(r);
    addon_policy_unref(p);
}

/* Parameter names a GraphQL server could read as query, operationName, variables or
 * extensions, however the URL spells them. */
static const struct {
    const char *name;
    int is;
} param_names[] = {
    {"query", 1},
    {"QUERY", 1},
    {"Query", 1},
    {"%71uery", 1},
    {"qu%65ry", 1},
    {"qu%45RY", 1},
    {"%u0071uery", 1},
    {"%U0071uery", 1},
    {"query%5B%5D", 1},
    {"query[]", 1},
    {"query[0]", 1},
    {"query%5ba%5d", 1},
    {"query.a", 1},
    {"query%2Ea", 1},
    {"query%00x", 1},
    {"+query+", 1},
    {"%20query%09", 1},
    {"query++++++++++++++++++++++++++++++++++++++++++++", 1},
    {"operationName", 1},
    {"operationname", 1},
    {"OPERATIONNAME", 1},
    {"operat%C4%B1onName", 1}, /* U+0131 dotless i: upper case I */
    {"operat%u0131onName", 1},
    {"variables", 1},
    {"variable%C5%BF", 1}, /* U+017F long s: upper case S */
    {"Variables[x]", 1},
    {"extensions", 1},
    {"EXTENSIONS", 1},
    {"", 0},
    {"q", 0},
    {"quer", 0},
    {"querys", 0},
    {"query_", 0},
    {"_query", 0},
    {"qu ery", 0},
    {"qu%ery", 0},
    {"qu%2", 0},
    {"%", 0},
    {"%u00", 0},
    {"operation", 0},
    {"operationNames", 0},
    {"variable", 0},
    {"extension", 0},
    {"search", 0},
    {"operat%C4%B0onName", 0}, /* U+0130: lower case is i + a combining dot */
    {"                                                query", 1},
    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxquery", 0},
};

static const struct {
    const char *path;
    int is;
} url_params[] = {
    {"/gql?query=mutation%7Bx%7D", 1},
    {"/gql?a=1&query=x", 1},
    {"/gql?a=1;query=x", 1},
    {"/gql?a=1&&QUERY", 1},
    {"/gql?operationName=B", 1},
    {"/gql?variables=%7B%7D", 1},
    {"/gql?extensions=x", 1},
    {"/gql?%71uery=x", 1},
    {"/gql?query", 1},
    {"/gql?=query", 0},
    {"/gql?foo=query&bar=operationName", 0},
    {"/gql?queryx=1", 0},
    {"/gql", 0},
    {"/gql?", 0},
    {"/query?x=1", 0},
};

/* ?query= and its kin in the URL: refused on an entry with a graphql block, at the head. */
static void test_graphql_url_params(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(param_names) / sizeof(param_names[0]); i++) {
        const char *n = param_names[i].name;
        if (addon_gqlreq_param_name(n, strlen(n)) != param_names[i].is) {
            print_error("param name [%s]: expected %d\n", n, param_names[i].is);
            failures++;
        }
    }
    for (size_t i = 0; i < sizeof(url_params) / sizeof(url_params[0]); i++) {
        addon_str_t t = {url_params[i].path, strlen(url_params[i].path)};
        if (addon_gqlreq_url_params(t, NULL) != url_params[i].is) {
            print_error("url [%s]: expected %d\n", url_params[i].path, url_params[i].is);
            failures++;
        }
    }
    assert_int_equal(failures, 0);

    static const char yaml[] = "url_prefixes:\n"
                               "  - host: api.github.com\n"
                               "    path: /graphql*\n"
                               "    graphql:\n"
                               "      queries: [viewer]\n"
                               "  - host: api.github.com\n"
                               "    path: /rest*\n";
    char err[512];
    addon_policy_t *p = NULL;
    assert_int_equal(addon_policy_load_buffer("al.yaml", yaml, strlen(yaml), &p, err, sizeof(err)),
                     0);
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_graphql();
    addon_req_t *r = calloc(1, sizeof(*r));
    addon_sink_t sink = {gq_sink, NULL};
    static const struct {
        const char *path;
        int rc;
    } heads[] = {
        {"/graphql?query=mutation%7BdeleteRepository%7Bid%7D%7D", ADDON_ANSWER},
        {"/graphql?x=1&Query%5B%5D=mutation", ADDON_ANSWER},
        {"/graphql?operationName=B", ADDON_ANSWER},
        {"/graphql/?variables=%7B%7D", ADDON_ANSWER},
        {"/graphql?extensions=%7B%7D", ADDON_ANSWER},
        {"/graphql?x=1", ADDON_NEXT},
        {"/graphql", ADDON_NEXT},
        {"/rest?query=x", ADDON_NEXT}, /* no graphql block: not this filter's */
    };
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        gq_req(r, &cfg, "POST", heads[i].path);
        int rc = a->on_request_head(a, r, &ans);
        if (rc != heads[i].rc)
            fail_msg("%s: rc %d, expected %d", heads[i].path, rc, heads[i].rc);
        if (rc == ADDON_ANSWER) {
            assert_int_equal(ans.status, 403);
            assert_string_equal(ans.error, "graphql_operation_blocked");
            assert_true(ans.with_detail);
            assert_string_equal(ans.detail, "<query-params>");
            assert_non_null(strstr(ans.message, "URL query parameters"));
            assert_string_equal(r->annot, " [graphql-op: query-params]");
        }
    }
    /* the body of an allowed head is still checked */
    gq_req(r, &cfg, "POST", "/graphql?x=1");
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    assert_int_equal(a->on_request_head(a, r, &ans), ADDON_NEXT);
    const char *body = Q("{ viewer { login } }");
    assert_int_equal(a->on_request_body_filter(a, r, body, strlen(body), &sink, &ans), ADDON_NEXT);
    addon_req_reset(r);
    free(r);
    addon_policy_unref(p);
}

/* The block is stored on its entry and the decision exposes it (A4/A16 with a graphql block). */
static void test_graphql_policy_block(void **state)
{
    (void)state;
    addon_policy_t *p = gq_policy();
    addon_policy_query_t q = {.method = {"POST", 4},
                              .host = {"API.github.com", 14},
                              .path = {"/%67raphql", 10},
                              .port = 443,
                              .tls = 1};
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    assert_true(d.allowed);
    assert_non_null(d.graphql);
    assert_ptr_equal(d.graphql, addon_policy_graphql(p, 0));
    assert_int_equal(d.graphql->nqueries, 3);
    assert_int_equal(d.graphql->nmutations, 2);
    assert_int_equal(d.graphql->nsubscriptions, 0);
    assert_memory_equal(d.graphql->queries[1].base, "repository*", 11);
    assert_non_null(addon_policy_graphql(p, 1));
    assert_int_equal(addon_policy_graphql(p, 1)->nqueries, 0);
    assert_null(addon_policy_graphql(p, 2));
    assert_null(addon_policy_graphql(p, 3));
    q.path = (addon_str_t){"/graphql/", 9};
    addon_policy_decide(p, &q, &d);
    assert_false(d.allowed);
    assert_null(d.graphql);

    /* airlock check and --print-effective show it, and the effective text loads back */
    char buf[4096];
    addon_policy_describe(p, buf, sizeof(buf));
    assert_non_null(strstr(buf, ", graphql queries viewer,repository*,[rn]ode mutations "
                                "addComment,add*Reaction subscriptions none"));
    addon_policy_print_effective(p, buf, sizeof(buf));
    assert_non_null(strstr(buf, "    graphql:\n      queries: [\"viewer\", \"repository*\", "));
    addon_policy_t *back = NULL;
    char err[512];
    int rc = addon_policy_load_buffer("eff.yaml", buf, strlen(buf), &back, err, sizeof(err));
    if (rc != 0)
        print_error("%s\n%s\n", err, buf);
    assert_int_equal(rc, 0);
    assert_int_equal(addon_policy_graphql(back, 0)->nmutations, 2);
    assert_int_equal(addon_policy_graphql(back, 1)->nqueries, 0);
    addon_policy_unref(back);
    addon_policy_unref(p);
}

/* Files written for the reference load unchanged: its YAML, and the JSON its host emits
 * (graphql with its three lists, [] when absent; graphql: null is no block). */
static void test_graphql_reference_files(void **state)
{
    (void)state;
    char err[512];
    addon_policy_t *p = NULL;
    assert_int_equal(addon_policy_load_file(DATA_DIR "graphql.yaml", &p, err, sizeof(err)), 0);
    assert_int_equal(addon_policy_graphql(p, 0)->nqueries, 1);
    addon_policy_unref(p);
    static const char json[] =
        "{\"domains\": [], \"url_prefixes\": [{\"host\": \"api.github.com\", \"path\": "
        "\"/graphql\", \"methods\": [\"POST\"], \"graphql\": {\"queries\": [\"viewer\"], "
        "\"mutations\": [], \"subscriptions\": []}}, {\"host\": \"x.com\", \"path\": \"\", "
        "\"methods\": [], \"graphql\": null}]}";
    p = NULL;
    int rc = addon_policy_load_buffer("al.json", json, strlen(json), &p, err, sizeof(err));
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(addon_policy_graphql(p, 0)->nqueries, 1);
    assert_int_equal(addon_policy_graphql(p, 0)->nmutations, 0);
    assert_null(addon_policy_graphql(p, 1));
    addon_policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graphql_catalogue),       cmocka_unit_test(test_graphql_scope),
        cmocka_unit_test(test_graphql_url_params),      cmocka_unit_test(test_graphql_policy_block),
        cmocka_unit_test(test_graphql_reference_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
