/* The hold table (proxy/px_hold.h): identical holds are one question answered once, the bounds
 * per conversation and per process (count and bytes), expiry, cancelling, conversation rules
 * and the observer's events. The time is given, no loop runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "proxy/px_hold.h"

static int scope_a, scope_b; /* two conversations (their addresses are the keys) */

typedef struct {
    px_hold_wait_t w;
    int fired;
} waiter_t;

static void on_fired(px_hold_wait_t *w)
{
    ((waiter_t *)w)->fired++;
}

static void waiter_init(waiter_t *wt, size_t bytes)
{
    memset(wt, 0, sizeof(*wt));
    wt->w.owner = wt;
    wt->w.cb = on_fired;
    wt->w.bytes = bytes;
}

static int add(px_hold_t *t, waiter_t *wt, const void *scope, const char *method, const char *path,
               uint64_t now)
{
    return px_hold_add(t, scope, NULL, method, "api.test", path, 1000, now, &wt->w);
}

/* Requests that share conversation, method, host and path share a question; any difference
 * makes another. */
static void test_px_hold_dedup_table(void **state)
{
    (void)state;
    static const struct {
        const void *scope;
        const char *method, *path;
        int same; /* the same question as the first */
    } cases[] = {
        {&scope_a, "GET", "/x", 1},  {&scope_a, "GET", "/x", 1},  {&scope_b, "GET", "/x", 0},
        {&scope_a, "POST", "/x", 0}, {&scope_a, "GET", "/x?", 0}, {&scope_a, "GET", "/X", 0},
    };
    size_t n = sizeof(cases) / sizeof(cases[0]);
    px_hold_t *t = px_hold_new();
    waiter_t w[8];
    for (size_t i = 0; i < n; i++) {
        waiter_init(&w[i], 10);
        assert_int_equal(add(t, &w[i], cases[i].scope, cases[i].method, cases[i].path, 0), 0);
        if (cases[i].same != (w[i].w.id == w[0].w.id))
            fail_msg("case %zu: id %llu, first %llu", i, (unsigned long long)w[i].w.id,
                     (unsigned long long)w[0].w.id);
    }
    assert_int_equal(px_hold_questions(t), n - 1);
    assert_int_equal(px_hold_count(t), n);
    assert_int_equal(px_hold_bytes(t), n * 10);
    /* one answer for the question: both requests hear it, the others do not */
    assert_int_equal(px_hold_decide(t, w[0].w.id, PX_HOLD_APPROVED, 0, "uid 7"), 2);
    assert_int_equal(w[0].fired + w[1].fired, 2);
    assert_int_equal(w[0].w.outcome, PX_HOLD_APPROVED);
    assert_string_equal(w[1].w.by, "uid 7");
    for (size_t i = 2; i < n; i++)
        assert_int_equal(w[i].fired, 0);
    assert_int_equal(px_hold_decide(t, w[0].w.id, PX_HOLD_DENIED, 0, "uid 7"), PX_ENOENT);
    assert_int_equal(px_hold_bytes(t), (n - 2) * 10); /* decided: no longer held */
    /* the decided waiters stay findable until their exchange lets go */
    assert_ptr_equal(px_hold_find(t, &w[1]), &w[1].w);
    for (size_t i = 0; i < n; i++)
        px_hold_cancel(t, &w[i].w);
    assert_int_equal(px_hold_count(t), 0);
    assert_int_equal(px_hold_questions(t), 0);
    assert_null(px_hold_find(t, &w[1]));
    px_hold_free(t);
}

