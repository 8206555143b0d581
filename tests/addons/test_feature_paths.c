/* Features that apply to a path (the Anthropic tool trim on /v1/messages, the GitHub App scope
 * on .../graphql) apply when any reading of the path (base/px_path) matches: a spelling the
 * upstream reads as the feature's path never skips the feature. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon.h"
#include "addons/addon_ghapp.h"
#include "addons/addon_tooldomains.h"
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

static const struct {
    const char *path;
    int applies;
} messages_cases[] = {
    {"/v1/messages", 1},
    {"/v1/messages?beta=true", 1},
    {"/v1/messages/count_tokens", 1},
    {"/v1//messages", 1},
    {"//v1/messages", 1},
    {"/v1/./messages", 1},
    {"/v1;x/messages", 1},
    {"/v1/messages;x", 1},
    {"/v1%2fmessages", 1},
    {"/V1/Messages", 1},
    {"/v1/messages.json", 1},
    {"/v1/messages/", 1},
    {"/v1/messages_legacy", 0},
    {"/v1/models", 0},
    {"/x/v1/messages", 0},
    {"/v1/messagesx", 0},
};

static void test_feature_paths_tool_trim(void **state)
{
    (void)state;
    const addon_t *a = addon_tooldomains();
    addon_req_t *r = calloc(1, sizeof(*r));
    addon_answer_t ans;
    int failures = 0;
    for (size_t i = 0; i < sizeof(messages_cases) / sizeof(messages_cases[0]); i++) {
        req_init(r, "api.anthropic.com", messages_cases[i].path);
        assert_int_equal(a->on_request_head(a, r, &ans), ADDON_NEXT);
        if ((r->filter_cap != 0) != messages_cases[i].applies) {
            print_error("%s: applies %d\n", messages_cases[i].path, r->filter_cap != 0);
            failures++;
        }
    }
    req_init(r, "other.anthropic.com", "/v1/messages");
    assert_int_equal(a->on_request_head(a, r, &ans), ADDON_NEXT);
    assert_int_equal(r->filter_cap, 0);
    addon_req_reset(r);
    free(r);
    assert_int_equal(failures, 0);
}

static void test_feature_paths_under(void **state)
{
    (void)state;
    static const struct {
        const char *path, *base;
        int applies;
    } cases[] = {
        {"/v1/responses", "/v1/responses", 1},
        {"/v1//responses?x", "/v1/responses", 1},
        {"/V1/Chat/Completions", "/v1/chat/completions", 1},
        {"/v1/chat;x/completions", "/v1/chat/completions", 1},
        {"/v1/responses.json", "/v1/responses", 1},
        {"/v1/responses/abc", "/v1/responses", 1},
        {"/v1/responsesx", "/v1/responses", 0},
        {"/x/v1/responses", "/v1/responses", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(px_path_under(cases[i].path, strlen(cases[i].path), cases[i].base),
                         cases[i].applies);
}

static const struct {
    const char *path;
    int applies;
} graphql_cases[] = {
    {"/graphql", 1},      {"/graphql/", 1},  {"/api/graphql", 1}, {"/graphql?query=x", 1},
    {"/graphql.json", 1}, {"/GraphQL", 1},   {"//graphql", 1},    {"/graphql;x", 1},
    {"/graphql%3bx", 1},  {"/graphql/.", 1}, {"/%67raphql", 1},   {"/graphqlx", 0},
    {"/graphql/x", 0},    {"/repos/o/r", 0}, {"graphql", 0},
};

static void test_feature_paths_github_graphql(void **state)
{
    (void)state;
    addon_req_t *r = calloc(1, sizeof(*r));
    int failures = 0;
    for (size_t i = 0; i < sizeof(graphql_cases) / sizeof(graphql_cases[0]); i++) {
        req_init(r, "api.github.com", graphql_cases[i].path);
        if (addon_ghapp_graphql_path(r) != graphql_cases[i].applies) {
            print_error("%s: applies %d\n", graphql_cases[i].path, !graphql_cases[i].applies);
            failures++;
        }
    }
    addon_req_reset(r);
    free(r);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feature_paths_tool_trim),
        cmocka_unit_test(test_feature_paths_github_graphql),
        cmocka_unit_test(test_feature_paths_under),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
