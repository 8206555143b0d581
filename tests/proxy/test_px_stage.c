/* The request pipeline's table (proxy/px_stage.h): its order, its names, and that every stage
 * has the hooks its kind needs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/px_stage.h"

/* What each stage is: the order is the pipeline's contract (px_stage.c says why). */
static const struct {
    const char *name;
    unsigned flags;
    int body;     /* reads the request body as it flows (on_body) */
    int body_end; /* reads the trailers (on_body_end) */
    int response; /* reads the response body (on_response_data) */
    int over;     /* may refuse a gathered body over its cap (on_body_over) */
    int end;      /* keeps per-request state it lets go (on_end) */
} want[] = {
    {"precheck", 0, 0, 0, 0, 0, 0},
    {"leak", 0, 1, 1, 0, 0, 1},
    {"policy", 0, 0, 0, 0, 0, 1},
    {"aws", PX_STAGE_AFTER_FILTERS, 0, 0, 0, 0, 1},
    {"ghapp", PX_STAGE_AFTER_FILTERS, 0, 0, 0, 1, 1},
    {"masking", PX_STAGE_AFTER_FILTERS, 0, 0, 0, 0, 1},
    {"budget", 0, 1, 0, 1, 0, 1},
    {"filters", 0, 0, 0, 0, 1, 0},
    {"upstream", 0, 0, 0, 0, 0, 0},
    {"scrub", 0, 0, 0, 1, 0, 1}, /* a response stage only: no head hook */
};

static void test_order_and_hooks(void **state)
{
    (void)state;
    size_t n = 0;
    const px_stage_t *const *t = px_stages(&n);
    assert_int_equal(n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < n; i++) {
        const px_stage_t *s = t[i];
        assert_non_null(s);
        assert_string_equal(s->name, want[i].name);
        assert_int_equal(s->flags, want[i].flags);
        /* every stage decides on the head, but the response-only one */
        assert_int_equal(s->on_head != NULL, strcmp(s->name, "scrub") != 0);
        assert_int_equal(s->on_body != NULL, want[i].body);
        assert_int_equal(s->on_body_end != NULL, want[i].body_end);
        assert_int_equal(s->on_response_data != NULL, want[i].response);
        assert_int_equal(s->on_body_over != NULL, want[i].over);
        assert_int_equal(s->on_end != NULL, want[i].end);
        for (size_t j = 0; j < i; j++)
            assert_true(t[j] != s && strcmp(t[j]->name, s->name) != 0); /* each once */
    }
}

/* The credential stages wait for the body filters; the budgets come after them (a request a
 * credential stage refuses is not counted) and before the gathering (its bytes are). */
static void test_credentials_between_policy_and_budget(void **state)
{
    (void)state;
    size_t n = 0, policy = 0, budget = 0, filters = 0;
    const px_stage_t *const *t = px_stages(&n);
    for (size_t i = 0; i < n; i++) {
        if (t[i] == &px_stage_policy)
            policy = i;
        if (t[i] == &px_stage_budget)
            budget = i;
        if (t[i] == &px_stage_filters)
            filters = i;
    }
    assert_true(t[0] == &px_stage_precheck && t[1] == &px_stage_leak);
    /* upstream is the last stage that sees the head; scrub (response only) comes after it */
    assert_true(t[n - 2] == &px_stage_upstream && t[n - 1] == &px_stage_scrub);
    for (size_t i = 0; i < n; i++) {
        int cred = (t[i]->flags & PX_STAGE_AFTER_FILTERS) != 0;
        assert_int_equal(cred, i > policy && i < budget);
    }
    assert_true(budget < filters);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_hooks),
        cmocka_unit_test(test_credentials_between_policy_and_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