/* Past a bound a request is not held, and the answer names the bound. */
static void test_px_hold_bounds(void **state)
{
    (void)state;
    static waiter_t w[PX_HOLD_PROCESS_MAX + 2];
    char path[32];
    px_hold_t *t = px_hold_new();
    /* per conversation: count */
    for (int i = 0; i < PX_HOLD_SCOPE_MAX; i++) {
        waiter_init(&w[i], 1);
        snprintf(path, sizeof(path), "/c%d", i);
        assert_int_equal(add(t, &w[i], &scope_a, "GET", path, 0), 0);
    }
    waiter_init(&w[PX_HOLD_SCOPE_MAX], 1);
    assert_int_equal(add(t, &w[PX_HOLD_SCOPE_MAX], &scope_a, "GET", "/c0", 0),
                     PX_HOLD_OVER_SCOPE_COUNT); /* also a request that would join a question */
    char b[64];
    assert_string_equal(px_hold_bound_text(PX_HOLD_OVER_SCOPE_COUNT, b, sizeof(b)),
                        "conversation hold count 32");
    /* another conversation is not affected */
    assert_int_equal(add(t, &w[PX_HOLD_SCOPE_MAX], &scope_b, "GET", "/c0", 0), 0);
    px_hold_cancel(t, &w[PX_HOLD_SCOPE_MAX].w);
    for (int i = 0; i < PX_HOLD_SCOPE_MAX; i++)
        px_hold_cancel(t, &w[i].w);
    /* per conversation: bytes */
    waiter_init(&w[0], PX_HOLD_SCOPE_BYTES_MAX);
    assert_int_equal(add(t, &w[0], &scope_a, "GET", "/big", 0), 0);
    waiter_init(&w[1], 1);
    assert_int_equal(add(t, &w[1], &scope_a, "GET", "/big2", 0), PX_HOLD_OVER_SCOPE_BYTES);
    px_hold_cancel(t, &w[0].w);
    assert_int_equal(px_hold_bytes(t), 0);
    /* per process: count, across conversations (each its own key) */
    static char keys[PX_HOLD_PROCESS_MAX + 1];
    for (int i = 0; i < PX_HOLD_PROCESS_MAX; i++) {
        waiter_init(&w[i], 1);
        assert_int_equal(add(t, &w[i], &keys[i], "GET", "/p", 0), 0);
    }
    waiter_init(&w[PX_HOLD_PROCESS_MAX], 1);
    assert_int_equal(add(t, &w[PX_HOLD_PROCESS_MAX], &keys[PX_HOLD_PROCESS_MAX], "GET", "/p", 0),
                     PX_HOLD_OVER_PROCESS_COUNT);
    for (int i = 0; i < PX_HOLD_PROCESS_MAX; i++)
        px_hold_cancel(t, &w[i].w);
    /* per process: bytes */
    waiter_init(&w[0], PX_HOLD_PROCESS_BYTES_MAX);
    assert_int_equal(add(t, &w[0], &keys[0], "GET", "/p", 0), PX_HOLD_OVER_SCOPE_BYTES);
    for (int i = 0; i < 8; i++) {
        waiter_init(&w[i], PX_HOLD_PROCESS_BYTES_MAX / 8);
        assert_int_equal(add(t, &w[i], &keys[i], "GET", "/p", 0), 0);
    }
    waiter_init(&w[8], 1);
    assert_int_equal(add(t, &w[8], &keys[8], "GET", "/p", 0), PX_HOLD_OVER_PROCESS_BYTES);
    for (int i = 0; i < 8; i++)
        px_hold_cancel(t, &w[i].w);
    assert_int_equal(px_hold_count(t), 0);
    assert_int_equal(px_hold_bytes(t), 0);
    px_hold_free(t);
}

/* A question times out at its deadline (not before), once. */
static void test_px_hold_expiry(void **state)
{
    (void)state;
    px_hold_t *t = px_hold_new();
    waiter_t w1, w2, w3;
    waiter_init(&w1, 1);
    waiter_init(&w2, 1);
    waiter_init(&w3, 1);
    assert_int_equal(add(t, &w1, &scope_a, "GET", "/a", 100), 0); /* deadline 1100 */
    assert_int_equal(add(t, &w2, &scope_a, "GET", "/a", 900), 0); /* joins: same deadline */
    assert_int_equal(add(t, &w3, &scope_a, "GET", "/b", 500), 0); /* deadline 1500 */
    assert_int_equal(px_hold_expire(t, 1099), 0);
    assert_int_equal(w1.fired, 0);
    assert_int_equal(px_hold_expire(t, 1100), 1);
    assert_int_equal(w1.fired + w2.fired, 2);
    assert_int_equal(w1.w.outcome, PX_HOLD_TIMEOUT);
    assert_int_equal(w3.fired, 0);
    assert_int_equal(px_hold_expire(t, 1100), 0);
    assert_int_equal(px_hold_expire(t, 2000), 1);
    assert_int_equal(w3.w.outcome, PX_HOLD_TIMEOUT);
    assert_int_equal(px_hold_questions(t), 0);
    px_hold_cancel(t, &w1.w);
    px_hold_cancel(t, &w2.w);
    px_hold_cancel(t, &w3.w);
    px_hold_cancel(t, &w3.w); /* twice: no harm */
    assert_int_equal(px_hold_count(t), 0);
    px_hold_free(t);
}

typedef struct {
    int news, decided, gone;
    int audits, conv;
} seen_t;

static void on_event(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by)
{
    seen_t *s = arg;
    (void)q;
    if (o == PX_HOLD_PENDING && by == NULL)
        s->news++;
    else if (o == PX_HOLD_PENDING)
        s->gone++;
    else
        s->decided++;
}

static void on_audit(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by,
                     int conversation)
{
    seen_t *s = arg;
    (void)q, (void)o, (void)by;
    s->audits++;
    s->conv += conversation;
}

/* A conversation approval leaves a rule for that conversation only; requests that all went
 * away drop their question; deciders hear each new question and each end; time-outs are not
 * audited as decisions. */
