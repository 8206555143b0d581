/* The decision webhook's pure parts (proxy/px_decide.h): the --decide-url URL, the JSON summary
 * POSTed for a question (plain ASCII, no header or body), and the answer's grammar (anything
 * but a well-formed allow or deny is an error, which denies). The calls themselves and the
 * circuit breaker are tested end to end in tests/integration/test_decide.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "proxy/px_decide.h"

static void test_px_decide_url_table(void **state)
{
    (void)state;
    static const struct {
        const char *url;
        int rc;
        const char *host;
        unsigned port;
        int tls;
        const char *path;
    } cases[] = {
        {"http://127.0.0.1:8080/decide", 0, "127.0.0.1", 8080, 0, "/decide"},
        {"https://Judge.Example/v1?k=1", 0, "judge.example", 443, 1, "/v1?k=1"},
        {"http://judge.example", 0, "judge.example", 80, 0, "/"},
        {"http://judge.example?q", 0, "judge.example", 80, 0, "/?q"},
        {"http://[::1]:9/x", 0, "::1", 9, 0, "/x"},
        {"ftp://judge.example/", PX_ECONFIG, NULL, 0, 0, NULL},
        {"judge.example", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://a:0/", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://a:65536/", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://a:8x/", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://user@a/", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://[::1/", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://a/#frag", PX_ECONFIG, NULL, 0, 0, NULL},
        {"http://a/b c", PX_ECONFIG, NULL, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char host[256], path[256];
        unsigned port = 0;
        int tls = -1;
        const char *why = NULL;
        int rc = px_decide_parse_url(cases[i].url, host, sizeof(host), &port, &tls, path,
                                     sizeof(path), &why);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, expected %d", cases[i].url, rc, cases[i].rc);
        if (rc != 0) {
            assert_non_null(why);
            continue;
        }
        assert_string_equal(host, cases[i].host);
        assert_int_equal(port, cases[i].port);
        assert_int_equal(tls, cases[i].tls);
        assert_string_equal(path, cases[i].path);
    }
}

static void test_px_decide_answer_table(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int rc, allow, conv;
    } cases[] = {
        {"{\"decision\": \"allow\"}", 0, 1, 0},
        {"{\"decision\": \"allow\", \"scope\": \"once\"}", 0, 1, 0},
        {"{\"decision\": \"allow\", \"scope\": \"conversation\"}", 0, 1, 1},
        {"{\"decision\": \"deny\", \"reason\": \"no\"}", 0, 0, 0},
        {"{\"decision\": \"deny\", \"scope\": \"once\"}", 0, 0, 0},
        {"{\"decision\": \"yes\"}", PX_EPARSE, 0, 0},
        {"{\"decision\": true}", PX_EPARSE, 0, 0},
        {"{\"scope\": \"once\"}", PX_EPARSE, 0, 0},
        {"{\"decision\": \"allow\", \"scope\": \"persist\"}", 0, 1, 2},
        {"{\"decision\": \"allow\", \"scope\": \"forever\"}", PX_EPARSE, 0, 0},
        {"{\"decision\": \"allow\", \"scope\": 1}", PX_EPARSE, 0, 0},
        {"{\"decision\": \"allow\", \"decision\": \"deny\"}", PX_EPARSE, 0, 0},
        {"[\"allow\"]", PX_EPARSE, 0, 0},
        {"{\"decision\": \"allow\"", PX_EPARSE, 0, 0},
        {"", PX_EPARSE, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int allow = -1, conv = -1;
        const char *why = NULL;
        int rc = px_decide_parse_answer(cases[i].body, strlen(cases[i].body), &allow, &conv, &why);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, expected %d", cases[i].body, rc, cases[i].rc);
        if (rc != 0) {
            assert_non_null(why);
            continue;
        }
        assert_int_equal(allow, cases[i].allow);
        assert_int_equal(conv, cases[i].conv);
    }
}

static void test_px_decide_body(void **state)
{
    (void)state;
    px_hold_info_t q = {.id = 7,
                        .scope_name = "agent1",
                        .method = "GET",
                        .host = "api.test",
                        .path = "/a\"b\\c\x01\xc3\xa9?q=1",
                        .created_ms = 1000,
                        .deadline_ms = 31000};
    char buf[512];
    int n = px_decide_body(&q, 2500, buf, sizeof(buf));
    assert_true(n > 0);
    assert_string_equal(buf, "{\"id\":\"h7\",\"sandbox\":\"agent1\",\"method\":\"GET\",\"host\":"
                             "\"api.test\",\"path\":\"/a\\\\x22b\\\\x5cc\\\\x01\\\\xc3\\\\xa9?q="
                             "1\",\"seconds_left\":29}");
    assert_int_equal(px_decide_body(&q, 2500, buf, 40), PX_ETOOBIG);
}

static int seen_observer, seen_decider;

static void on_fired(px_hold_wait_t *w)
{
    assert_int_equal(w->outcome, PX_HOLD_DENIED);
}

static void on_observer(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by)
{
    (void)arg, (void)q, (void)o, (void)by;
    seen_observer++;
}

static void on_decider(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by)
{
    (void)q;
    assert_ptr_equal(arg, &seen_decider);
    assert_int_equal(seen_observer, seen_decider + 1); /* after the control socket's observer */
    if (seen_decider++ == 0) {
        assert_int_equal(o, PX_HOLD_PENDING);
        assert_null(by);
    } else {
        assert_int_equal(o, PX_HOLD_DENIED);
        assert_string_equal(by, "webhook");
    }
}

/* The table tells the webhook (its second observer) the same events as the first. */
static void test_px_decide_hold_slot(void **state)
{
    (void)state;
    static int scope;
    px_hold_t *t = px_hold_new();
    assert_non_null(t);
    px_hold_set_observer(t, on_observer, NULL);
    px_hold_set_decider(t, on_decider, &seen_decider);
    px_hold_wait_t w;
    memset(&w, 0, sizeof(w));
    w.owner = &w;
    w.cb = on_fired;
    assert_int_equal(px_hold_add(t, &scope, NULL, "GET", "a.test", "/", 1000, 0, &w), 0);
    assert_int_equal(seen_decider, 1);
    assert_int_equal(px_hold_decide(t, w.id, PX_HOLD_DENIED, 0, "webhook"), 1);
    assert_int_equal(seen_decider, 2);
    px_hold_set_decider(t, NULL, NULL);
    px_hold_cancel(t, &w);
    px_hold_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_decide_url_table),
        cmocka_unit_test(test_px_decide_answer_table),
        cmocka_unit_test(test_px_decide_body),
        cmocka_unit_test(test_px_decide_hold_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
