/* addon_ghscope, addon_ghrepos and the parser's nodes: what addon_gql_parse_nodes keeps (fields,
 * variable definitions, argument values); the repositories of an installation (pages of
 * /installation/repositories, case-insensitive names, sorted lookups); and the repository
 * targets of GraphQL request bodies checked against them, table-driven: repository(owner:,
 * name:) as literals, variables and defaults, owner chains, nameWithOwner, node IDs of both
 * formats in arguments, lists, input objects and variables, the fail-secure refusals, caps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "addons/addon_ghnodeid.h"
#include "addons/addon_ghrepos.h"
#include "addons/addon_ghscope.h"
#include "addons/addon_graphql_parse.h"
#include "base/px_err.h"

/* The installation: octo/hello (id 12345, node R_kgDNMDk) and octo/world (id 300, legacy node
 * MDEwOlJlcG9zaXRvcnkzMDA=). Outside: other/repo (id 999). */
static addon_ghrepos_t *test_repos(void)
{
    addon_ghrepos_t *s = addon_ghrepos_new();
    assert_non_null(s);
    assert_int_equal(addon_ghrepos_add(s, 12345, "R_kgDNMDk", "octo/hello"), 0);
    assert_int_equal(addon_ghrepos_add(s, 300, "MDEwOlJlcG9zaXRvcnkzMDA=", "Octo/World"), 0);
    assert_int_equal(addon_ghrepos_seal(s), 0);
    return s;
}

static void test_ghscope_repos_page(void **state)
{
    (void)state;
    addon_ghrepos_t *s = addon_ghrepos_new();
    const char *page = "{\"total_count\": 3, \"repositories\": ["
                       "{\"id\": 1, \"node_id\": \"R_a\", \"full_name\": \"o/a\", \"x\": {}},"
                       "{\"id\": 2, \"node_id\": \"R_b\", \"full_name\": \"O/B\"}]}";
    size_t got = 0;
    uint64_t total = 0;
    const char *why = NULL;
    assert_int_equal(addon_ghrepos_page(s, page, strlen(page), &got, &total, &why), 0);
    assert_int_equal(got, 2);
    assert_int_equal(total, 3);
    assert_int_equal(addon_ghrepos_count(s), 2);
    assert_true(addon_ghrepos_has_id(s, 2));
    assert_false(addon_ghrepos_has_id(s, 3));
    assert_true(addon_ghrepos_has_node(s, "R_b", 3));
    assert_false(addon_ghrepos_has_node(s, "r_b", 3));
    assert_true(addon_ghrepos_has_name(s, "o", 1, "b", 1));
    assert_true(addon_ghrepos_has_name(s, "O", 1, "A", 1));
    assert_false(addon_ghrepos_has_name(s, "o", 1, "c", 1));
    assert_false(addon_ghrepos_has_name(s, "o/a", 3, "", 0));
    /* sealed: the same answers from the sorted views, and nothing more can be added */
    for (int sealed = 0; sealed < 2; sealed++) {
        for (uint64_t i = 3; i < 300; i++) {
            char node[32], name[32];
            snprintf(node, sizeof(node), "R_n%llu", (unsigned long long)(i * 7919 % 1000));
            snprintf(name, sizeof(name), "Org%llu/Repo%llu", (unsigned long long)(i % 7),
                     (unsigned long long)(i * 31 % 1000));
            if (!sealed)
                assert_int_equal(addon_ghrepos_add(s, i * 7919 % 1000 + 10, node, name), 0);
        }
        if (sealed == 0)
            assert_int_equal(addon_ghrepos_seal(s), 0);
        assert_true(addon_ghrepos_has_id(s, 2));
        assert_true(addon_ghrepos_has_id(s, 3 * 7919 % 1000 + 10));
        assert_false(addon_ghrepos_has_id(s, 5));
        assert_true(addon_ghrepos_has_node(s, "R_b", 3));
        assert_false(addon_ghrepos_has_node(s, "R_n", 3));
        assert_true(addon_ghrepos_has_name(s, "o", 1, "b", 1));
        assert_true(addon_ghrepos_has_name(s, "org3", 4, "REPO93", 6));
        assert_false(addon_ghrepos_has_name(s, "org3", 4, "repo94", 6));
        assert_false(addon_ghrepos_has_name(s, "o\0", 2, "a", 1));
    }
    assert_int_equal(addon_ghrepos_add(s, 9, "R_x", "o/x"), PX_ESTATE);
    static const char *const bad[] = {
        "[]",
        "{\"repositories\": []}",
        "{\"total_count\": 1, \"repositories\": [{\"id\": 1, \"node_id\": \"R_a\"}]}",
        "{\"total_count\": 1, \"repositories\": [{\"id\": \"1\", \"node_id\": \"R\", "
        "\"full_name\": \"o/a\"}]}",
        "{\"total_count\": 1, \"repositories\": [{\"id\": 1, \"node_id\": \"R\", "
        "\"full_name\": \"noslash\"}]}",
        "{\"total_count\": 1, \"total_count\": 2, \"repositories\": []}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(addon_ghrepos_page(s, bad[i], strlen(bad[i]), &got, &total, &why),
                         PX_EPARSE);
    addon_ghrepos_free(s);
}