static void test_px_hold_rules_and_events(void **state)
{
    (void)state;
    px_hold_t *t = px_hold_new();
    seen_t s = {0};
    px_hold_set_observer(t, on_event, &s);
    px_hold_set_audit(t, on_audit, &s);
    waiter_t w1, w2, w3;
    waiter_init(&w1, 1);
    waiter_init(&w2, 1);
    waiter_init(&w3, 1);
    assert_int_equal(add(t, &w1, &scope_a, "GET", "/r", 0), 0);
    assert_false(px_hold_allowed(t, &scope_a, "GET", "api.test", "/r"));
    assert_int_equal(px_hold_decide(t, w1.w.id, PX_HOLD_APPROVED, 1, "uid 1"), 1);
    assert_true(w1.w.rule_made);
    assert_true(px_hold_allowed(t, &scope_a, "GET", "api.test", "/r"));
    assert_false(px_hold_allowed(t, &scope_b, "GET", "api.test", "/r"));
    assert_false(px_hold_allowed(t, &scope_a, "POST", "api.test", "/r"));
    assert_false(px_hold_allowed(t, &scope_a, "GET", "api.test", "/r/x"));
    px_hold_cancel(t, &w1.w);
    /* approved once: no rule */
    assert_int_equal(add(t, &w2, &scope_a, "GET", "/once", 0), 0);
    assert_int_equal(px_hold_decide(t, w2.w.id, PX_HOLD_APPROVED, 0, "uid 1"), 1);
    assert_false(px_hold_allowed(t, &scope_a, "GET", "api.test", "/once"));
    px_hold_cancel(t, &w2.w);
    /* the client went away */
    assert_int_equal(add(t, &w3, &scope_a, "GET", "/gone", 0), 0);
    px_hold_cancel(t, &w3.w);
    assert_int_equal(px_hold_questions(t), 0);
    assert_int_equal(w3.fired, 0);
    /* timed out */
    waiter_init(&w3, 1);
    assert_int_equal(add(t, &w3, &scope_a, "GET", "/late", 0), 0);
    px_hold_expire(t, 5000);
    px_hold_cancel(t, &w3.w);
    assert_int_equal(s.news, 4);
    assert_int_equal(s.decided, 3);
    assert_int_equal(s.gone, 1);
    assert_int_equal(s.audits, 2);
    assert_int_equal(s.conv, 1);
    px_hold_free(t);
}

static const char *name_of(void *arg, const void *scope)
{
    (void)arg;
    return scope == &scope_b ? "sb-b" : NULL;
}

static void on_list(void *arg, const px_hold_info_t *q)
{
    char *out = arg;
    strcat(out, q->scope_name);
    strcat(out, " ");
}

/* The listings name each conversation (a sandbox) when the namer knows it, else "-". */
static void test_px_hold_names(void **state)
{
    (void)state;
    px_hold_t *t = px_hold_new();
    px_hold_set_namer(t, name_of, NULL);
    waiter_t w1, w2, w3;
    waiter_init(&w1, 1);
    waiter_init(&w2, 1);
    waiter_init(&w3, 1);
    assert_int_equal(add(t, &w1, &scope_a, "GET", "/n", 0), 0);
    assert_int_equal(add(t, &w2, &scope_b, "GET", "/n", 0), 0);
    assert_int_equal(px_hold_add(t, &scope_b, "given", "GET", "api.test", "/m", 1000, 0, &w3.w), 0);
    char out[64] = "";
    px_hold_each(t, on_list, out);
    assert_string_equal(out, "- sb-b given ");
    px_hold_cancel(t, &w1.w);
    px_hold_cancel(t, &w2.w);
    px_hold_cancel(t, &w3.w);
    px_hold_free(t);
}

/* The rules are capped: the oldest goes first. */
static void test_px_hold_rules_cap(void **state)
{
    (void)state;
    px_hold_t *t = px_hold_new();
    char path[32];
    for (int i = 0; i < PX_HOLD_RULES_MAX + 1; i++) {
        waiter_t w;
        waiter_init(&w, 1);
        snprintf(path, sizeof(path), "/%d", i);
        assert_int_equal(add(t, &w, &scope_a, "GET", path, 0), 0);
        assert_int_equal(px_hold_decide(t, w.w.id, PX_HOLD_APPROVED, 1, "uid 1"), 1);
        px_hold_cancel(t, &w.w);
    }
    assert_false(px_hold_allowed(t, &scope_a, "GET", "api.test", "/0"));
    assert_true(px_hold_allowed(t, &scope_a, "GET", "api.test", "/1"));
    snprintf(path, sizeof(path), "/%d", PX_HOLD_RULES_MAX);
    assert_true(px_hold_allowed(t, &scope_a, "GET", "api.test", path));
    px_hold_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_hold_dedup_table), cmocka_unit_test(test_px_hold_bounds),
        cmocka_unit_test(test_px_hold_expiry),      cmocka_unit_test(test_px_hold_rules_and_events),
        cmocka_unit_test(test_px_hold_rules_cap),   cmocka_unit_test(test_px_hold_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
