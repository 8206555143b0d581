/* The allowlist addon's 403 answers: which message each kind of refusal gets (the port one
 * names the port, the method one the method, a block entry names the entry, everything else
 * gets the host/path message), table-driven through the addon's own on_request_head. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon.h"
#include "addons/addon_allowlist.h"
#include "addons/addon_policy.h"

static const char allow_yaml[] = "domains:\n"
                                 "  - d.example\n"
                                 "url_prefixes:\n"
                                 "  - host: u.example\n"
                                 "    path: /v1/*\n"
                                 "    methods: [GET]\n"
                                 "    ports: [9000]\n"
                                 "block:\n"
                                 "  - host: b.example\n";

typedef struct msg_case {
    const char *method, *host, *path;
    uint16_t port;
    int tls;
    int answered;        /* 0: allowed (ADDON_NEXT) */
    const char *message; /* the whole message, or NULL when `starts` is given */
    const char *starts;  /* the message's start */
} msg_case_t;

static void test_allowlist_messages(void **state)
{
    (void)state;
    char port_msg[512], method_msg[512];
    snprintf(port_msg, sizeof(port_msg), ADDON_POLICY_MSG_PORT_FMT, 8443u);
    snprintf(method_msg, sizeof(method_msg), ADDON_POLICY_MSG_METHOD_FMT, "POST");
    const msg_case_t cases[] = {
        {"GET", "d.example", "/", 443, 1, 0, NULL, NULL},
        {"GET", "d.example", "/", 8443, 1, 1, port_msg, NULL},
        {"GET", "u.example", "/v1/x", 9000, 1, 0, NULL, NULL},
        {"GET", "u.example", "/v1/x", 8443, 1, 1, port_msg, NULL},
        {"POST", "u.example", "/v1/x", 9000, 1, 1, method_msg, NULL},
        /* the path decides before the port and the method */
        {"POST", "u.example", "/v2", 8443, 1, 1, ADDON_POLICY_MSG_HOST_PATH, NULL},
        {"GET", "other.example", "/", 8443, 1, 1, ADDON_POLICY_MSG_HOST_PATH, NULL},
        {"GET", "d.example", "/a/%2e%2e/b", 443, 1, 1, ADDON_POLICY_MSG_HOST_PATH, NULL},
        {"GET", "b.example", "/", 443, 1, 1, NULL, "This request matches block[0]"},
    };
    addon_policy_t *p = NULL;
    char err[512];
    assert_int_equal(
        addon_policy_load_buffer("al.yaml", allow_yaml, strlen(allow_yaml), &p, err, sizeof(err)),
        0);
    addon_config_t cfg = {.policy = p};
    const addon_t *a = addon_allowlist();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const msg_case_t *c = &cases[i];
        addon_req_t req;
        memset(&req, 0, sizeof(req));
        req.method = (addon_str_t){c->method, strlen(c->method)};
        req.host = (addon_str_t){c->host, strlen(c->host)};
        req.path = (addon_str_t){c->path, strlen(c->path)};
        req.port = c->port;
        req.tls = c->tls;
        req.config = &cfg;
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        int rc = a->on_request_head(a, &req, &ans);
        if (rc != (c->answered ? ADDON_ANSWER : ADDON_NEXT) ||
            (c->message != NULL && strcmp(ans.message, c->message) != 0) ||
            (c->starts != NULL && strncmp(ans.message, c->starts, strlen(c->starts)) != 0))
            fail_msg("case %zu (%s %s%s port %u): rc %d, message [%s]", i, c->method, c->host,
                     c->path, c->port, rc, ans.message);
        if (c->answered)
            assert_int_equal(ans.status, 403);
    }
    assert_non_null(strstr(port_msg, "Port 8443 is not allowed for this host."));
    assert_non_null(strstr(port_msg, "'ports' list"));
    addon_policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowlist_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