typedef struct scope_case {
    const char *body;
    int verdict;
    const char *detail; /* a prefix of the detail, or NULL */
} scope_case_t;

#define Q(q) "{\"query\": \"" q "\"}"
#define QV(q, v) "{\"query\": \"" q "\", \"variables\": " v "}"
#define L10 "[[[[[[[[[["
#define R10 "]]]]]]]]]]"

static const scope_case_t scope_cases[] = {
    /* no target */
    {Q("{ viewer { login } }"), ADDON_GHSCOPE_PASS, NULL},
    {Q("query { organization(login: \\\"x\\\") { repositories(first: 5) { nodes { name } } } }"),
     ADDON_GHSCOPE_PASS, NULL},
    {Q("{ node(id: null) { id } }"), ADDON_GHSCOPE_PASS, NULL},
    {QV("mutation($m: String) { addComment(input: {clientMutationId: $m, body: \\\"x\\\", "
        "subjectId: \\\"I_kwDNMDkH\\\"}) { clientMutationId } }",
        "{\"m\": \"anything\"}"),
     ADDON_GHSCOPE_PASS, NULL},
    /* repository(owner:, name:) */
    {Q("{ repository(owner: \\\"octo\\\", name: \\\"hello\\\") { id } }"), ADDON_GHSCOPE_PASS,
     NULL},
    {Q("{ r: repository(name: \\\"WORLD\\\", owner: \\\"OCTO\\\") { id } }"), ADDON_GHSCOPE_PASS,
     NULL},
    {Q("{ repository(owner: \\\"oc\\\\u0074o\\\", name: \\\"hello\\\") { id } }"),
     ADDON_GHSCOPE_PASS, NULL},
    {Q("{ repository(owner: \\\"other\\\", name: \\\"repo\\\") { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "repository:other/repo"},
    {Q("{ a: repository(owner: \\\"octo\\\", name: \\\"hello\\\") { id } "
       "b: repository(owner: \\\"octo\\\", name: \\\"nope\\\") { id } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:octo/nope"},
    {Q("{ repository(owner: \\\"octo\\\", name: \\\"\\\"\\\"hello\\\"\\\"\\\") { id } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:? (no readable name)"},
    {Q("{ repository(owner: \\\"octo\\\", name: 5) { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "repository:?"},
    {Q("{ repository(name: \\\"hello\\\") { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "repository:?/hello (no readable owner)"},
    {Q("fragment F on Query { repository(owner: \\\"x\\\", name: \\\"y\\\") { id } } "
       "{ viewer { login } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:x/y"},
    {Q("{ repository(owner: \\\"other\\\", name: \\\"repo\\\") @d(owner: \\\"octo\\\", name: "
       "\\\"hello\\\") { id } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:? (an argument given twice)"},
    {Q("{ repository(owner: \\\"other\\\", owner: \\\"octo\\\", name: \\\"hello\\\") { id } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:? (an argument given twice)"},
    {Q("{ repositoryOwner(login: \\\"other\\\") @d(login: \\\"octo\\\") { repository(name: "
       "\\\"hello\\\") { id } } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:?/hello (no readable owner)"},
    /* chains */
    {Q("{ repositoryOwner(login: \\\"octo\\\") { repository(name: \\\"hello\\\") { id } } }"),
     ADDON_GHSCOPE_PASS, NULL},
    {Q("{ organization(login: \\\"other\\\") { repository(name: \\\"hello\\\") { id } } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:other/hello"},
    {Q("{ viewer { repository(name: \\\"hello\\\") { id } } }"), ADDON_GHSCOPE_OUTSIDE,
     "repository:?/hello"},
    /* variables and defaults */
    {QV("query($o: String!, $n: String!) { repository(owner: $o, name: $n) { id } }",
        "{\"o\": \"octo\", \"n\": \"hello\"}"),
     ADDON_GHSCOPE_PASS, NULL},
    {QV("query($o: String!, $n: String!) { repository(owner: $o, name: $n) { id } }",
        "{\"o\": \"other\", \"n\": \"hello\"}"),
     ADDON_GHSCOPE_OUTSIDE, "repository:other/hello"},
    {Q("query($o: String = \\\"octo\\\", $n: String = \\\"world\\\") "
       "{ repository(owner: $o, name: $n) { id } }"),
     ADDON_GHSCOPE_PASS, NULL},
    {QV("query($o: String = \\\"octo\\\") { repository(owner: $o, name: \\\"hello\\\") { id } }",
        "{\"o\": \"evil\"}"),
     ADDON_GHSCOPE_OUTSIDE, "repository:evil/hello"},
    {QV("query($o: String!) { repository(owner: $o, name: \\\"hello\\\") { id } }", "{}"),
     ADDON_GHSCOPE_OUTSIDE, "repository:?/hello"},
    {QV("query($o: String!) { repository(owner: $o, name: \\\"hello\\\") { id } }",
        "{\"o\": [\"octo\"]}"),
     ADDON_GHSCOPE_OUTSIDE, "repository:?/hello"},
    /* nameWithOwner */
    {QV("mutation($i: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $i) { "
        "clientMutationId } }",
        "{\"i\": {\"branch\": {\"repositoryNameWithOwner\": \"octo/hello\", \"branchName\": "
        "\"main\"}}}"),
     ADDON_GHSCOPE_PASS, NULL},
    {QV("mutation($i: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $i) { "
        "clientMutationId } }",
        "{\"i\": {\"branch\": {\"repositoryNameWithOwner\": \"other/repo\"}}}"),
     ADDON_GHSCOPE_OUTSIDE, "repository:other/repo"},
    {Q("mutation { createCommitOnBranch(input: {branch: {repositoryNameWithOwner: "
       "\\\"octo/hello/x\\\"}}) { clientMutationId } }"),
     ADDON_GHSCOPE_OUTSIDE, "repository:octo/hello/x (not owner/name)"},
    /* node IDs: current format */
    {Q("{ node(id: \\\"R_kgDNMDk\\\") { id } }"), ADDON_GHSCOPE_PASS, NULL},
    {Q("{ nodes(ids: [\\\"R_kgDNMDk\\\", \\\"I_kwDNMDkH\\\"]) { id } }"), ADDON_GHSCOPE_PASS, NULL},
    {Q("{ nodes(ids: [\\\"R_kgDNMDk\\\", \\\"I_kwDNA+cH\\\"]) { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "node-id:I_kwDNA+cH (undecodable)"},
    {Q("{ node(id: \\\"R_kgDNA-c\\\") { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "node-id:R_kgDNA-c (repository outside the installation)"},
    {Q("mutation { addLabelsToLabelable(input: {labelableId: \\\"I_kwDNMDkH\\\", labelIds: "
       "[\\\"LA_kwDNASwF\\\"]}) { clientMutationId } }"),
     ADDON_GHSCOPE_PASS, NULL},
    {Q("mutation { addAssigneesToAssignable(input: {assignableId: \\\"I_kwDNMDkH\\\", "
       "assigneeIds: [\\\"U_kgDOA3N-eg\\\"]}) { clientMutationId } }"),
     ADDON_GHSCOPE_OUTSIDE, "node-id:U_kgDOA3N-eg (not tied to a repository)"},
    {Q("{ node(id: \\\"garbage\\\") { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "node-id:garbage (undecodable)"},
    {Q("{ node(id: 12345) { id } }"), ADDON_GHSCOPE_OUTSIDE, "argument:id"},
    {Q("mutation { x(input: {repositoryId: {a: 1}}) { y } }"), ADDON_GHSCOPE_OUTSIDE,
     "argument:repositoryId"},
    /* node IDs: legacy */
    {Q("{ node(id: \\\"MDEwOlJlcG9zaXRvcnkxMjM0NQ==\\\") { id } }"), ADDON_GHSCOPE_PASS, NULL},
    {Q("{ node(id: \\\"MDEwOlJlcG9zaXRvcnkzMDA=\\\") { id } }"), ADDON_GHSCOPE_PASS, NULL},
    {Q("{ node(id: \\\"MDQ6VXNlcjQwMjcwMzc=\\\") { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "node-id:MDQ6VXNlcjQwMjcwMzc= (not tied"},
    /* node IDs through variables */
    {QV("query($x: ID!) { node(id: $x) { id } }", "{\"x\": \"R_kgDNMDk\"}"), ADDON_GHSCOPE_PASS,
     NULL},
    {QV("query($x: ID!) { node(id: $x) { id } }", "{\"x\": \"R_kgDNA-c\"}"), ADDON_GHSCOPE_OUTSIDE,
     "node-id:R_kgDNA-c"},
    {QV("query($x: [ID!]!) { nodes(ids: $x) { id } }", "{\"x\": [\"R_kgDNMDk\", \"R_kgDNA-c\"]}"),
     ADDON_GHSCOPE_OUTSIDE, "node-id:R_kgDNA-c"},
    {Q("query($x: ID = \\\"R_kgDNA-c\\\") { node(id: $x) { id } }"), ADDON_GHSCOPE_OUTSIDE,
     "node-id:R_kgDNA-c"},
    {QV("mutation($in: AddCommentInput!) { addComment(input: $in) { clientMutationId } }",
        "{\"in\": {\"body\": \"hi\", \"subjectId\": \"I_kwDNA-cH\"}}"),
     ADDON_GHSCOPE_OUTSIDE, "node-id:I_kwDNA-cH"},
    {QV("query { viewer { login } }",
        "{\"deep\": [{\"a\": {\"projectIds\": [\"PVT_kwDNMDkH\"]}}]}"),
     ADDON_GHSCOPE_OUTSIDE, "node-id:PVT_kwDNMDkH (not tied"},
    /* unreadable */
    {"", ADDON_GHSCOPE_UNREADABLE, "<unparseable>"},
    {"{\"query\": 5}", ADDON_GHSCOPE_UNREADABLE, "<unparseable>"},
    {"[" Q("{ viewer { login } }") "]", ADDON_GHSCOPE_UNREADABLE, "<batched>"},
    {Q("{ viewer { login }"), ADDON_GHSCOPE_UNREADABLE, "<unparseable>"},
    {QV("{ viewer { login } }", "\"{}\""), ADDON_GHSCOPE_UNREADABLE, "<invalid-variables>"},
    {QV("{ viewer { login } }", "null"), ADDON_GHSCOPE_PASS, NULL},
    /* a key twice, at any depth: an upstream keeping the first would read what was not checked */
    {"{\"query\": \"{ a }\", \"query\": \"{ b }\"}", ADDON_GHSCOPE_UNREADABLE, "<duplicate-key>"},
    {"{\"query\": \"{ a }\", \"\\u0071uery\": \"{ b }\"}", ADDON_GHSCOPE_UNREADABLE,
     "<duplicate-key>"},
    {QV("query($x: ID!) { node(id: $x) { id } }", "{\"x\": \"R_kgDNA-c\", \"x\": \"R_kgDNMDk\"}"),
     ADDON_GHSCOPE_UNREADABLE, "<duplicate-key>"},
    {QV("{ viewer { login } }",
        "{\"a\": [{\"b\": {\"id\": \"R_kgDNMDk\", \"id\": \"R_kgDNA-c\"}}]}"),
     ADDON_GHSCOPE_UNREADABLE, "<duplicate-key>"},
    {"[" Q("{ a }") ", {\"query\": \"{ a }\", \"query\": \"{ b }\"}]", ADDON_GHSCOPE_UNREADABLE,
     "<duplicate-key>"},
    {"{\"query\": \"{ a }\", \"variables\": {}, \"variables\": {\"x\": 1}}",
     ADDON_GHSCOPE_UNREADABLE, "<duplicate-key>"},
    /* another spelling of a request parameter, which a server folding case reads as it */
    {"{\"query\": \"query($x: ID!) { node(id: $x) { id } }\", \"Variables\": {\"x\": "
     "\"R_kgDNA-c\"}}",
     ADDON_GHSCOPE_UNREADABLE, "<ambiguous-key>"},
    {"{\"query\": \"{ viewer { id } }\", \"QUERY\": \"{ node(id: \\\"R_kgDNA-c\\\") { id } }\"}",
     ADDON_GHSCOPE_UNREADABLE, "<ambiguous-key>"},
    {"{\"query\": \"{ viewer { id } }\", \"var\\u0131ables\": {}}", ADDON_GHSCOPE_UNREADABLE,
     "<ambiguous-key>"},
    {"{\"query\": \"{ viewer { id } }\", \"variables\": {\"Query\": 1}, \"queries\": 2}",
     ADDON_GHSCOPE_PASS, NULL},
    /* nesting: the body's JSON at most ADDON_GQLREQ_DEPTH_MAX deep, values within values 64 */
    {QV("{ viewer { id } }", "{\"a\": " L10 L10 L10 "1" R10 R10 R10 "}"), ADDON_GHSCOPE_PASS, NULL},
    {QV("{ viewer { id } }", "{\"a\": " L10 L10 L10 "[1]" R10 R10 R10 "}"),
     ADDON_GHSCOPE_UNREADABLE, "<too-deep>"},
    {QV("query($x: [ID]) { nodes(ids: " L10 L10 L10 L10 "[[[[[[[[$x]]]]]]]]" R10 R10 R10 R10
        ") { id } }",
        "{\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[null]]]]]]]]]]]]]]]]]]]]]]]]]]]}"),
     ADDON_GHSCOPE_UNREADABLE, "<too-deep>"},
    {QV("query($x: [ID]) { nodes(ids: [[[[[[$x]]]]]]) { id } }",
        "{\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[\"R_kgDNA-c\"]]]]]]]]]]]]]]]]]]]]]]]]]]]}"),
     ADDON_GHSCOPE_OUTSIDE, "node-id:R_kgDNA-c"},
};

static void test_ghscope_table(void **state)
{
    (void)state;
    addon_ghrepos_t *s = test_repos();
    for (size_t i = 0; i < sizeof(scope_cases) / sizeof(scope_cases[0]); i++) {
        const scope_case_t *c = &scope_cases[i];
        char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
        size_t n = 0;
        int v = addon_ghscope_check(c->body, strlen(c->body), s, detail, sizeof(detail), &n);
        if (v != c->verdict)
            fail_msg("case %zu (%s): verdict %d (%s), expected %d", i, c->body, v, detail,
                     c->verdict);
        if (c->detail != NULL && strncmp(detail, c->detail, strlen(c->detail)) != 0)
            fail_msg("case %zu: detail '%s', expected '%s...'", i, detail, c->detail);
        if (c->verdict == ADDON_GHSCOPE_PASS && detail[0] != '\0')
            fail_msg("case %zu: a detail on a pass: %s", i, detail);
    }
    addon_ghrepos_free(s);
}

/* Without the installation's repositories nothing is a target in scope; a query with none
 * still passes (the caller refuses when the repositories are unknown). */
static void test_ghscope_no_repos(void **state)
{
    (void)state;
    char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
    size_t n = 0;
    const char *a = Q("{ repository(owner: \\\"octo\\\", name: \\\"hello\\\") { id } }");
    assert_int_equal(addon_ghscope_check(a, strlen(a), NULL, detail, sizeof(detail), &n),
                     ADDON_GHSCOPE_OUTSIDE);
    assert_int_equal(n, 1);
    const char *b = Q("{ viewer { login } }");
    assert_int_equal(addon_ghscope_check(b, strlen(b), NULL, detail, sizeof(detail), &n),
                     ADDON_GHSCOPE_PASS);
    assert_int_equal(n, 0);
}

static void test_ghscope_caps(void **state)
{
    (void)state;
    addon_ghrepos_t *s = test_repos();
    char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
    size_t n = 0;
    /* over the body cap */
    size_t big = ADDON_GHSCOPE_BODY_CAP + 1;
    char *b = malloc(big);
    assert_non_null(b);
    memset(b, ' ', big);
    assert_int_equal(addon_ghscope_check(b, big, s, detail, sizeof(detail), &n),
                     ADDON_GHSCOPE_UNREADABLE);
    assert_string_equal(detail, "<too-large>");
    /* many references to one large list: the work cap refuses rather than loops */
    size_t off = (size_t)snprintf(b, big, "{\"query\": \"query($x: [ID!]) { ");
    for (int i = 0; i < 400; i++)
        off += (size_t)snprintf(b + off, big - off, "a%d: nodes(ids: $x) { id } ", i);
    off += (size_t)snprintf(b + off, big - off, "}\", \"variables\": {\"x\": [");
    for (int i = 0; i < 400; i++)
        off += (size_t)snprintf(b + off, big - off, "%s\"R_kgDNMDk\"", i ? "," : "");
    off += (size_t)snprintf(b + off, big - off, "]}}");
    assert_int_equal(addon_ghscope_check(b, off, s, detail, sizeof(detail), &n),
                     ADDON_GHSCOPE_UNREADABLE);
    assert_string_equal(detail, "<too-complex>");
    /* many references resolved against many variable definitions: bounded by the same cap */
    off = (size_t)snprintf(b, big, "{\"query\": \"query(");
    for (int i = 0; i < 3000; i++)
        off += (size_t)snprintf(b + off, big - off, "$v%d: ID ", i);
    off += (size_t)snprintf(b + off, big - off, ") { ");
    for (int i = 0; i < 100; i++)
        off += (size_t)snprintf(b + off, big - off, "a%d: node(id: $v2999) { id } ", i);
    off += (size_t)snprintf(b + off, big - off, "}\"}");
    assert_int_equal(addon_ghscope_check(b, off, s, detail, sizeof(detail), &n),
                     ADDON_GHSCOPE_UNREADABLE);
    assert_string_equal(detail, "<too-complex>");
    /* a detail never holds a quote, a backslash or a control character, and is capped */
    const char *q = Q("{ repository(owner: \\\"a\\\\\\\"b\\\\n\\\", name: "
                      "\\\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                      "\\\") { id } }");
    assert_int_equal(addon_ghscope_check(q, strlen(q), s, detail, sizeof(detail), &n),
                     ADDON_GHSCOPE_OUTSIDE);
    assert_null(strpbrk(detail, "\"\\\n"));
    assert_true(strlen(detail) <= ADDON_GHSCOPE_DETAIL_MAX);
    assert_non_null(strstr(detail, "..."));
    free(b);
    addon_ghrepos_free(s);
}

/* The nodes the parser keeps for scoping: kinds, keys, texts and parents, in document order. */
static void test_ghscope_parser_nodes(void **state)
{
    (void)state;
    static const char doc[] = "query($a: ID = \"x\" @d(k: 1)) { r: repository(owner: \"o\", "
                              "name: $n) { issues(first: 5, labels: [\"a\"]) { ... on X { "
                              "nodes { id } } } } }";
    static const struct {
        addon_gql_nkind_t kind;
        const char *key, *text;
        size_t parent, end;
    } want[] = {
        {ADDON_GQL_N_VARDEF, "a", "a", ADDON_GQL_NONE, 3},
        {ADDON_GQL_N_STRING, "", "\"x\"", 0, 2},
        {ADDON_GQL_N_INT, "k", "1", 0, 3},
        {ADDON_GQL_N_FIELD, "repository", "repository", ADDON_GQL_NONE, 12},
        {ADDON_GQL_N_STRING, "owner", "\"o\"", 3, 5},
        {ADDON_GQL_N_VAR, "name", "n", 3, 6},
        {ADDON_GQL_N_FIELD, "issues", "issues", 3, 12},
        {ADDON_GQL_N_INT, "first", "5", 6, 8},
        {ADDON_GQL_N_LIST, "labels", "[", 6, 10},
        {ADDON_GQL_N_STRING, "", "\"a\"", 8, 10},
        {ADDON_GQL_N_FIELD, "nodes", "nodes", 6, 12}, /* through the inline fragment */
        {ADDON_GQL_N_FIELD, "id", "id", 10, 12},
    };
    addon_gql_doc_t *d = NULL;
    char err[128];
    assert_int_equal(addon_gql_parse_nodes(doc, strlen(doc), &d, err, sizeof(err)), 0);
    assert_int_equal(addon_gql_node_count(d), sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const addon_gql_node_t *n = addon_gql_node(d, i);
        if (n->kind != want[i].kind || n->parent != want[i].parent || n->end != want[i].end ||
            n->key.len != strlen(want[i].key) ||
            (n->key.len > 0 && memcmp(n->key.base, want[i].key, n->key.len) != 0) ||
            n->text.len != strlen(want[i].text) ||
            memcmp(n->text.base, want[i].text, n->text.len) != 0)
            fail_msg("node %zu: kind %d parent %zu end %zu key '%.*s' text '%.*s'", i, (int)n->kind,
                     n->parent, n->end, (int)n->key.len, n->key.len ? n->key.base : "",
                     (int)n->text.len, n->text.base);
    }
    assert_null(addon_gql_node(d, sizeof(want) / sizeof(want[0])));
    addon_gql_free(d);
    assert_int_equal(addon_gql_parse(doc, strlen(doc), &d, err, sizeof(err)), 0);
    assert_int_equal(addon_gql_node_count(d), 0);
    addon_gql_free(d);
}

static double test_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One 200 KB body of lists nested 62 deep (a variable's default, referenced twice): the check
 * walks each node once. Before the subtree bounds it walked every node's parents at every
 * level of the list (~0.85 s of the event loop for this body in a Release build). The bound
 * below is loose for slow (sanitizer) builds; AIRLOCK_BENCH=1 prints the times. */
static void test_ghscope_nesting_linear(void **state)
{
    (void)state;
    addon_ghrepos_t *s = test_repos();
    size_t cap = 256 * 1024, off = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    off += (size_t)snprintf(b + off, cap - off, "{\"query\": \"query($x: [ID] = ");
    for (int i = 0; i < 62; i++)
        b[off++] = '[';
    for (int i = 0; i < 40000; i++)
        off += (size_t)snprintf(b + off, cap - off, "null,");
    for (int i = 0; i < 62; i++)
        b[off++] = ']';
    off += (size_t)snprintf(b + off, cap - off,
                            ") { a: nodes(ids: $x) { id } b: nodes(ids: $x) { id } }\"}");
    assert_true(off > 200 * 1000 && off < cap);
    char detail[ADDON_GHSCOPE_DETAIL_MAX + 1];
    size_t n = 0;
    double t0 = test_now();
    int v = addon_ghscope_check(b, off, s, detail, sizeof(detail), &n);
    double t1 = test_now();
    assert_int_equal(v, ADDON_GHSCOPE_PASS);
    addon_gql_doc_t *d = NULL;
    /* the document alone, through the parser (also linear: one pass, depth capped) */
    const char *q = strstr(b, "query(");
    size_t qlen = off - (size_t)(q - b) - 2;
    double t2 = test_now();
    assert_int_equal(addon_gql_parse_nodes(q, qlen, &d, NULL, 0), 0);
    double t3 = test_now();
    addon_gql_free(d);
    if (getenv("AIRLOCK_BENCH") != NULL)
        print_message("ghscope: %zu-byte body nested 62 deep: check %.1f ms, parse %.1f ms\n", off,
                      (t1 - t0) * 1e3, (t3 - t2) * 1e3);
    /* a wall-clock bound means nothing under valgrind (AIRLOCK_SLOW, set by run-all.sh) */
    if (getenv("AIRLOCK_SLOW") == NULL)
        assert_true(t1 - t0 < 0.25);
    free(b);
    addon_ghrepos_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ghscope_parser_nodes), cmocka_unit_test(test_ghscope_repos_page),
        cmocka_unit_test(test_ghscope_table),        cmocka_unit_test(test_ghscope_no_repos),
        cmocka_unit_test(test_ghscope_caps),         cmocka_unit_test(test_ghscope_nesting_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
